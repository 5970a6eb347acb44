"""Exercise notebooks generated from solution notebooks: `bertlib exercises build` and `bertlib exercises check`.

Only `solutions/NN_<topic>.ipynb` is edited by hand; `exercises/NN_<topic>.ipynb` is written from it by
`bertlib exercises build`, and `bertlib exercises check` (run in CI) fails when `exercises/` differs from what
the build would write.

The convention a solution notebook follows (docs/grading.md shows a complete example):

- An exercise is one or more code cells whose metadata holds
  `"bertlib": {"exercise": "3.2", "role": "solution"}` followed by one or more code cells with
  `"bertlib": {"exercise": "3.2", "role": "check"}`. The id is `<chapter>.<number>`, the chapter being the
  notebook's `NN`. `"points": 2` may be given on one cell of the exercise (default 1).
- A solution cell holds one or more regions of whole statements between a `### BEGIN SOLUTION` line and a
  `### END SOLUTION` line. In `exercises/` each region becomes, at the indentation of its BEGIN line,
  `# YOUR CODE HERE` and `raise NotImplementedError("Exercise 3.2: write your code here")`.
- A check cell calls `bertlib.checks` helpers and ends with `done("3.2")`.
- No cell outside an exercise may use a name defined in a solution region: in `exercises/` it would fail.

In `exercises/`, solution and check cells carry nbval's `raises-exception` tag (the stub raises, and the check
then meets missing code), outputs and execution counts are cleared, and metadata is reduced to what the course
uses, so the file is a pure function of the solution notebook.
"""

import difflib
import json
import re
from pathlib import Path

import nbformat

from bertlib import resources
from bertlib.files import write_text_atomically

BEGIN_MARKER = "### BEGIN SOLUTION"
END_MARKER = "### END SOLUTION"
RAISES_TAG = "raises-exception"
ROLES = ("solution", "check")
NOTEBOOK_NAME = re.compile(r"^(\d\d)_[A-Za-z0-9_\-]+\.ipynb$")
# What an exercise notebook keeps of the solution's metadata; the rest is editor state (scroll, timings, widgets).
KEPT_NOTEBOOK_METADATA = ("kernelspec", "language_info")
KEPT_CELL_METADATA = ("bertlib", "tags")


class ExerciseFormatError(ValueError):
    """A solution notebook that breaks the exercise convention; the message names the file, cell and rule."""


def exercise_cells(nb, source_name="notebook"):
    """Returns `{exercise_id: {"points": int, "solution": [cell index, ...], "check": [cell index, ...]}}`.

    Exercises are listed in notebook order. Raises `ExerciseFormatError` when a cell's `bertlib` metadata is
    malformed (unknown role, missing id, points that disagree).
    """
    exercises = {}
    for index, cell in enumerate(nb.cells):
        info = cell.get("metadata", {}).get("bertlib")
        if info is None:
            continue
        where = f"{source_name}, cell {index}"
        if cell.cell_type != "code":
            raise ExerciseFormatError(f"{where}: `bertlib` exercise metadata belongs on code cells, "
                                      f"not {cell.cell_type} cells")
        exercise_id, role = info.get("exercise"), info.get("role")
        if not isinstance(exercise_id, str) or not exercise_id:
            raise ExerciseFormatError(f"{where}: metadata bertlib.exercise must be a string like \"3.2\", "
                                      f"got {exercise_id!r}")
        if role not in ROLES:
            raise ExerciseFormatError(f"{where}: metadata bertlib.role must be one of {ROLES}, got {role!r}")
        entry = exercises.setdefault(exercise_id, {"points": None, "solution": [], "check": []})
        entry[role].append(index)
        if "points" in info:
            points = info["points"]
            if not isinstance(points, int) or isinstance(points, bool) or points < 0:
                raise ExerciseFormatError(f"{where}: bertlib.points must be a non-negative integer, got {points!r}")
            if entry["points"] not in (None, points):
                raise ExerciseFormatError(f"{where}: exercise {exercise_id} is given {points} points here but "
                                          f"{entry['points']} on an earlier cell")
            entry["points"] = points
    for entry in exercises.values():
        entry["points"] = 1 if entry["points"] is None else entry["points"]
    return exercises


def validate_solution_notebook(nb, path):
    """Raises `ExerciseFormatError` unless `nb` (read from `path`) follows the convention of this module."""
    path = Path(path)
    match = NOTEBOOK_NAME.match(path.name)
    if not match:
        raise ExerciseFormatError(f"{path}: solution notebooks are named NN_<topic>.ipynb (e.g. 03_attention.ipynb)")
    chapter = int(match.group(1))
    exercises = exercise_cells(nb, str(path))
    if not exercises:
        raise ExerciseFormatError(f"{path}: no exercise cells (code cells with metadata "
                                  f"{{\"bertlib\": {{\"exercise\": \"{chapter}.1\", \"role\": \"solution\"}}}})")
    for exercise_id, entry in exercises.items():
        if not re.fullmatch(rf"{chapter}\.\d+", exercise_id):
            raise ExerciseFormatError(f"{path}: exercise id {exercise_id!r} should be \"{chapter}.<number>\", "
                                      f"the chapter number of {path.name} then the exercise number")
        if not entry["solution"] or not entry["check"]:
            missing = "solution" if not entry["solution"] else "check"
            raise ExerciseFormatError(f"{path}: exercise {exercise_id} has no {missing} cell; each exercise needs "
                                      f"solution cell(s) followed by check cell(s)")
        if min(entry["check"]) < min(entry["solution"]):
            raise ExerciseFormatError(f"{path}: exercise {exercise_id} has a check cell (cell {min(entry['check'])})"
                                      f" before its first solution cell (cell {min(entry['solution'])})")
    roles = {index: role for entry in exercises.values() for role in ROLES for index in entry[role]}
    for index, cell in enumerate(nb.cells):
        has_region = cell.cell_type == "code" and BEGIN_MARKER in cell.source
        if roles.get(index) == "solution" and not has_region:
            raise ExerciseFormatError(f"{path}, cell {index}: a solution cell needs a {BEGIN_MARKER} / "
                                      f"{END_MARKER} region, or learners would see the answer")
        if has_region and roles.get(index) != "solution":
            raise ExerciseFormatError(f"{path}, cell {index}: {BEGIN_MARKER} in a cell without "
                                      f"{{\"bertlib\": {{\"role\": \"solution\", ...}}}} metadata")


def stub_solution_regions(source, exercise_id, where="cell"):
    """Replaces each BEGIN/END SOLUTION region of `source` by a stub raising NotImplementedError.

    Example:
        >>> print(stub_solution_regions("def f(x):\\n    ### BEGIN SOLUTION\\n    return x\\n    ### END SOLUTION",
        ...                             "3.2"))
        def f(x):
            # YOUR CODE HERE
            raise NotImplementedError("Exercise 3.2: write your code here")
    """
    output, region_start = [], None
    for line_number, line in enumerate(source.split("\n"), start=1):
        marker = line.strip()
        if marker == BEGIN_MARKER:
            if region_start is not None:
                raise ExerciseFormatError(f"{where}, line {line_number}: {BEGIN_MARKER} inside the region opened "
                                          f"on line {region_start}; close it with {END_MARKER} first")
            region_start = line_number
            indent = line[: len(line) - len(line.lstrip())]
            output += [f"{indent}# YOUR CODE HERE",
                       f'{indent}raise NotImplementedError("Exercise {exercise_id}: write your code here")']
        elif marker == END_MARKER:
            if region_start is None:
                raise ExerciseFormatError(f"{where}, line {line_number}: {END_MARKER} without a {BEGIN_MARKER}")
            region_start = None
        elif region_start is None:
            output.append(line)
    if region_start is not None:
        raise ExerciseFormatError(f"{where}, line {region_start}: {BEGIN_MARKER} is never closed by {END_MARKER}")
    return "\n".join(output)


def strip_outputs(nb):
    """Clears outputs and execution counts of every code cell, in place; returns `nb`."""
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs = []
            cell.execution_count = None
    return nb


def build_exercise_notebook(nb, source_name="notebook"):
    """Returns the exercise notebook for a solution notebook (a new object; `nb` is not changed).

    Solution regions become stubs, solution and check cells get the `raises-exception` tag, outputs are
    cleared and metadata is reduced to `kernelspec`, `language_info` (notebook) and `bertlib`, `tags` (cells).
    """
    exercise = nbformat.from_dict(nbformat.v4.new_notebook())
    exercise.nbformat, exercise.nbformat_minor = nb.nbformat, nb.nbformat_minor
    exercise.metadata = {key: nb.metadata[key] for key in KEPT_NOTEBOOK_METADATA if key in nb.metadata}
    for index, cell in enumerate(nb.cells):
        new_cell = nbformat.from_dict(dict(cell))
        new_cell.metadata = {key: cell.metadata[key] for key in KEPT_CELL_METADATA if key in cell.metadata}
        info = new_cell.metadata.get("bertlib")
        if info is not None:
            if info.get("role") == "solution":
                new_cell.source = stub_solution_regions(cell.source, info.get("exercise"),
                                                        f"{source_name}, cell {index}")
            tags = list(new_cell.metadata.get("tags", []))
            new_cell.metadata["tags"] = tags + [RAISES_TAG] if RAISES_TAG not in tags else tags
        exercise.cells.append(new_cell)
    return strip_outputs(exercise)


def notebook_text(nb):
    """The exact text written for `nb`: nbformat's JSON (sorted keys, indent 1) with a final newline."""
    text = nbformat.writes(nb)
    return text if text.endswith("\n") else text + "\n"



def solution_notebooks(solutions_dir):
    """The `*.ipynb` files of `solutions_dir`, sorted; raises FileNotFoundError when the folder does not exist."""
    solutions_dir = Path(solutions_dir)
    if not solutions_dir.is_dir():
        raise FileNotFoundError(f"the solutions folder {solutions_dir} does not exist (pass --solutions DIR)")
    return sorted(solutions_dir.glob("*.ipynb"))


def expected_exercises(solutions_dir):
    """`{file name: text}` of every exercise notebook `build` writes for `solutions_dir` (validated)."""
    expected = {}
    for path in solution_notebooks(solutions_dir):
        nb = read_notebook(path)
        validate_solution_notebook(nb, path)
        expected[path.name] = notebook_text(build_exercise_notebook(nb, str(path)))
    return expected


def read_notebook(path):
    """Reads a notebook as nbformat 4; a file that is not a notebook raises ExerciseFormatError naming it.

    Cells of an nbformat 4.5 notebook that lack an id get `cell-<index>`: nbformat would invent random ids,
    and the build must write the same bytes every time.
    """
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        if data.get("nbformat") == 4 and data.get("nbformat_minor", 0) >= 5:
            for index, cell in enumerate(data.get("cells", [])):
                cell.setdefault("id", f"cell-{index}")
        return nbformat.reads(json.dumps(data), as_version=4)
    except Exception as error:
        raise ExerciseFormatError(f"{path}: not a readable notebook ({type(error).__name__}: {error})") from error


def build(solutions_dir, exercises_dir):
    """Writes `exercises_dir/NN_<topic>.ipynb` for each solution notebook and removes stale exercise notebooks.

    Returns the list of paths written or removed.
    """
    exercises_dir = Path(exercises_dir)
    expected = expected_exercises(solutions_dir)
    changed = []
    for name, text in expected.items():
        path = exercises_dir / name
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            write_text_atomically(path, text)
            changed.append(path)
    for path in sorted(exercises_dir.glob("*.ipynb")):
        if path.name not in expected:
            path.unlink()
            changed.append(path)
    return changed


def differences(solutions_dir, exercises_dir):
    """Returns one line per exercise notebook that differs from what `build` would write (empty when in sync)."""
    exercises_dir = Path(exercises_dir)
    expected = expected_exercises(solutions_dir)
    problems = []
    for name, text in expected.items():
        path = exercises_dir / name
        if not path.exists():
            problems.append(f"{path}: missing")
            continue
        actual = path.read_text(encoding="utf-8")
        if actual != text:
            diff = difflib.unified_diff(actual.splitlines(), text.splitlines(), lineterm="", n=0)
            changed_lines = [line for line in diff if line[:1] in "+-" and line[:3] not in ("+++", "---")]
            problems.append(f"{path}: differs from the build ({len(changed_lines)} changed lines, first: "
                            f"{changed_lines[0].strip()[:100] if changed_lines else 'whitespace'})")
    for path in sorted(exercises_dir.glob("*.ipynb")) if exercises_dir.is_dir() else []:
        if path.name not in expected:
            problems.append(f"{path}: extra (no {path.name} in {solutions_dir})")
    return problems


def add_arguments(parser):
    parser.add_argument("action", choices=("build", "check"),
                        help="build: write exercises/ from solutions/; check: fail when exercises/ is out of date")
    parser.add_argument("--solutions", type=Path, default=resources.REPO_ROOT / "solutions",
                        help="folder of solution notebooks (default: solutions/ of the repository)")
    parser.add_argument("--exercises", type=Path, default=resources.REPO_ROOT / "exercises",
                        help="folder of generated exercise notebooks (default: exercises/ of the repository)")


def run(args):
    try:
        if args.action == "build":
            changed = build(args.solutions, args.exercises)
            for path in changed:
                print(f"{'wrote' if path.exists() else 'removed'} {path}")
            print(f"exercises in {args.exercises} are up to date ({len(changed)} files changed)")
            return 0
        problems = differences(args.solutions, args.exercises)
    except (ExerciseFormatError, FileNotFoundError) as error:
        print(f"error: {error}")
        return 2
    for problem in problems:
        print(problem)
    if problems:
        print(f"{len(problems)} exercise notebooks are out of date: run `bertlib exercises build` "
              f"(edit solutions/, never exercises/)")
        return 1
    print(f"exercises in {args.exercises} match the {len(list(args.solutions.glob('*.ipynb')))} notebooks of "
          f"{args.solutions}")
    return 0
