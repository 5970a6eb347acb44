"""The kit's tests need nothing of the BERT course (issue 55): in a fresh interpreter where `import bertlib_course`
fails, every test file of tests/coursekit is collected (their imports, conftest.py's toy course) and the tests that
run the toy notebooks' check cells in that interpreter pass (`exercises test` runs them in-process, so a toy cell
that imported the course would fail there).

The slow tests that grade in kernels are not run here (minutes); run the whole folder so, as this docstring's
command does, to check them:

    PYTHONPATH=<a folder holding bertlib_course/__init__.py that raises ImportError> \
        python -m pytest -o "pythonpath=. coursekit" tests/coursekit
"""

import os
import re
import subprocess
import sys

from tools.repo_paths import REPO_ROOT

# Checks that the course is hidden in the interpreter that runs the tests, then runs them.
RUN_WITHOUT_THE_COURSE = """
import sys

import pytest

try:
    import bertlib_course
except ImportError as error:
    print("hidden:", error)
else:
    sys.exit(f"bertlib_course is importable here: {bertlib_course.__file__}")
sys.exit(pytest.main(sys.argv[1:]))
"""
SELECTED = ("mutation_test_reports or exercise_notebook_has_stubs or invalid_solution_notebooks or build_then_check "
            "or marked_check_sees or failed_stub_in_the_kernel or chinese_submission_runs_the_same_cells")


def test_the_kits_tests_run_where_the_course_cannot_be_imported(tmp_path):
    hidden = tmp_path / "bertlib_course"
    hidden.mkdir()
    (hidden / "__init__.py").write_text('raise ImportError("the course is hidden from the kit\'s tests")\n')
    environment = {key: value for key, value in os.environ.items()
                   if not key.startswith(("PYTEST_", "COURSEKIT_")) and key != "PYTHONPATH"}
    completed = subprocess.run(
        [sys.executable, "-c", RUN_WITHOUT_THE_COURSE, "-q", "-p", "no:cacheprovider", "-o", "pythonpath=. coursekit",
         "-m", "not slow", "-k", SELECTED, "tests/coursekit"],
        cwd=REPO_ROOT, env={**environment, "PYTHONPATH": str(tmp_path)}, capture_output=True, text=True, timeout=300,
        check=False)
    said = completed.stdout + completed.stderr
    assert completed.returncode == 0, said[-3000:]
    assert "hidden: the course is hidden from the kit's tests" in said
    passed = re.search(r"(\d+) passed, (\d+) deselected", said)
    assert passed and int(passed[1]) >= 14 and int(passed[2]) > 200, said[-3000:]
    assert "error" not in said.splitlines()[-1], said[-3000:]
