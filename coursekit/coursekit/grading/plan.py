"""The plan of a grading run: which notebooks, which solution each is graded against, and the steps of each run.

A submission (a `.ipynb`, or a folder searched recursively) is matched to its solution notebook by the chapter id in
its metadata (`"bertlib": {"chapter": "03", ...}`, the key being the course's `metadata_key`, written by `coursekit
exercises build`), else by its file name (same name, else the same `NN_` prefix), else by the exercise ids of its
cells. Whatever the grader reads of a submission is bounded (`MAX_NOTEBOOK_BYTES`) and checked: a link, a folder, a
FIFO, broken JSON or odd metadata (`"chapter": "²"`) becomes a problem of that submission, never an error of the run.

The steps of a notebook's run are its code cells in order, without its own check cells ("learner" steps, run in the
sandboxed kernel), and after the last solution cell of each exercise the instructor's check cells of that exercise
from the solution notebook ("check" steps, run by the checker outside the kernel). The checker's context is the
solution notebook's own code: its ordinary cells whole, and its solution cells without their solution regions;
the names those regions bind are the learner's, which the checker reads from the kernel (see checker.py).
"""

import ast
import json
import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

from coursekit import course, exercises
from coursekit.i18n.catalogues import languages

MAX_NOTEBOOK_BYTES = 50 * 2**20


class SubmissionError(ValueError):
    """A submission the grader cannot read; the message says why and what to do."""


@dataclass
class Submission:
    """One submitted notebook, the solution it is graded against, how that was decided, and what was wrong with it."""

    path: Path
    solution: Path = None
    how: str = ""
    note: str = ""
    notebook: object = None  # the notebook as read, or None
    problem: str = ""  # why it could not be read


@dataclass(frozen=True)
class Step:
    """One step of a notebook's run: a code cell of the submission ("learner"), or an instructor's check ("check")."""

    kind: str
    source: str
    name: str  # how a learner finds it: "cell 8", "the check of exercise 3.2"
    solution_index: int = -1  # a check's cell index in the solution notebook


@dataclass(frozen=True)
class ContextCell:
    """Code of the solution notebook the checker runs before the checks that come after it."""

    index: int  # in the solution notebook
    code: str  # an ordinary cell whole, or a solution cell without its solution regions
    learner_names: tuple = ()  # what the solution regions of this cell bind: the checker reads them from the kernel
    given: bool = False  # part of a solution cell: its failure is the submission's (an ordinary cell's is the grader's)
    may_raise: bool = False  # tagged raises-exception: an error is expected


@dataclass
class Plan:
    """The steps of a run, the step numbers of each exercise (solution cells, then checks), the checker's context."""

    steps: list = field(default_factory=list)
    exercise_steps: dict = field(default_factory=dict)
    context: list = field(default_factory=list)

    @property
    def step_names(self):
        return {number: step.name for number, step in enumerate(self.steps)}


# ------------------------------------------------------------------------------------------------ finding notebooks

def find_notebooks(submissions):
    """The `.ipynb` files named by `submissions` (folders searched recursively, without following links; checkpoints
    skipped), in order. A path that does not exist is kept, so that it gets a row saying so."""
    notebooks = []
    for submission in map(Path, submissions):
        if submission.is_dir() and not submission.is_symlink():
            found = []
            for folder, subfolders, files in os.walk(submission):
                subfolders[:] = sorted(name for name in subfolders if name != ".ipynb_checkpoints")
                found += [Path(folder) / name for name in files if name.endswith(".ipynb")]
            notebooks += sorted(found)
        else:
            notebooks.append(submission)
    return list(dict.fromkeys(notebooks))


def read_submission(path):
    """Reads a submitted notebook, within bounds; raises SubmissionError saying what is wrong with it."""
    path = Path(path)
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        raise SubmissionError(f"no such file: {path}") from None
    except OSError as error:
        raise SubmissionError(f"could not read the notebook: {error.strerror or error}") from None
    if stat.S_ISLNK(info.st_mode):
        raise SubmissionError("could not read the notebook: it is a symbolic link (submit the notebook file itself)")
    if not stat.S_ISREG(info.st_mode):
        raise SubmissionError("could not read the notebook: it is not a regular file")
    if info.st_size > MAX_NOTEBOOK_BYTES:
        raise SubmissionError(f"could not read the notebook: it is {info.st_size / 2**20:.0f} MB, more than the "
                              f"{MAX_NOTEBOOK_BYTES // 2**20} MB the grader reads (clear its outputs, save, and "
                              f"submit again)")
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        with os.fdopen(descriptor, "rb") as file:
            data = file.read(MAX_NOTEBOOK_BYTES + 1)
    except OSError as error:
        raise SubmissionError(f"could not read the notebook: {error.strerror or error}") from None
    if len(data) > MAX_NOTEBOOK_BYTES:
        raise SubmissionError(f"could not read the notebook: it is more than {MAX_NOTEBOOK_BYTES // 2**20} MB")
    try:
        document = json.loads(data.decode("utf-8"))
    except (ValueError, RecursionError) as error:  # JSON and UTF-8 errors
        detail = str(error).splitlines()[0][:300] if str(error) else ""
        raise SubmissionError(f"could not read the notebook: {type(error).__name__}: {detail}") from None
    problem = notebook_shape_problem(document)
    if problem:
        raise SubmissionError(f"could not read the notebook: {problem}")
    if document["nbformat_minor"] >= 5:
        for index, cell in enumerate(document["cells"]):
            cell.setdefault("id", f"cell-{index}")
    try:
        notebook = nbformat.reads(json.dumps(document), as_version=4)
    except Exception as error:  # noqa: BLE001 (whatever nbformat makes of a learner's file is that file's problem)
        detail = str(error).splitlines()[0][:300] if str(error) else ""
        raise SubmissionError(f"could not read the notebook: {type(error).__name__}: {detail}") from None
    try:
        exercises.exercise_cells(notebook, path.name)
    except exercises.ExerciseFormatError as error:
        raise SubmissionError(f"could not read the notebook: {error}") from None
    return notebook


_CELL_TYPES = ("code", "markdown", "raw")


def notebook_shape_problem(document):
    """What is wrong with the JSON of a notebook, in words, or "": every shape the grader relies on, checked in one
    place before nbformat or the grader reads it (a list where an object belongs, a number for a source, ...). A
    missing version (nbformat 4) or metadata is filled in."""
    if not isinstance(document, dict):
        return f"a notebook is a JSON object, this file holds a {_kind(document)}"
    document.setdefault("nbformat", 4)  # a file that leaves out its version is read as the current one
    document.setdefault("nbformat_minor", 0)
    document.setdefault("metadata", {})
    version = document["nbformat"]
    if "worksheets" in document or (type(version) is int and version < 4):
        return (f"it is an nbformat {version if type(version) is int else 3} notebook, an old format: open it in "
                f"Jupyter and save it (which converts it to nbformat 4), then submit it again")
    if type(version) is not int or version != 4:
        return f"\"nbformat\" must be 4, got {_shown(version)} (open the notebook in Jupyter and save it)"
    if type(document.get("nbformat_minor")) is not int or document["nbformat_minor"] < 0:
        return f"\"nbformat_minor\" must be a whole number, got {_shown(document.get('nbformat_minor'))}"
    if not isinstance(document.get("metadata", {}), dict):
        return f"the notebook's metadata must be an object, got a {_kind(document['metadata'])}"
    if not isinstance(document.get("cells"), list):
        return f"\"cells\" must be a list of cells, got {_shown(document.get('cells'))}"
    for number, cell in enumerate(document["cells"], start=1):
        problem = _cell_problem(cell)
        if problem:
            return f"cell {number}: {problem}"
    return ""


def _cell_problem(cell):
    if not isinstance(cell, dict):
        return f"a cell is a JSON object, got a {_kind(cell)}"
    if cell.get("cell_type") not in _CELL_TYPES:
        return f"\"cell_type\" must be one of {', '.join(_CELL_TYPES)}, got {_shown(cell.get('cell_type'))}"
    source = cell.get("source", "")
    if not (isinstance(source, str) or isinstance(source, list) and all(isinstance(line, str) for line in source)):
        return f"\"source\" must be a string or a list of strings, got {_shown(source)}"
    metadata = cell.get("metadata", {})
    if not isinstance(metadata, dict):
        return f"the cell's metadata must be an object, got a {_kind(metadata)}"
    tags = metadata.get("tags", [])
    if not (isinstance(tags, list) and all(isinstance(tag, str) for tag in tags)):
        return f"metadata tags must be a list of strings, got {_shown(tags)}"
    if "id" in cell and not isinstance(cell["id"], str):
        return f"\"id\" must be a string, got {_shown(cell['id'])}"
    if "attachments" in cell and not isinstance(cell["attachments"], dict):
        return f"\"attachments\" must be an object, got {_shown(cell['attachments'])}"
    if cell["cell_type"] == "code":
        if not isinstance(cell.get("outputs", []), list):
            return f"\"outputs\" must be a list, got {_shown(cell['outputs'])}"
        if not all(isinstance(output, dict) for output in cell.get("outputs", [])):
            return "each output must be a JSON object"
        count = cell.get("execution_count")
        if count is not None and type(count) is not int:
            return f"\"execution_count\" must be a number or null, got {_shown(count)}"
    return ""


def _kind(value):
    return {dict: "JSON object", list: "list", str: "string", bool: "boolean", type(None): "null"}.get(
        type(value), "number")


def _shown(value):
    """A learner's value as a message shows it: a short excerpt of a string or number, else its kind."""
    if value is None:
        return "nothing"
    if isinstance(value, (dict, list)):
        return f"a {_kind(value)}"
    text = json.dumps(value, ensure_ascii=False)
    return f"{text[:40]}{'…' if len(text) > 40 else ''} (a {_kind(value)})"


def identify_submissions(paths, solution_paths):
    """A `Submission` per path: its solution notebook, how it was found, and a note for renamed or duplicated files."""
    plans = [_identify_safely(path, solution_paths) for path in paths]
    groups = {}
    for plan in plans:
        if plan.solution is not None:
            groups.setdefault((plan.path.parent, plan.solution), []).append(plan)
    for (folder, solution), group in groups.items():
        if len(group) > 1:
            names = ", ".join(plan.path.name for plan in group)
            for plan in group:
                plan.note = _join(plan.note, f"duplicate: {len(group)} submissions of {solution.name} in {folder} "
                                             f"({names}); each is graded")
    return plans


def _identify_safely(path, solution_paths):
    try:
        return identify(path, solution_paths)
    except Exception as error:  # noqa: BLE001 (a notebook the grader cannot place costs only its own row)
        return Submission(Path(path), problem=f"internal grader error while reading the notebook: "
                                              f"{type(error).__name__}: {error}")


def identify(path, solution_paths):
    """Finds the solution notebook of one submission: its metadata, else its file name, else its exercise ids."""
    path = Path(path)
    by_chapter = {}
    for solution in solution_paths:
        match = exercises.NOTEBOOK_NAME.match(solution.name)
        if match:
            by_chapter.setdefault(match.group(1), []).append(solution)
    by_name = matching_solution(path, solution_paths)
    try:
        notebook, problem = read_submission(path), ""
    except SubmissionError as error:
        notebook, problem = None, str(error)
    chapter_of_metadata = chapter_of_cells = None
    if notebook is not None:
        key = course.setting("metadata_key")
        info = notebook.metadata.get(key)
        chapter_of_metadata = _chapter(info.get("chapter")) if isinstance(info, dict) else None
        ids = {cell.metadata[key].get("exercise") for cell in notebook.cells
               if isinstance(cell.get("metadata", {}).get(key), dict)}
        chapters = {_chapter(exercise_id.split(".")[0]) for exercise_id in ids if isinstance(exercise_id, str)}
        if len(chapters) == 1:
            chapter_of_cells = next(iter(chapters))
    for chapter, how in ((chapter_of_metadata, "the chapter id in its metadata"),
                         (None if by_name else chapter_of_cells, "the exercise ids of its cells")):
        candidates = by_chapter.get(chapter, []) if chapter else []
        if len(candidates) == 1:
            solution = candidates[0]
            note = ""
            if path.name != solution.name:
                note = f"renamed: {path.name} was identified as {solution.name} by {how}"
            if by_name is not None and by_name != solution:
                note = _join(note, f"its file name suggests {by_name.name}; the {how} was followed")
            return Submission(path, solution, how, note, notebook, problem)
    if by_name is not None:
        return Submission(path, by_name, "its file name", "", notebook, problem)
    return Submission(path, None, "", "", notebook, problem)


def _chapter(value):
    """"03" for a chapter id written 3, "3" or "03"; None for anything else ("²", "3.5", True, a list)."""
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        return None
    text = str(value)
    return f"{int(text):02d}" if re.fullmatch(r"[0-9]{1,3}", text) else None


def matching_solution(path, solution_paths):
    """The solution notebook with the same file name, else the only one with the same `NN_` prefix, else None."""
    solution_paths = list(solution_paths)
    name = Path(path).name
    for solution in solution_paths:
        if solution.name == name:
            return solution
    chapter = re.match(r"(\d\d)_", name)
    candidates = [solution for solution in solution_paths if chapter and solution.name.startswith(chapter.group(0))]
    return candidates[0] if len(candidates) == 1 else None


def _join(first, second):
    return f"{first}; {second}" if first and second else first or second


def language_of(notebook):
    """The edition a submission comes from, so its feedback is in that language: "en", or a language of the course
    (a folder of PO files under its translations folder, `i18n.languages`: "zh" for the Chinese one); None for any
    other value its metadata holds."""
    info = notebook.metadata.get(course.setting("metadata_key"))
    lang = info.get("lang") if isinstance(info, dict) else None
    if not isinstance(lang, str):
        return None
    return lang if lang == "en" or lang in _course_languages() else None


def _course_languages():
    try:
        return languages(course.root_or(None))
    except course.CourseNotFound:
        return []


# ----------------------------------------------------------------------------------------------------- the steps

def grading_cells(submission, solution):
    """The `Plan` of grading `submission` against `solution` (see the module docstring)."""
    expected = exercises.exercise_cells(solution)
    found = exercises.exercise_cells(submission)
    last_solution = {max(entry["solution"]): exercise_id for exercise_id, entry in found.items()
                     if entry["solution"] and exercise_id in expected}
    check_indices = {index for entry in found.values() for index in entry["check"]}
    plan = Plan(exercise_steps={exercise_id: [] for exercise_id in expected}, context=checker_context(solution))
    key = course.setting("metadata_key")
    for index, cell in enumerate(submission.cells):
        if cell.cell_type != "code" or index in check_indices:
            continue
        info = cell.metadata.get(key) if isinstance(cell.metadata.get(key), dict) else {}
        if info.get("role") == "solution" and info.get("exercise") in plan.exercise_steps:
            plan.exercise_steps[info["exercise"]].append(len(plan.steps))
        plan.steps.append(Step("learner", cell.source, f"cell {index + 1}"))
        exercise_id = last_solution.get(index)
        if exercise_id is not None:
            for check_index in expected[exercise_id]["check"]:
                plan.exercise_steps[exercise_id].append(len(plan.steps))
                plan.steps.append(Step("check", solution.cells[check_index].source,
                                       f"the check of exercise {exercise_id}", check_index))
    return plan


def checker_context(solution):
    """The solution notebook's code the checker runs (its ordinary cells, its solution cells without the regions)."""
    roles = {index: role for entry in exercises.exercise_cells(solution).values() for role in ("solution", "check")
             for index in entry[role]}
    context = []
    for index, cell in enumerate(solution.cells):
        if cell.cell_type != "code" or roles.get(index) == "check":
            continue
        may_raise = exercises.RAISES_TAG in cell.metadata.get("tags", [])
        if roles.get(index) == "solution":
            code, names = split_solution_cell(cell.source, f"cell {index}")
            context.append(ContextCell(index, code, names, given=True, may_raise=may_raise))
        else:
            context.append(ContextCell(index, exercises.runnable_code(cell.source), may_raise=may_raise))
    return context


def split_solution_cell(source, where="cell"):
    """(code outside the solution regions, names the regions bind) of a solution cell.

    A top-level statement that overlaps a `### BEGIN SOLUTION` region (a `def` whose body holds one, an assignment
    inside one) is the learner's: the names it binds are read from the kernel. The other statements (a table the
    question refers to, an import) are the instructor's: the checker runs them itself.
    """
    code = exercises.runnable_code(source)
    try:
        tree = ast.parse(code)
    except SyntaxError as error:
        raise exercises.ExerciseFormatError(f"{where}: the solution cell is not Python ({error})") from None
    lines = code.split("\n")
    regions, start = [], None
    for number, line in enumerate(lines, start=1):
        if line.strip() == exercises.BEGIN_MARKER:
            start = number
        elif line.strip() == exercises.END_MARKER and start is not None:
            regions.append((start, number))
            start = None
    given, names = [], []
    for statement in tree.body:
        first = min([statement.lineno] + [node.lineno for node in getattr(statement, "decorator_list", [])])
        last = statement.end_lineno
        if any(first <= end and begin <= last for begin, end in regions):
            names += [name for name in bound_names(statement) if name not in names]
        else:
            given.append("\n".join(lines[first - 1:last]))
    return "\n".join(given), tuple(names)


def bound_names(node):
    """The names a top-level statement binds in the module's namespace (not inside functions, classes, lambdas)."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [node.name]
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return [alias.asname or alias.name.split(".")[0] for alias in node.names if alias.name != "*"]
    names = []
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.Name) and isinstance(child.ctx, ast.Store):
            names.append(child.id)
        elif not isinstance(child, (ast.Lambda, ast.GeneratorExp, ast.ListComp, ast.SetComp, ast.DictComp)):
            names += bound_names(child)
    return names


def edited_checks(expected, found, solution, submission):
    """A note when the submission's check cells differ from the instructor's (they were not run either way)."""
    mine = [_normalized(submission.cells[index].source) for index in found["check"]]
    learner_copy = [_normalized(exercises.strip_hidden_tests(solution.cells[index].source))
                    for index in expected["check"]]
    full = [_normalized(solution.cells[index].source) for index in expected["check"]]
    if not mine:
        return "your check cell was missing; the instructor's check ran"
    if mine not in (learner_copy, full):
        return "your check cell was edited; the instructor's check ran instead"
    return ""


def _normalized(source):
    return "\n".join(line.rstrip() for line in source.strip().splitlines())
