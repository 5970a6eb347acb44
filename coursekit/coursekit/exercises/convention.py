"""The convention a solution notebook follows, and the error that names a breach of it.

Exercise cells carry `{"<metadata_key>": {"exercise": "3.2", "role": "solution" | "check"}}` (`exercise_cells`
reads them, `points` included), solution cells hold `### BEGIN SOLUTION` / `### END SOLUTION` regions and check
cells may hold nbgrader's hidden tests; `validate_solution_notebook` refuses a notebook that breaks a rule
(`ExerciseFormatError`, naming the file, cell and rule). `notebook_ids` is what the grader matches a submission
by, and `solution_notebooks` lists a folder's solution notebooks.
"""

import re
from pathlib import Path

from coursekit import course

BEGIN_MARKER = "### BEGIN SOLUTION"
END_MARKER = "### END SOLUTION"
# nbgrader's markers for the part of a check cell that only the grader runs (removed from exercises/).
BEGIN_HIDDEN = "### BEGIN HIDDEN TESTS"
END_HIDDEN = "### END HIDDEN TESTS"
ROLES = ("solution", "check")
NOTEBOOK_NAME = re.compile(r"^(\d\d)_[A-Za-z0-9_\-]+\.ipynb$")


class ExerciseFormatError(ValueError):
    """A solution notebook that breaks the exercise convention; the message names the file, cell and rule."""


def exercise_cells(nb, source_name="notebook"):
    """Returns `{exercise_id: {"points": int, "solution": [cell index, ...], "check": [cell index, ...]}}`.

    Exercises are listed in notebook order. Raises `ExerciseFormatError` when a cell's exercise metadata (under the
    course's `metadata_key`) is malformed (unknown role, missing id, points that disagree).
    """
    key = course.setting("metadata_key")
    exercises = {}
    for index, cell in enumerate(nb.cells):
        info = cell.get("metadata", {}).get(key)
        if info is None:
            continue
        where = f"{source_name}, cell {index}"
        if not isinstance(info, dict):
            raise ExerciseFormatError(f"{where}: metadata {key} must be an object like {{\"exercise\": \"3.2\", "
                                      f"\"role\": \"solution\"}}, got {info!r:.60}")
        if cell.cell_type != "code":
            raise ExerciseFormatError(f"{where}: `{key}` exercise metadata belongs on code cells, "
                                      f"not {cell.cell_type} cells")
        exercise_id, role = info.get("exercise"), info.get("role")
        if not isinstance(exercise_id, str) or not exercise_id:
            raise ExerciseFormatError(f"{where}: metadata {key}.exercise must be a string like \"3.2\", "
                                      f"got {exercise_id!r}")
        if role not in ROLES:
            raise ExerciseFormatError(f"{where}: metadata {key}.role must be one of {ROLES}, got {role!r}")
        entry = exercises.setdefault(exercise_id, {"points": None, "solution": [], "check": []})
        entry[role].append(index)
        if "points" in info:
            points = info["points"]
            if not isinstance(points, int) or isinstance(points, bool) or points < 0:
                raise ExerciseFormatError(f"{where}: {key}.points must be a non-negative integer, got {points!r}")
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
                                  f"{{\"{course.setting('metadata_key')}\": {{\"exercise\": \"{chapter}.1\", "
                                  f"\"role\": \"solution\"}}}})")
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
                                      f"{{\"{course.setting('metadata_key')}\": {{\"role\": \"solution\", ...}}}} "
                                      f"metadata")


def notebook_ids(nb, source_name="notebook"):
    """`{"chapter": "03", "exercises": ["3.1", ...]}`: what the grader reads to match a submission to its solution.

    The chapter comes from the file name `NN_<topic>.ipynb` when it has one, else from the exercise ids.
    """
    ids = list(exercise_cells(nb, source_name))
    match = NOTEBOOK_NAME.match(Path(source_name).name)
    chapter = match.group(1) if match else (f"{int(ids[0].split('.')[0]):02d}" if ids else None)
    return {"chapter": chapter, "exercises": ids}


def solution_notebooks(solutions_dir):
    """The `*.ipynb` files of `solutions_dir`, sorted.

    Raises FileNotFoundError when the folder does not exist or holds no notebook (a check against nothing is no
    check).
    """
    solutions_dir = Path(solutions_dir)
    if not solutions_dir.is_dir():
        raise FileNotFoundError(f"the solutions folder {solutions_dir} does not exist (pass --solutions DIR)")
    notebooks = sorted(solutions_dir.glob("*.ipynb"))
    if not notebooks:
        raise FileNotFoundError(f"the solutions folder {solutions_dir} holds no .ipynb notebook (pass --solutions "
                                f"DIR, the folder of NN_<topic>.ipynb solution notebooks)")
    return notebooks
