"""Exercise notebooks generated from solution notebooks: `coursekit exercises build` and `coursekit exercises check`.

Only `solutions/NN_<topic>.ipynb` is edited by hand; `exercises/NN_<topic>.ipynb` is written from it by
`coursekit exercises build`, and `coursekit exercises check` (run in CI) fails when `exercises/` differs from what
the build would write.

The convention a solution notebook follows (docs/grading.md shows a complete example):

- An exercise is one or more code cells whose metadata holds
  `"bertlib": {"exercise": "3.2", "role": "solution"}` followed by one or more code cells with
  `"bertlib": {"exercise": "3.2", "role": "check"}` (the key is the course's `metadata_key`, course.py). The id is
  `<chapter>.<number>`, the chapter being the notebook's `NN`. `"points": 2` may be given on one cell of the exercise (default 1).
- A solution cell holds one or more regions of whole statements between a `### BEGIN SOLUTION` line and a
  `### END SOLUTION` line. In `exercises/` each region becomes, at the indentation of its BEGIN line,
  `# YOUR CODE HERE` and `raise NotImplementedError("Exercise 3.2: write your code here")`; in the Chinese edition
  (`exercises/zh/`) the comment reads `# 在此写下你的代码` and the message `练习 3.2：在此写下你的代码`, and the
  exception is the same `NotImplementedError`, which the grader reads as "not attempted" by its type.
- A check cell calls `bertlib_course.checks` helpers and ends with `done("3.2")`.
- No cell outside an exercise may use a name defined in a solution region: in `exercises/` it would fail.

In `exercises/`, solution and check cells carry nbval's `raises-exception` tag (the stub raises, and the check
then meets missing code), outputs and execution counts are cleared, metadata is reduced to what the course
uses, and the title's "(solutions)" reads "(exercises)" (Chinese: "（参考答案）" reads "（练习）"), so the file
is a pure function of the solution notebook.

`coursekit exercises test` proves each check on wrong answers: a check must reject every wrong answer of the
catalogue with a failed check (a ✘ message), never by crashing on it (a check that meets a `ValueError` in the
learner's value has not told the learner what is wrong).
"""

import ast
import contextlib
import difflib
import hashlib
import io
import json
import re
import runpy
import time
from pathlib import Path

import nbformat

from coursekit import course
from coursekit.files import write_changed

BEGIN_MARKER = "### BEGIN SOLUTION"
END_MARKER = "### END SOLUTION"
# nbgrader's markers for the part of a check cell that only the grader runs (removed from exercises/).
BEGIN_HIDDEN = "### BEGIN HIDDEN TESTS"
END_HIDDEN = "### END HIDDEN TESTS"
RAISES_TAG = "raises-exception"
ROLES = ("solution", "check")
NOTEBOOK_NAME = re.compile(r"^(\d\d)_[A-Za-z0-9_\-]+\.ipynb$")
# What an exercise notebook keeps of the solution's metadata; the rest is editor state (scroll, timings, widgets).
KEPT_NOTEBOOK_METADATA = ("kernelspec", "language_info")
KEPT_CELL_METADATA = ("tags",)  # and the course's `metadata_key`
# The title of a solution notebook and of its learner copy (first line of the first markdown cell), per language.
TITLE_WORDS = ((" (solutions)", " (exercises)"), ("（参考答案）", "（练习）"))
# The comment and the message of a stub, per language. Only these two texts are translated: the stub raises
# NotImplementedError in both editions, which the grader reads as "not attempted" by its type, never by its message.
STUB_COMMENTS = {"en": "# YOUR CODE HERE", "zh": "# 在此写下你的代码"}
STUB_MESSAGES = {"en": "Exercise {exercise_id}: write your code here",
                 "zh": "练习 {exercise_id}：在此写下你的代码"}


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


def _replace_regions(source, begin, end, where, replacement):
    """`source` with each `begin` ... `end` region (marker lines included) replaced by `replacement(begin_line)`,
    a list of lines. Unbalanced or nested markers raise ExerciseFormatError naming the line."""
    output, region_start = [], None
    for line_number, line in enumerate(source.split("\n"), start=1):
        marker = line.strip()
        if marker == begin:
            if region_start is not None:
                raise ExerciseFormatError(f"{where}, line {line_number}: {begin} inside the region opened "
                                          f"on line {region_start}; close it with {end} first")
            region_start = line_number
            output += replacement(line)
        elif marker == end:
            if region_start is None:
                raise ExerciseFormatError(f"{where}, line {line_number}: {end} without a {begin}")
            region_start = None
        elif region_start is None:
            output.append(line)
    if region_start is not None:
        raise ExerciseFormatError(f"{where}, line {region_start}: {begin} is never closed by {end}")
    return "\n".join(output)


def stub_solution_regions(source, exercise_id, where="cell", lang="en"):
    """Replaces each BEGIN/END SOLUTION region of `source` by a stub raising NotImplementedError.

    The stub's comment and message are in `lang` (`STUB_COMMENTS`, `STUB_MESSAGES`); the rest of its code, the
    NotImplementedError included, is the same in every language.

    Example:
        >>> print(stub_solution_regions("def f(x):\\n    ### BEGIN SOLUTION\\n    return x\\n    ### END SOLUTION",
        ...                             "3.2"))
        def f(x):
            # YOUR CODE HERE
            raise NotImplementedError("Exercise 3.2: write your code here")
    """
    def stub(begin_line):
        indent = begin_line[: len(begin_line) - len(begin_line.lstrip())]
        return [f"{indent}{STUB_COMMENTS[lang]}",
                f'{indent}raise NotImplementedError("{STUB_MESSAGES[lang].format(exercise_id=exercise_id)}")']

    return _replace_regions(source, BEGIN_MARKER, END_MARKER, where, stub)


def strip_hidden_tests(source, where="cell"):
    """Removes each `### BEGIN HIDDEN TESTS` ... `### END HIDDEN TESTS` region of a check cell (nbgrader's rule).

    The hidden lines hold the expected values; the grader runs them from `solutions/`, learners never see them.
    """
    return _replace_regions(source, BEGIN_HIDDEN, END_HIDDEN, where, lambda begin_line: [])


def syntax_problems(nb, source_name="notebook"):
    """One line per code cell of `nb` that is not valid Python (IPython `%` and `!` lines are skipped)."""
    problems = []
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        try:
            ast.parse(runnable_code(cell.source))
        except SyntaxError as error:
            problems.append(f"{source_name}, cell {index}: not valid Python: {error.msg} (line {error.lineno}): "
                            f"{(error.text or '').strip()}")
    return problems


def strip_outputs(nb):
    """Clears outputs and execution counts of every code cell, in place; returns `nb`."""
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs = []
            cell.execution_count = None
    return nb


def build_exercise_notebook(nb, source_name="notebook", lang="en"):
    """Returns the exercise notebook for a solution notebook (a new object; `nb` is not changed).

    `lang` is the language of the stubs' comment and message (`STUB_COMMENTS`, `STUB_MESSAGES`): "zh" for
    `exercises/zh/`.

    Solution regions become stubs, solution and check cells get the `raises-exception` tag, outputs are
    cleared and metadata is reduced to `kernelspec`, `language_info` (notebook) and the course's `metadata_key`,
    `tags` (cells).
    The title (first line of the first markdown cell) says "(exercises)" where the solution's says "(solutions)".
    """
    exercise = nbformat.from_dict(nbformat.v4.new_notebook())
    exercise.nbformat, exercise.nbformat_minor = nb.nbformat, nb.nbformat_minor
    exercise.metadata = {key: nb.metadata[key] for key in KEPT_NOTEBOOK_METADATA if key in nb.metadata}
    own = course.setting("metadata_key")
    exercise.metadata[own] = notebook_ids(nb, source_name)
    for index, cell in enumerate(nb.cells):
        new_cell = nbformat.from_dict(dict(cell))
        new_cell.metadata = {key: cell.metadata[key] for key in (own, *KEPT_CELL_METADATA) if key in cell.metadata}
        info = new_cell.metadata.get(own)
        if info is not None:
            if info.get("role") == "solution":
                new_cell.source = stub_solution_regions(cell.source, info.get("exercise"),
                                                        f"{source_name}, cell {index}", lang)
            else:
                new_cell.source = strip_hidden_tests(cell.source, f"{source_name}, cell {index}")
            tags = list(new_cell.metadata.get("tags", []))
            new_cell.metadata["tags"] = tags + [RAISES_TAG] if RAISES_TAG not in tags else tags
        exercise.cells.append(new_cell)
    title_cell = next((cell for cell in exercise.cells if cell.cell_type == "markdown"), None)
    if title_cell is not None:
        title, newline, rest = title_cell.source.partition("\n")
        for solutions_word, exercises_word in TITLE_WORDS:
            title = title.replace(solutions_word, exercises_word)
        title_cell.source = title + newline + rest
    return strip_outputs(exercise)


def notebook_ids(nb, source_name="notebook"):
    """`{"chapter": "03", "exercises": ["3.1", ...]}`: what the grader reads to match a submission to its solution.

    The chapter comes from the file name `NN_<topic>.ipynb` when it has one, else from the exercise ids.
    """
    ids = list(exercise_cells(nb, source_name))
    match = NOTEBOOK_NAME.match(Path(source_name).name)
    chapter = match.group(1) if match else (f"{int(ids[0].split('.')[0]):02d}" if ids else None)
    return {"chapter": chapter, "exercises": ids}


def notebook_text(nb):
    """The exact text written for `nb`: nbformat's JSON (sorted keys, indent 1) with a final newline."""
    text = nbformat.writes(nb)
    return text if text.endswith("\n") else text + "\n"



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


def expected_exercises(solutions_dir):
    """`{file name: text}` of every exercise notebook `build` writes for `solutions_dir` (validated)."""
    expected = {}
    for path in solution_notebooks(solutions_dir):
        nb = read_notebook(path)
        validate_solution_notebook(nb, path)
        exercise = build_exercise_notebook(nb, str(path))
        problems = syntax_problems(exercise, f"the exercise notebook built from {path}")
        if problems:
            raise ExerciseFormatError("; ".join(problems) + " (put whole statements in each solution region: "
                                      "a region inside a dict or a call leaves a stub that cannot run)")
        expected[path.name] = notebook_text(exercise)
    return expected


def code_fingerprint(notebook):
    """sha256 of the notebook's code cells, in order: the stored outputs belong to exactly this code (the run
    record of `tools/run_notebook.py` holds it as `code_sha256`)."""
    digest = hashlib.sha256()
    for cell in notebook["cells"]:
        if cell["cell_type"] == "code":
            source = cell["source"] if isinstance(cell["source"], str) else "".join(cell["source"])
            digest.update(source.encode("utf-8") + b"\0")
    return digest.hexdigest()


def body_fingerprint(notebook, renames=None):
    """sha256 of the code cells after undoing `renames` ({old: new} texts a move changed: module names,
    `bertlib.tasks` -> `bertlib.finetune.tasks`, or a whole cell) and without their import statements: what a
    move cannot have changed."""
    undo = sorted((renames or {}).items(), key=lambda pair: -len(pair[1]))
    digest = hashlib.sha256()
    for cell in notebook["cells"]:
        if cell["cell_type"] != "code":
            continue
        source = cell["source"] if isinstance(cell["source"], str) else "".join(cell["source"])
        for old, new in undo:  # a module's name: dotted, or bare before an attribute (`pretraining.pretrain`)
            source = re.sub(rf"(?<![\w.]){re.escape(new)}" + (r"(?!\w)" if "." in new else r"(?=\.)"),
                            lambda _, old=old: old, source)
        lines = source.split("\n")
        try:
            tree = ast.parse(runnable_code(source))
        except SyntaxError:
            tree = None
        if tree is not None:
            dropped = {line for node in ast.walk(tree) if isinstance(node, (ast.Import, ast.ImportFrom))
                       for line in range(node.lineno - 1, node.end_lineno)}
            lines = [line for index, line in enumerate(lines) if index not in dropped]
        digest.update("\n".join(lines).encode("utf-8") + b"\0")
    return digest.hexdigest()


def outputs_belong(run, notebook):
    """Whether the outputs of the run recorded as `run` (a notebook's `metadata.bertlib.run` here) belong to the
    notebook's code: made with exactly this code, or with code that a recorded move (`run["moved"]`) changed only
    in its import statements and in the module names it lists."""
    if run.get("code_sha256") == code_fingerprint(notebook):
        return True
    moved = run.get("moved") or {}
    return bool(moved.get("body_sha256")) and body_fingerprint(notebook, moved.get("renames")) == moved["body_sha256"]


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
    return write_changed(exercises_dir, expected_exercises(solutions_dir), stale_folders=["."])


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
    parser.add_argument("action", choices=("build", "check", "test"),
                        help="build: write exercises/ from solutions/; check: fail when exercises/ is out of date; "
                             "test: run every check on its reference answer (must pass) and on each wrong answer "
                             "of solutions/wrong_answers/ (must fail)")
    parser.add_argument("--verbose", action="store_true", help="test: say how each wrong answer was rejected")
    parser.add_argument("--chapter", action="append", default=None, metavar="NN",
                        help="test only: the solution notebook(s) of chapter NN (3 or 03; repeatable); a chapter "
                             "with no exercise stops the command")
    parser.add_argument("--solutions", type=Path, default=None,
                        help="folder of solution notebooks (default: solutions/ of the repository)")
    parser.add_argument("--exercises", type=Path, default=None,
                        help="folder of generated exercise notebooks (default: exercises/ of the repository)")


def run_mutation_tests(solutions_dir, chapters=None, log=print):
    """`coursekit exercises test`: returns the MutationReport over the solution notebooks (or the chapters named)."""
    report = MutationReport()
    for path in chapter_notebooks(solutions_dir, chapters) if chapters else solution_notebooks(solutions_dir):
        mutation_test(path, report, log=log)
    return report


def chapter_notebooks(solutions_dir, chapters):
    """The solution notebooks of `chapters` ("3" or "03"), in order. Raises ExerciseFormatError naming a chapter
    that has no solution notebook with exercises, and the chapters that have one: a run over nothing is no test."""
    found = {}
    for path in solution_notebooks(solutions_dir):
        match = NOTEBOOK_NAME.match(path.name)
        if match and exercise_cells(read_notebook(path), str(path)):
            found.setdefault(match.group(1), []).append(path)
    wanted = list(dict.fromkeys(f"{int(chapter):02d}" if chapter.isdigit() else chapter for chapter in chapters))
    unknown = [chapter for chapter in wanted if chapter not in found]
    if unknown:
        raise ExerciseFormatError(f"--chapter {', '.join(unknown)}: no solution notebook with exercises for that "
                                  f"chapter in {solutions_dir}; the chapters with exercises are "
                                  f"{', '.join(sorted(found)) or 'none'}")
    return [path for chapter in sorted(wanted) for path in found[chapter]]


def run(args):
    with course.using(args.solutions):  # a solutions folder given from outside its course: that course's settings
        return _run(args)


def _run(args):
    if args.chapter and args.action != "test":
        print(f"error: --chapter selects the chapters of `exercises test` only; `exercises {args.action}` always "
              f"covers every solution notebook (run it without --chapter)")
        return 2
    try:
        if args.solutions is None or args.exercises is None:
            here = course.current()
            args.solutions = args.solutions or here.solutions
            args.exercises = args.exercises or here.exercises
        if args.action == "test":
            report = run_mutation_tests(args.solutions, args.chapter)
            for line in report.survivors + report.hidden_only + report.problems:
                print(line)
            if args.verbose:
                for exercise_id, description, name, message in report.rejections:
                    print(f"rejected {exercise_id} {description!r}: {name}: {message}")
            print(report.summary())
            return 0 if report.ok else 1
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
        print(f"{len(problems)} exercise notebooks are out of date: run `coursekit exercises build` "
              f"(edit solutions/, never exercises/)")
        return 1
    print(f"exercises in {args.exercises} match the {len(list(args.solutions.glob('*.ipynb')))} notebooks of "
          f"{args.solutions}")
    return 0


# ---------------------------------------------------------------------------------------------------------------
# Mutation testing of the checks: `coursekit exercises test`.

MIN_WRONG_ANSWERS = 3


def wrong_answers_path(solution_path):
    """`solutions/wrong_answers/NN_<topic>.py`: the catalogue of wrong answers for one solution notebook."""
    solution_path = Path(solution_path)
    return solution_path.parent / "wrong_answers" / f"{solution_path.stem}.py"


def load_wrong_answers(path):
    """Reads a catalogue: a Python file whose `WRONG_ANSWERS` is `{exercise_id: {description: wrong answer}}`.

    A wrong answer is the whole source of the exercise's solution cell (a string), or a list of `(old, new)`
    replacements applied to the reference solution cell (each `old` must occur in it).
    """
    path = Path(path)
    if not path.is_file():
        raise ExerciseFormatError(f"{path}: no catalogue of wrong answers (every exercise needs at least "
                                  f"{MIN_WRONG_ANSWERS})")
    catalogue = runpy.run_path(str(path)).get("WRONG_ANSWERS")
    if not isinstance(catalogue, dict):
        raise ExerciseFormatError(f"{path}: defines no WRONG_ANSWERS dict")
    for exercise_id, answers in catalogue.items():
        if not isinstance(answers, dict):
            raise ExerciseFormatError(f"{path}: WRONG_ANSWERS[{exercise_id!r}] must map descriptions to answers")
        for description, wrong in answers.items():
            valid = isinstance(wrong, str) or (isinstance(wrong, list) and wrong and all(
                isinstance(pair, tuple) and len(pair) == 2 and all(isinstance(text, str) for text in pair)
                for pair in wrong))
            if not valid:
                raise ExerciseFormatError(f"{path}: {exercise_id} {description!r}: a wrong answer is a source string "
                                          f"or a list of (old, new) string pairs")
    return catalogue


def load_right_answers(path):
    """The catalogue's `RIGHT_ANSWERS` (optional): `{exercise_id: {description: answer}}`, answers written as wrong
    answers are (`load_wrong_answers`), each right in another way than the reference: the value unrounded where the
    question states a rounding and the reference rounds it, or rounded where the reference does not. Each must pass
    the public checks and the hidden tests alike."""
    catalogue = runpy.run_path(str(path)).get("RIGHT_ANSWERS", {})
    if not isinstance(catalogue, dict) or not all(isinstance(answers, dict) for answers in catalogue.values()):
        raise ExerciseFormatError(f"{path}: RIGHT_ANSWERS must map exercise ids to {{description: answer}} dicts")
    return catalogue


def wrong_answer_source(reference_source, wrong, where="wrong answer"):
    """The solution cell source of a wrong answer (see `load_wrong_answers`)."""
    if isinstance(wrong, str):
        return wrong
    source = reference_source
    for old, new in wrong:
        if old not in source:
            raise ExerciseFormatError(f"{where}: {old!r} does not occur in the reference solution cell")
        source = source.replace(old, new)
    return source


class MutationReport:
    """What `mutation_test` found: counts, and one line per problem (a surviving wrong answer, a failing reference)."""

    def __init__(self):
        self.exercises, self.wrong_answers, self.rejected, self.right_answers = 0, 0, 0, 0
        self.survivors, self.problems = [], []
        self.hidden_only = []  # wrong answers the public checks pass: a learner sees ✔, the grader fails them
        self.rejections = []  # (exercise, description, exception name, first line of its message)

    @property
    def ok(self):
        return not self.survivors and not self.problems and not self.hidden_only

    def summary(self):
        verdict = "all rejected" if not self.survivors else f"{len(self.survivors)} NOT rejected"
        by_check = sum(name in ("CheckFailed", "AssertionError") for _, _, name, _ in self.rejections)
        public = ("the public checks agree" if not self.hidden_only
                  else f"{len(self.hidden_only)} rejected only by the hidden tests")
        return (f"{self.exercises} exercises, {self.wrong_answers} wrong answers, {verdict} "
                f"({by_check} by a failed check, {len(self.rejections) - by_check} by an error the answer raised); "
                f"{public}; {self.right_answers} other right answers accepted")


def runnable_code(source):
    """A cell's source as plain Python: IPython's `%` and `!` lines blanked (line numbers kept)."""
    return "\n".join("" if line.lstrip().startswith(("%", "!")) else line for line in source.split("\n"))


def _run_quietly(source, namespace, name):
    """Runs `source` in `namespace`; returns None, or the exception it raised. Output is swallowed."""
    with contextlib.redirect_stdout(io.StringIO()):
        try:
            exec(compile(runnable_code(source), name, "exec"), namespace)  # noqa: S102 (instructor's own notebooks)
        except Exception as error:  # noqa: BLE001 (any exception of a check rejects the answer)
            return error
    return None


# The phrases by which a question states a rounding ("a float; the check rounds it to 1 decimal", "2 decimals").
STATED_ROUNDING = re.compile(r"\b(\d|one|two|three|four)\s+decimals?\b", re.IGNORECASE)
# Check helpers that call a learner's function for the check cell, turning its error into a ✘ line with a hint.
CALL_WRAPPERS = ("checked_call", "check_function", "check_raises", "check_same_activations")


def _verdict(nb, cells, solution_index, source, namespace, where, public_only):
    """Runs an exercise's cells in `namespace`, the solution cell as `source` and each check cell whole or, with
    `public_only`, without its hidden tests (what the learner runs). Returns (error or None, cell index)."""
    for cell_index in cells:
        cell_source = source if cell_index == solution_index else nb.cells[cell_index].source
        if public_only and cell_index != solution_index:
            cell_source = strip_hidden_tests(cell_source, f"{where}, cell {cell_index}")
        error = _run_quietly(cell_source, namespace, f"{where}, cell {cell_index}")
        if error is not None:
            return error, cell_index
    return None, None


def _judge_wrong_answer(nb, cells, solution_index, source, namespace, where, report, exercise_id, description):
    """Runs one wrong answer with the public checks alone and with the full checks; records what they said.

    Returns True when both rejected it with a failed check, False when it is reported (it passed one of them, or a
    check crashed on it), None when the answer itself raises (not a plausible answer: not counted)."""
    rejected = {}
    for public_only in (True, False):
        error, cell_index = _verdict(nb, cells, solution_index, source, dict(namespace), where, public_only)
        if error is not None and not public_only:
            report.rejections.append((exercise_id, description, type(error).__name__,
                                      (str(error).strip().splitlines() or [""])[0][:150]))
        if error is None or isinstance(error, (NotImplementedError, AssertionError)):
            rejected[public_only] = error is not None
        elif cell_index == solution_index:
            report.problems.append(f"{where}: the wrong answer itself raises {type(error).__name__}: {error} "
                                   f"(make it a plausible answer)")
            return None
        else:
            report.problems.append(
                f"{where}: the check (cell {cell_index}) crashed with "
                f"{type(error).__name__}: {str(error)[:200]} instead of a ✘ line (read the learner's value inside a "
                f"check helper, or call the learner's function through checks.checked_call)")
            return False
    if not rejected[False]:
        report.survivors.append(f"{where}: passes the checks")
    elif not rejected[True]:
        report.hidden_only.append(f"{where}: passes the public checks and fails only the hidden tests (the learner "
                                  f"sees ✔, the grader fails it): tell it apart in the public check (check_digest)")
    return rejected[True] and rejected[False]


def _judge_right_answer(nb, cells, solution_index, source, namespace, where, report):
    """An answer that is right another way (the value unrounded where the question states a rounding) passes the
    public checks and the full checks alike."""
    for public_only in (True, False):
        error, cell_index = _verdict(nb, cells, solution_index, source, dict(namespace), where, public_only)
        if error is not None:
            checks = "public checks" if public_only else "hidden tests"
            report.problems.append(f"{where}: a right answer fails the {checks} (cell {cell_index}): "
                                   f"{type(error).__name__}: {str(error)[:300]}")
            return
    report.right_answers += 1


def stated_roundings(nb, entry, previous_end):
    """The phrases of an exercise's question (its markdown since the previous exercise, and the comments of its
    solution cells) that state a rounding, e.g. ["1 decimal"]."""
    texts = [cell.source for cell in nb.cells[previous_end + 1:min(entry["solution"])] if cell.cell_type == "markdown"]
    texts += [line for index in entry["solution"] for line in nb.cells[index].source.split("\n")
              if line.lstrip().startswith("#")]
    return [match.group(0) for text in texts for match in STATED_ROUNDING.finditer(text)]


def _solution_names(nb, entry):
    """The names an exercise's solution cells define at their top level (functions, classes, assignments)."""
    names = set()
    for index in entry["solution"]:
        for node in ast.parse(runnable_code(nb.cells[index].source)).body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(node.name)
            elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                names.update(name.id for target in targets for name in ast.walk(target) if isinstance(name, ast.Name))
    return names


def unwrapped_calls(nb, source_name="notebook"):
    """One line per call, in a check cell, of a name that a solution cell of the notebook defines, made outside a
    call wrapper (`CALL_WRAPPERS`): an error it raised would be a bare traceback at the wrong line, and the grader
    would record `error` without a hint. Passing the function to a wrapper, or a lambda that calls it, is fine; an
    argument such as `checked_call("f", f, g(x))` is not (`g(x)` runs before the wrapper does)."""
    found = exercise_cells(nb, source_name)
    defined = set().union(*(_solution_names(nb, entry) for entry in found.values()))
    problems = []
    for exercise_id, entry in found.items():
        for index in entry["check"]:
            tree = ast.parse(runnable_code(nb.cells[index].source))
            deferred = {id(node) for call in ast.walk(tree) if _is_wrapper_call(call)
                        for argument in [*call.args, *call.keywords] for function in ast.walk(argument)
                        if isinstance(function, ast.Lambda) for node in ast.walk(function.body)}
            lines = sorted({node.lineno: node.func.id for node in ast.walk(tree)
                            if isinstance(node, ast.Call) and id(node) not in deferred
                            and isinstance(node.func, ast.Name) and node.func.id in defined}.items())
            problems += [f"{source_name}, exercise {exercise_id}, cell {index}, line {line}: {name}(...) is called "
                         f"outside checked_call or check_function" for line, name in lines]
    return problems


def _is_wrapper_call(node):
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in CALL_WRAPPERS


def duplicate_check_names(nb, source_name="notebook"):
    """One line per name that two checks of one exercise's public part share ("✔ answers: as expected", then
    "✘ answers is not what was expected" reads as a contradiction)."""
    problems = []
    for exercise_id, entry in exercise_cells(nb, source_name).items():
        seen = set()
        for index in entry["check"]:
            tree = ast.parse(runnable_code(strip_hidden_tests(nb.cells[index].source)))
            for node in ast.walk(tree):
                if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id.startswith("check_")
                        and node.func.id != "check_shape"  # which prints "the shape of <name>"
                        and node.args and isinstance(node.args[0], ast.Constant)):
                    name = node.args[0].value
                    if name in seen:
                        problems.append(f"{source_name}, exercise {exercise_id}: two checks named {name!r}")
                    seen.add(name)
    return problems


def mutation_test(solution_path, report=None, log=print):
    """Runs one solution notebook's checks on its reference answers (must pass) and on every wrong answer (must fail).

    The notebook's other cells run once, in order, in one namespace; each wrong answer runs with the exercise's
    check cells in a copy of that namespace, once without the hidden tests (what the learner sees) and once with
    them (what the grader runs), and both must reject it; each right answer of `RIGHT_ANSWERS` must pass both;
    then the reference answer runs in the namespace itself, so later exercises see the reference definitions.
    Returns the `MutationReport` (a new one unless given).
    """
    report = report or MutationReport()
    solution_path = Path(solution_path)
    nb = read_notebook(solution_path)
    validate_solution_notebook(nb, solution_path)
    found = exercise_cells(nb, str(solution_path))
    try:
        catalogue = load_wrong_answers(wrong_answers_path(solution_path))
        right_catalogue = load_right_answers(wrong_answers_path(solution_path))
    except ExerciseFormatError as error:
        report.problems.append(str(error))
        return report
    report.problems += unwrapped_calls(nb, solution_path.name) + duplicate_check_names(nb, solution_path.name)
    for unknown in (set(catalogue) | set(right_catalogue)) - set(found):
        report.problems.append(f"{wrong_answers_path(solution_path)}: exercise {unknown} is not in {solution_path.name}")
    group_of = {index: exercise_id for exercise_id, entry in found.items()
                for index in range(min(entry["solution"]), max(entry["check"]) + 1)}
    namespace = {"__name__": "__main__"}
    started, done_groups, previous_end = time.monotonic(), set(), -1
    counts = [0, 0]
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        exercise_id = group_of.get(index)
        if exercise_id is None:
            error = _run_quietly(cell.source, namespace, f"{solution_path.name}, cell {index}")
            if error is not None and RAISES_TAG not in cell.metadata.get("tags", []):
                report.problems.append(f"{solution_path.name}, cell {index}: {type(error).__name__}: {error}")
            continue
        if exercise_id in done_groups:
            continue
        done_groups.add(exercise_id)
        entry = found[exercise_id]
        if stated_roundings(nb, entry, previous_end) and not right_catalogue.get(exercise_id):
            report.problems.append(f"exercise {exercise_id} states a rounding ({stated_roundings(nb, entry, previous_end)[0]})"
                                   f": RIGHT_ANSWERS needs the value rounded another way (unrounded, or rounded)")
        previous_end = max(entry["check"])
        counts[0] += 1
        counts[1] += _test_exercise(nb, solution_path.name, exercise_id, entry, namespace, report,
                                    catalogue.get(exercise_id, {}), right_catalogue.get(exercise_id, {}))
    log(f"{solution_path.name}: {counts[0]} exercises, {counts[1]} wrong answers "
        f"({time.monotonic() - started:.0f} s)")
    return report


def _test_exercise(nb, notebook_name, exercise_id, entry, namespace, report, answers, right_answers):
    """Judges one exercise's wrong and right answers, then runs its reference in `namespace`; returns the number of
    wrong answers judged."""
    cells = sorted(entry["solution"] + entry["check"])
    (solution_index, *more) = entry["solution"]
    if more:
        report.problems.append(f"{notebook_name}: exercise {exercise_id} has several solution cells; "
                               f"its wrong answers replace only the first")
    report.exercises += 1
    if len(answers) < MIN_WRONG_ANSWERS:
        report.problems.append(f"exercise {exercise_id}: {len(answers)} wrong answers in the catalogue, "
                               f"at least {MIN_WRONG_ANSWERS} needed")
    judged = 0
    for kind, entries in (("wrong", answers), ("right", right_answers)):
        for description, answer in entries.items():
            where = f"exercise {exercise_id}, {kind} answer {description!r}"
            try:
                source = wrong_answer_source(nb.cells[solution_index].source, answer, where)
            except ExerciseFormatError as error:
                report.problems.append(str(error))
                continue
            if kind == "right":
                _judge_right_answer(nb, cells, solution_index, source, namespace, where, report)
                continue
            rejected = _judge_wrong_answer(nb, cells, solution_index, source, namespace, where, report, exercise_id,
                                           description)
            if rejected is not None:
                judged += 1
                report.wrong_answers += 1
                report.rejected += rejected
    reference = nb.cells[solution_index].source
    for public_only, trial in ((True, dict(namespace)), (False, namespace)):  # the last run leaves its definitions
        error, cell_index = _verdict(nb, cells, solution_index, reference, trial, notebook_name, public_only)
        if error is not None:
            report.problems.append(f"exercise {exercise_id}: the reference answer fails its own "
                                   f"{'public ' if public_only else ''}check, cell {cell_index}: "
                                   f"{type(error).__name__}: {str(error)[:300]}")
    return judged
