"""`coursekit gradescope-autograder OUT`: a ready Gradescope autograder, and what it runs for each submission.

    coursekit gradescope-autograder autograder/ [--solutions solutions] [--timeout 600] [--memory 4]
                                   [--hidden-visibility after_published] [--requirements requirements.txt]
                                   [--no-wheels]
    (cd autograder && zip -r ../autograder.zip .)    # then upload autograder.zip to the Gradescope assignment

The folder follows Gradescope's autograder specification (https://gradescope-autograders.readthedocs.io/en/latest/
specs/): `setup.sh` (run once, as root, when Gradescope builds the image: bubblewrap, a virtual environment, the
course's packages as wheels built here, and `requirements.txt` if given) and `run_autograder` (run once per
submission: grades `/autograder/submission` into `/autograder/results/results.json`). `course/` holds the course's
settings (`[tool.coursekit]`) and its solution notebooks, the instructor's checks; the learner's notebook never
sees them (they stay outside the sandbox, and Gradescope never shows the source to students).

Gradescope's containers may refuse the namespaces bubblewrap needs. Then the run says so and grades without the
sandbox, isolated by what Gradescope gives every submission: a fresh container of its own, discarded afterwards.
`results.json` says which of the two isolated the run (its `output`), and the instructor's stdout says what that
means (docs/grading.md, "Gradescope").
"""

import argparse
import json
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

from coursekit import course, exercises
from coursekit.files import write_text_atomically
from coursekit.grading import formats, needs, sandbox
from coursekit.grading.grader import GradingInputError, grade
from coursekit.grading.plan import find_notebooks

ROOT_VARIABLE = "COURSEKIT_AUTOGRADER_ROOT"  # /autograder, or a folder standing in for it (tests)
PYTHON_VARIABLE = "COURSEKIT_AUTOGRADER_PYTHON"  # the venv's Python that setup.sh made, or another (tests)
CONTAINER_ISOLATION = (
    "The bubblewrap sandbox could not start in this grading container ({reason}). What isolated this run instead: "
    "Gradescope grades each submission in a fresh container of its own, discarded afterwards, so this notebook could "
    "reach no other submission and no other student's grade; inside the container it ran without the sandbox.")
CONTAINER_WARNING = (
    "warning: graded WITHOUT the sandbox (this container gives bubblewrap no namespaces): the notebook ran as the "
    "container's user beside the grader and could have changed this submission's own results; other submissions "
    "are out of its reach (one container per submission). To grade sandboxed, regrade on a machine where "
    "`coursekit grade` runs sandboxed (docs/grading.md, \"Gradescope\").")

SETUP = """#!/usr/bin/env bash
# Gradescope runs this once, as root, when it builds the autograder's image (written by coursekit).
set -euo pipefail
ROOT="${{{root_variable}:-/autograder}}"
apt-get install -y --no-install-recommends bubblewrap util-linux python3 python3-venv
python3 -m venv "$ROOT/venv"
"$ROOT/venv/bin/pip" install --upgrade pip
if compgen -G "$ROOT/source/wheels/*.whl" > /dev/null; then
    "$ROOT/venv/bin/pip" install "$ROOT"/source/wheels/*.whl
fi
if [ -f "$ROOT/source/requirements.txt" ]; then
    "$ROOT/venv/bin/pip" install -r "$ROOT/source/requirements.txt"
fi
# what the solution notebooks need (coursekit's needs.py: modules they import, data they read)
export PATH="$ROOT/venv/bin:$PATH"
{needs}
"""

RUN = """#!/usr/bin/env bash
# Gradescope runs this once per submission (written by coursekit): the sandboxed grader on $ROOT/submission,
# results in $ROOT/results/results.json.
set -euo pipefail
ROOT="${{{root_variable}:-/autograder}}"
PYTHON="${{{python_variable}:-$ROOT/venv/bin/python}}"
export COURSEKIT_ROOT="$ROOT/source/course"
cd "$ROOT"
exec "$PYTHON" -m coursekit.grading.autograder "$ROOT" {arguments}
"""


def add_arguments(parser):
    parser.add_argument("folder", type=Path, metavar="OUT", help="the autograder folder to write (must not exist)")
    parser.add_argument("--solutions", type=Path, default=None,
                        help="folder of solution notebooks (default: solutions/ of the repository)")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds one notebook may run (default 600)")
    parser.add_argument("--memory", type=float, default=sandbox.Limits.memory_bytes / 2**30,
                        help="GB of memory one notebook may use")
    parser.add_argument("--hidden-visibility", choices=formats.GRADESCOPE_VISIBILITIES, default="after_published",
                        help="when a learner sees an exercise whose check has hidden tests (default after_published)")
    parser.add_argument("--requirements", type=Path, default=None,
                        help="a pip requirements file setup.sh installs besides the course's packages")
    parser.add_argument("--no-wheels", dest="wheels", action="store_false",
                        help="do not build the course's packages into wheels/ (then --requirements must install them)")


def run(args):
    try:
        write_autograder(args.folder, solutions_dir=args.solutions, timeout=args.timeout, memory=args.memory,
                         hidden_visibility=args.hidden_visibility, requirements=args.requirements, wheels=args.wheels)
    except (GradingInputError, course.CourseNotFound) as error:
        print(f"error: {error}")
        return 2
    print(f"wrote the Gradescope autograder {args.folder}; upload its contents as a zip: "
          f"(cd {args.folder} && zip -r ../autograder.zip .)")
    if args.requirements is None:
        print("note: its setup.sh installs the course's packages, the modules the solution notebooks import and the "
              "data they read; a Keras backend, or anything else they reach only indirectly, goes in a requirements "
              "file given with --requirements")
    return 0


def write_autograder(folder, solutions_dir=None, timeout=600.0, memory=4.0, hidden_visibility="after_published",
                     requirements=None, wheels=True):
    """Writes the autograder folder (see the module's docstring); GradingInputError names what is wrong first."""
    folder = Path(folder)
    current = course.current()
    solutions_dir = Path(solutions_dir or current.solutions)
    try:
        solutions = exercises.solution_notebooks(solutions_dir)
    except FileNotFoundError as error:
        raise GradingInputError(str(error)) from error
    if folder.exists():
        raise GradingInputError(f"{folder} exists; give a new folder (an autograder is never written over another)")
    if requirements is not None and not Path(requirements).is_file():
        raise GradingInputError(f"--requirements {requirements}: no such file")
    if timeout <= 0 or memory <= 0:
        raise GradingInputError(f"--timeout and --memory must be > 0, got {timeout} and {memory}")
    building = Path(tempfile.mkdtemp(prefix=f".{folder.name}-", dir=folder.resolve().parent))
    building.chmod(0o755)
    try:
        (building / "course" / "solutions").mkdir(parents=True)
        write_text_atomically(building / "course" / "pyproject.toml", course_table(current))
        for path in solutions:
            shutil.copy2(path, building / "course" / "solutions" / path.name)
        if requirements is not None:
            shutil.copy2(requirements, building / "requirements.txt")
        if wheels:
            build_wheels(distribution_folders(current), building / "wheels")
        arguments = f"--timeout {timeout:g} --memory {memory:g} --hidden-visibility {hidden_visibility}"
        names = {"root_variable": ROOT_VARIABLE, "python_variable": PYTHON_VARIABLE}
        _write_script(building / "setup.sh", SETUP.format(**names, needs="\n".join(setup_commands(solutions))))
        _write_script(building / "run_autograder", RUN.format(**names, arguments=arguments))
        building.rename(folder)
    except BaseException:
        shutil.rmtree(building, ignore_errors=True)
        raise
    return folder


def course_table(current):
    """The course's [tool.coursekit] table, with its solutions at course/solutions/ of the autograder."""
    lines = ["[tool.coursekit]", 'solutions = "solutions"',
             f"kernel_packages = {json.dumps(list(current.kernel_packages))}"]
    for key in ("hooks", "fast_variable", "language_variable", "metadata_key"):
        lines.append(f"{key} = {json.dumps(getattr(current, key))}")
    return "\n".join(lines) + "\n"


def setup_commands(solutions):
    """The commands that fetch what the solution notebooks need (needs.py): each third-party module they import that
    is not one of the course's packages, and each dataset or checkpoint they read."""
    packages = {"coursekit", *course.kernel_packages()}
    commands = []
    for path in solutions:
        found, _ = needs.notebook_needs(exercises.read_notebook(path))
        commands += [need.command for need in found if need.kind != "module"
                     or (need.name not in sys.stdlib_module_names and need.name not in packages)]
    return list(dict.fromkeys(commands))


def distribution_folders(current):
    """{folder with a pyproject.toml: [package names]}: the distributions that hold the kit and the course's kernel
    packages, which setup.sh installs."""
    folders = {}
    for name in dict.fromkeys(["coursekit", *current.kernel_packages]):
        package = course.package_folder(name)
        folder = next((parent for parent in package.parents if (parent / "pyproject.toml").is_file()), None)
        if folder is None:
            raise GradingInputError(f"the package {name} ({package}) is in no folder with a pyproject.toml: install "
                                    f"it from --requirements and pass --no-wheels")
        folders.setdefault(folder, []).append(package)
    return folders


def build_wheels(folders, wheel_dir):
    """`pip wheel --no-deps` of each distribution into `wheel_dir` (their dependencies come from PyPI when Gradescope
    builds the image). Each is built from a copy of its folder's files and its packages, so that the build leaves
    nothing (build/, egg-info) in the course's tree."""
    for folder, packages in folders.items():
        with tempfile.TemporaryDirectory(prefix="coursekit-wheel-") as staging:
            for path in Path(folder).iterdir():
                if path.is_file():
                    shutil.copy2(path, staging)
            for package in packages:
                shutil.copytree(package, Path(staging) / package.relative_to(folder),
                                ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
            completed = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
                                        "--wheel-dir", str(wheel_dir), staging], capture_output=True, text=True,
                                       check=False)
        if completed.returncode != 0:
            raise GradingInputError(f"could not build a wheel of {folder}: {completed.stderr.strip()[-500:]}")


def _write_script(path, text):
    write_text_atomically(path, text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)


# ------------------------------------------------------------------------------------- in Gradescope's container

def grade_in_container(root, timeout=600.0, memory=4.0, hidden_visibility="after_published"):
    """Grades `root`/submission into `root`/results/results.json: sandboxed where the container allows it, else
    without the sandbox and saying so. Returns the exit code (0 also for a submission that scores nothing)."""
    root = Path(root)
    out = root / "results" / "results.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    submission = root / "submission"
    if not submission.is_dir() or not find_notebooks([submission]):
        expected = ", ".join(path.name for path in exercises.solution_notebooks(course.current().solutions))
        return _refuse(out, f"no .ipynb notebook in the submission: upload your exercise notebook ({expected})")
    unsafe, isolation = False, ""
    try:  # what grade() probes: a sandbox that shows the kernel the Python environment and the course's data
        sandbox.probe(sandbox.exposed_paths(hidden=[course.current().solutions, out.parent, submission]))
    except sandbox.SandboxUnavailable as error:
        unsafe, isolation = True, CONTAINER_ISOLATION.format(reason=re.split(r": | \(", str(error))[0])
        print(CONTAINER_WARNING)
    report = formats.ReportFormat("gradescope", hidden_visibility=hidden_visibility, isolation=isolation)
    try:
        grades = grade([submission], out, timeout=timeout, unsafe=unsafe,
                       limits=sandbox.Limits(memory_bytes=int(memory * 2**30)), report=report)
    except (GradingInputError, course.CourseNotFound) as error:
        print(f"error: {error}")
        _refuse(out, "the autograder could not grade this submission (the instructor can read why in its output)")
        return 1
    for row in grades:
        print(f"{row['notebook']}\t{row['exercise']}\t{row['score']}/{row['max_score']}\t{row['status']}")
    print(f"total {sum(row.score for row in grades)} of {sum(row.max_score for row in grades)}")
    return 1 if grades.grader_faults or grades.overlaps else 0


def _refuse(out, message):
    """results.json with no score and `message`, which the learner reads on Gradescope."""
    print(message)
    write_text_atomically(out, json.dumps({"score": 0, "output": message, "tests": []}, ensure_ascii=False) + "\n")
    return 0


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m coursekit.grading.autograder")
    parser.add_argument("root", type=Path, help="/autograder, or a folder standing in for it")
    parser.add_argument("--timeout", type=float, default=600.0)
    parser.add_argument("--memory", type=float, default=sandbox.Limits.memory_bytes / 2**30)
    parser.add_argument("--hidden-visibility", choices=formats.GRADESCOPE_VISIBILITIES, default="after_published")
    args = parser.parse_args(argv)
    return grade_in_container(args.root, args.timeout, args.memory, args.hidden_visibility)


if __name__ == "__main__":
    os.environ.setdefault("MPLBACKEND", "Agg")
    sys.exit(main())
