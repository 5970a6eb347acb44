"""Exercise notebooks generated from solution notebooks: `coursekit exercises build` and `check`.

Each solution region becomes a stub that raises NotImplementedError (its comment and message in the edition's
language, `ExerciseTexts`), hidden tests are stripped, solution and check cells get nbval's
`raises-exception` tag, outputs are cleared, metadata is reduced and the title says "(exercises)": an exercise
notebook is a pure function of its solution notebook (`build_exercise_notebook`). `build` writes them, and
`differences` lists those that differ from what it would write.
"""

import ast
import difflib
from dataclasses import dataclass
from pathlib import Path

import nbformat

from coursekit import course
from coursekit.exercises.convention import (
    BEGIN_HIDDEN,
    BEGIN_MARKER,
    END_HIDDEN,
    END_MARKER,
    ExerciseFormatError,
    notebook_ids,
    solution_notebooks,
    validate_solution_notebook,
)
from coursekit.exercises.notebooks import notebook_text, read_notebook, runnable_code
from coursekit.files import write_changed

RAISES_TAG = "raises-exception"
# What an exercise notebook keeps of the solution's metadata; the rest is editor state (scroll, timings, widgets).
KEPT_NOTEBOOK_METADATA = ("kernelspec", "language_info")
KEPT_CELL_METADATA = ("tags",)  # and the course's `metadata_key`


@dataclass(frozen=True)
class ExerciseTexts:
    """The texts an exercise notebook writes in its edition's language: the comment and the message of a stub (only
    these are translated: the stub raises NotImplementedError in every edition, which the grader reads as "not
    attempted" by its type, never by its message), and the title words, `(solution notebook's, learner copy's)`
    pairs replaced in the first line of the first markdown cell. The defaults are the English; a translated
    edition's come from its kit catalogue (`coursekit.i18n.exercise_texts`)."""

    comment: str = "# YOUR CODE HERE"
    message: str = "Exercise {exercise_id}: write your code here"
    titles: tuple = ((" (solutions)", " (exercises)"),)


ENGLISH_TEXTS = ExerciseTexts()


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


def stub_solution_regions(source, exercise_id, where="cell", texts=ENGLISH_TEXTS):
    """Replaces each BEGIN/END SOLUTION region of `source` by a stub raising NotImplementedError.

    The stub's comment and message are `texts`' (`ExerciseTexts`, English by default); the rest of its code, the
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
        message = texts.message.format(exercise_id=exercise_id).replace("\\", "\\\\").replace('"', '\\"')
        return [f"{indent}{texts.comment}", f'{indent}raise NotImplementedError("{message}")']

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


def build_exercise_notebook(nb, source_name="notebook", texts=ENGLISH_TEXTS):
    """Returns the exercise notebook for a solution notebook (a new object; `nb` is not changed).

    `texts`: the stubs' comment and message and the title words in the edition's language (`ExerciseTexts`; a
    translated edition's from `coursekit.i18n.exercise_texts`).

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
                                                        f"{source_name}, cell {index}", texts)
            else:
                new_cell.source = strip_hidden_tests(cell.source, f"{source_name}, cell {index}")
            tags = list(new_cell.metadata.get("tags", []))
            new_cell.metadata["tags"] = tags + [RAISES_TAG] if RAISES_TAG not in tags else tags
        exercise.cells.append(new_cell)
    title_cell = next((cell for cell in exercise.cells if cell.cell_type == "markdown"), None)
    if title_cell is not None:
        title, newline, rest = title_cell.source.partition("\n")
        for solutions_word, exercises_word in texts.titles:
            title = title.replace(solutions_word, exercises_word)
        title_cell.source = title + newline + rest
    return strip_outputs(exercise)


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
