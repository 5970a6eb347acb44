"""Mutation tests of the checks (`coursekit exercises test`): every wrong answer rejected, every right one passed.

`mutation_test` runs one solution notebook's cells in order; for each exercise it runs every wrong answer of the
catalogue (`answers`) with the public checks alone and with the hidden tests, both of which must reject it with a
failed check (not a crash), every other right answer (which both must pass), then the reference answer. What
it finds is a `MutationReport`; `run_mutation_tests` covers a folder or the chapters named.
"""

import contextlib
import io
import re
import time
from pathlib import Path

from coursekit.exercises.answers import (
    MIN_WRONG_ANSWERS,
    load_right_answers,
    load_wrong_answers,
    wrong_answer_source,
    wrong_answers_path,
)
from coursekit.exercises.convention import (
    NOTEBOOK_NAME,
    ExerciseFormatError,
    exercise_cells,
    solution_notebooks,
    validate_solution_notebook,
)
from coursekit.exercises.generate import RAISES_TAG, strip_hidden_tests
from coursekit.exercises.lint import duplicate_check_names, unwrapped_calls
from coursekit.exercises.notebooks import read_notebook, runnable_code

# The phrases by which a question states a rounding ("a float; the check rounds it to 1 decimal", "2 decimals").
STATED_ROUNDING = re.compile(r"\b(\d|one|two|three|four)\s+decimals?\b", re.IGNORECASE)


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


def _run_quietly(source, namespace, name):
    """Runs `source` in `namespace`; returns None, or the exception it raised. Output is swallowed."""
    with contextlib.redirect_stdout(io.StringIO()):
        try:
            exec(compile(runnable_code(source), name, "exec"), namespace)  # noqa: S102 (instructor's own notebooks)
        except Exception as error:  # noqa: BLE001 (any exception of a check rejects the answer)
            return error
    return None


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
