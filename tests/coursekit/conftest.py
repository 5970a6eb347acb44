"""The kit's tests run on a course of their own, toycourse/ (its pyproject.toml's [tool.coursekit] table and its
`toycourse` package of check helpers and hooks), never on the BERT course's runtime (issue 55).

A test selects it as any user of the kit selects a course, through `COURSEKIT_ROOT`; its package is importable in
the test's process, the grader's runners and (through `kernel_packages`) the grading kernels. The course is a copy
in a temporary folder: a grading kernel must not see tests/ (test_grading_sandbox checks it cannot), and an attack
that rewrites the checks module (test_grading_sandbox again) must not touch the repository even if it worked.
"""

import contextlib
import json
import os
import shutil
from pathlib import Path

import pytest

from coursekit import course
from tools.repo_paths import REPO_ROOT

TOYCOURSE = Path(__file__).resolve().parent / "toycourse"


@pytest.fixture(scope="session")
def toy_course_root(tmp_path_factory):
    root = tmp_path_factory.mktemp("toycourse")
    shutil.copytree(TOYCOURSE, root, dirs_exist_ok=True, ignore=shutil.ignore_patterns("__pycache__"))
    root.chmod(0o755)
    return root


@contextlib.contextmanager
def selected(root):
    """Inside the block the toy course at `root` is the kit's course, here and in the processes started here."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("COURSEKIT_ROOT", str(root))
        patch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(root), os.environ.get("PYTHONPATH")])))
        patch.syspath_prepend(str(root))
        yield root


@pytest.fixture()
def toy_course(toy_course_root):
    """The toy course for one test (in a file whose other tests read the repository's own course)."""
    with selected(toy_course_root):
        yield toy_course_root


@pytest.fixture(scope="module")
def toy_course_module(toy_course_root):
    """The toy course for a whole test file, its module-scoped fixtures included (request it from them)."""
    with selected(toy_course_root):
        yield toy_course_root


@pytest.fixture()
def chapters_course(monkeypatch):
    """A function that makes `root`, a folder of copies of the repository's real chapters (the i18n tests' data),
    a course of its own, selected through COURSEKIT_ROOT: the repository's [tool.coursekit] settings (its folders and
    its metadata key, which the chapters carry) without its hooks and kernel packages, the course's runtime."""

    def make(root):
        table = course._table(REPO_ROOT / "pyproject.toml")
        lines = [f"{key} = {json.dumps(value)}" for key, value in table.items() if key not in ("hooks", "kernel_packages")]
        (root / "pyproject.toml").write_text("\n".join(["[tool.coursekit]", *lines]) + "\n", encoding="utf-8")
        monkeypatch.setenv("COURSEKIT_ROOT", str(root))
        return root

    return make
