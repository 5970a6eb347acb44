"""`bertlib grade`: run submitted exercise notebooks under nbval and write one CSV row per exercise.

    bertlib grade submissions/ --out grades.csv [--solutions solutions] [--timeout 600] [--jobs 1] [--no-fast]

Each submission (a `.ipynb`, or a folder searched recursively) is matched by file name with the solution notebook
of the same name (else the one with the same `NN_` chapter prefix). The solution notebook is the authoritative list
of exercises and points (`bertlib.exercises` describes the convention), so every exercise gets a row even when the
submission is unreadable, crashed, hung or lost a cell. An exercise scores its points when all of its solution and
check cells run without error, and its check cells are the ones of the solution notebook.

How a notebook is run: a copy (outputs cleared; nbval's `raises-exception` tags and markers removed from exercise
cells, so an unsolved stub fails) goes into a fresh temporary folder, which becomes the kernel's working
directory; `python -m pytest --nbval-lax` runs it there in its own process session, with a small pytest plugin that
appends each cell's result to a file outside that folder. The grader kills the whole process tree (pytest, the
kernel and the kernel's process group) when the notebook passes `--timeout` seconds or the kernel dies.
`BERTLIB_FAST=1` is set for the run unless `--no-fast`.

This isolates a submission from the grader and from other submissions; it is not a sandbox. Student code runs
as the grading user with full access to the file system and the network, and could forge its own results: grade
untrusted submissions inside a container or VM.

Columns: notebook, exercise, score, max_score, status, message. Statuses:
    passed   every solution and check cell of the exercise ran without error
    failed   a check rejected the answer, the stub was left (NotImplementedError), or a check cell is
             missing or was changed
    error    the exercise's code raised another exception, the kernel died while running it, or the notebook
             could not be read or graded
    timeout  the notebook passed its time limit before the exercise finished
    not-run  the exercise's cells never ran (skipped, or the kernel had died in an earlier cell)
"""

import concurrent.futures
import csv
import io
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import nbformat
import psutil

from bertlib import resources
from bertlib.course import exercises
from bertlib.files import write_text_atomically

COLUMNS = ("notebook", "exercise", "score", "max_score", "status", "message")
STATUSES = ("passed", "failed", "error", "timeout", "not-run")
CHECK_FAILURES = ("CheckFailed", "AssertionError")
NBVAL_EXPECTATION_TAGS = ("raises-exception", "nbval-raises-exception", "nbval-skip")
NBVAL_EXPECTATION_MARKERS = re.compile(r"^\s*#\s*NBVAL_(RAISES_EXCEPTION|SKIP)\s*$", re.MULTILINE)
ANSI_CODES = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
MESSAGE_LIMIT = 500  # characters of a message kept in the CSV
POLL_SECONDS = 0.2

# Written as conftest.py beside the notebook copy: pytest loads it without importing bertlib (and so TensorFlow).
# It appends one JSON line when a cell starts (with the kernel's pid, so the grader can see the kernel die) and one
# with its result; the grader reads the file while pytest runs.
RECORDER_PLUGIN = '''
import json

import pytest


def pytest_addoption(parser):
    parser.addoption("--bertlib-record", help="file that receives one JSON line per cell event")


def _record(config, **event):
    with open(config.getoption("bertlib_record"), "a", encoding="utf-8") as file:
        file.write(json.dumps(event) + "\\n")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    manager = getattr(getattr(item.parent, "kernel", None), "km", None)
    _record(item.config, event="start", cell=item.cell_num,
            kernel_pid=getattr(getattr(manager, "provisioner", None), "pid", None))
    yield


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    report = (yield).get_result()
    if call.when == "call" or report.outcome != "passed":
        errors = [output for output in (getattr(item, "test_outputs", None) or [])
                  if output.get("output_type") == "error"]
        _record(item.config, event="result", cell=item.cell_num, outcome=report.outcome,
                ename=errors[-1]["ename"] if errors else None, evalue=errors[-1]["evalue"] if errors else None,
                message=str(call.excinfo.value)[-2000:] if call.excinfo else "")
'''

_running = set()  # pytest processes in flight, killed if grading is interrupted
_running_lock = threading.Lock()


@dataclass
class NotebookRun:
    """What happened when one notebook ran: results by code-cell number, and how the run ended."""

    results: dict = field(default_factory=dict)  # code-cell number -> result event
    started: list = field(default_factory=list)  # code-cell numbers in the order they started
    timed_out: bool = False
    kernel_died: bool = False
    seconds: float = 0.0
    output_tail: str = ""
    cell_names: dict = field(default_factory=dict)  # code-cell number -> "cell 8" (position in the notebook, from 1)

    def name(self, number):
        return self.cell_names.get(number, f"code cell {number}")

    @property
    def last_started(self):
        return self.started[-1] if self.started else None


def grade(submissions, out, solutions_dir=None, timeout=600, fast=True, jobs=1):
    """Grades notebooks and writes `out` (CSV) and its Markdown summary (`out` with suffix .md).

    Args:
        submissions: paths of notebooks or folders of notebooks.
        out: path of the CSV to write.
        solutions_dir: folder of solution notebooks, defaults to `solutions/` of the repository.
        timeout: float, defaults to 600. Seconds one notebook may run, kernel start included.
        fast: bool, defaults to True. Set BERTLIB_FAST=1 for the notebooks.
        jobs: int, defaults to 1. Notebooks graded at the same time.

    Returns:
        The list of rows (dicts with the keys of COLUMNS). Both files are written even when grading fails
        part-way; an internal error becomes rows with status "error".
    """
    solutions_dir = Path(solutions_dir or resources.REPO_ROOT / "solutions")
    notebooks = find_notebooks(submissions)
    rows_by_notebook = {}
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=max(1, jobs))
    try:
        futures = {pool.submit(_grade_safely, path, solutions_dir, timeout, fast): path for path in notebooks}
        for future in concurrent.futures.as_completed(futures):
            rows_by_notebook[futures[future]] = future.result()
    except BaseException:  # e.g. Ctrl-C: the notebooks run in sessions of their own, so stop them here
        pool.shutdown(wait=False, cancel_futures=True)
        with _running_lock:
            for process in list(_running):
                _kill_process_tree(process)
        raise
    finally:
        pool.shutdown(wait=False)
        rows = []
        for path in notebooks:
            rows += rows_by_notebook.get(path) or [
                _row(path, "-", 0, 0, "not-run", "grading was interrupted before this notebook")]
        write_reports(rows, out)
    return rows


def find_notebooks(submissions):
    """The `.ipynb` files named by `submissions` (folders searched recursively, checkpoints skipped), in order.

    A path that does not exist is kept, so that it gets a row saying so.
    """
    notebooks = []
    for submission in map(Path, submissions):
        if submission.is_dir():
            notebooks += sorted(path for path in submission.rglob("*.ipynb") if ".ipynb_checkpoints" not in path.parts)
        else:
            notebooks.append(submission)
    return list(dict.fromkeys(notebooks))


def _grade_safely(path, solutions_dir, timeout, fast):
    try:
        return grade_notebook(path, solutions_dir, timeout=timeout, fast=fast)
    except Exception as error:  # noqa: BLE001 (a grader bug must not cost this notebook its rows)
        return [_row(path, "-", 0, 0, "error", f"internal grader error: {type(error).__name__}: {error}")]


def grade_notebook(path, solutions_dir, timeout=600, fast=True):
    """Returns the rows of one submitted notebook, one per exercise of its solution notebook."""
    path = Path(path)
    solution_path = matching_solution(path, solutions_dir)
    if solution_path is None:
        return [_row(path, "-", 0, 0, "error", f"no solution notebook in {solutions_dir} matches {path.name} "
                                               f"(expected a file named like NN_<topic>.ipynb)")]
    try:
        solution = exercises.read_notebook(solution_path)
        exercises.validate_solution_notebook(solution, solution_path)
    except exercises.ExerciseFormatError as error:
        return [_row(path, "-", 0, 0, "error", f"the solution notebook is invalid: {error}")]
    expected = exercises.exercise_cells(solution)

    def rows_for_all(status, message):
        return [_row(path, exercise_id, 0, entry["points"], status, message) for exercise_id, entry in expected.items()]

    if not path.is_file():
        return rows_for_all("error", f"no such file: {path}")
    try:
        submission = exercises.read_notebook(path)
        found = exercises.exercise_cells(submission, str(path))
    except exercises.ExerciseFormatError as error:
        return rows_for_all("error", f"could not read the notebook: {error}")
    run = run_notebook(grading_copy(submission), timeout=timeout, fast=fast)
    code_numbers = {index: number for number, index in enumerate(
        index for index, cell in enumerate(submission.cells) if cell.cell_type == "code")}
    run.cell_names = {number: f"cell {index + 1}" for index, number in code_numbers.items()}
    rows = []
    for exercise_id, entry in expected.items():
        problem = _structure_problem(exercise_id, entry, found.get(exercise_id), solution, submission)
        if problem:
            status, message = "failed", problem
        else:
            cells = sorted(found[exercise_id]["solution"] + found[exercise_id]["check"])
            status, message = _exercise_outcome(exercise_id, [code_numbers[index] for index in cells], run, timeout)
        rows.append(_row(path, exercise_id, entry["points"] if status == "passed" else 0, entry["points"],
                         status, message))
    return rows


def matching_solution(path, solutions_dir):
    """The solution notebook for a submission: same file name, else the one with the same NN_ prefix."""
    solutions_dir = Path(solutions_dir)
    same_name = solutions_dir / Path(path).name
    if same_name.is_file():
        return same_name
    chapter = re.match(r"(\d\d)_", Path(path).name)
    candidates = sorted(solutions_dir.glob(f"{chapter.group(1)}_*.ipynb")) if chapter else []
    return candidates[0] if len(candidates) == 1 else None


def grading_copy(nb):
    """The notebook as graded: outputs cleared, and exercise cells no longer expected to raise or be skipped."""
    copy = exercises.strip_outputs(nbformat.from_dict(nb))
    for cell in copy.cells:
        if cell.cell_type == "code" and "bertlib" in cell.metadata:
            tags = cell.metadata.get("tags", [])
            cell.metadata["tags"] = [tag for tag in tags if tag not in NBVAL_EXPECTATION_TAGS]
            cell.source = NBVAL_EXPECTATION_MARKERS.sub("", cell.source)
    return copy


def run_notebook(nb, timeout=600, fast=True):
    """Runs `nb` under `pytest --nbval-lax` in a temporary folder; returns a NotebookRun (never raises on timeout)."""
    with tempfile.TemporaryDirectory(prefix="bertlib-grade-") as scratch:
        workdir, record = Path(scratch) / "work", Path(scratch) / "cells.jsonl"
        workdir.mkdir()
        nbformat.write(nb, str(workdir / "submission.ipynb"))
        (workdir / "conftest.py").write_text(RECORDER_PLUGIN, encoding="utf-8")
        (workdir / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
        record.touch()
        command = [sys.executable, "-m", "pytest", "submission.ipynb", "--nbval-lax", "--nbval-current-env",
                   "-p", "no:cacheprovider", "-q", "--rootdir", str(workdir), "-c", str(workdir / "pytest.ini"),
                   "--nbval-cell-timeout", str(int(timeout) + 60), "--bertlib-record", str(record)]
        log_path = Path(scratch) / "pytest.log"
        run = NotebookRun()
        start = time.monotonic()
        with open(log_path, "wb") as log:
            process = subprocess.Popen(command, cwd=workdir, env=_grading_environment(fast), stdout=log,
                                       stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
            with _running_lock:
                _running.add(process)
            kernel_pid = None
            try:
                while process.poll() is None:
                    time.sleep(POLL_SECONDS)
                    kernel_pid = kernel_pid or _kernel_pid(record)
                    if time.monotonic() - start > timeout:
                        run.timed_out = True
                        break
                    if kernel_pid and not _is_alive(kernel_pid):
                        run.kernel_died = True
                        break
            finally:
                _kill_process_tree(process, kernel_pid)
                with _running_lock:
                    _running.discard(process)
        run.seconds = time.monotonic() - start
        _read_events(record, run)
        run.output_tail = ANSI_CODES.sub("", log_path.read_text(encoding="utf-8", errors="replace"))[-2000:]
    return run


def _grading_environment(fast):
    environment = dict(os.environ)
    environment.pop("PYTEST_ADDOPTS", None)  # the grader's own pytest options must not change how notebooks run
    environment["PYTHONPATH"] = os.pathsep.join(
        filter(None, [str(resources.REPO_ROOT), environment.get("PYTHONPATH")]))
    environment.setdefault("MPLBACKEND", "Agg")
    environment["PYDEVD_DISABLE_FILE_VALIDATION"] = "1"
    if fast:
        environment["BERTLIB_FAST"] = "1"
    return environment


def _kernel_pid(record):
    for event in _events(record):
        if event.get("kernel_pid"):
            return event["kernel_pid"]
    return None


def _events(record):
    events = []
    for line in record.read_text(encoding="utf-8").splitlines():
        try:
            events.append(json.loads(line))
        except json.JSONDecodeError:  # a line cut short by the kill
            break
    return events


def _read_events(record, run):
    for event in _events(record):
        if event["event"] == "start":
            run.started.append(event["cell"])
        else:
            run.results[event["cell"]] = event


def _is_alive(pid):
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _kill_process_tree(process, kernel_pid=None):
    """Kills pytest, all its descendants and their process groups (the kernel runs in a session of its own)."""
    try:
        descendants = psutil.Process(process.pid).children(recursive=True)
    except psutil.NoSuchProcess:
        descendants = []
    groups = {process.pid} | ({kernel_pid} if kernel_pid else set())
    for child in descendants:
        try:
            groups.add(os.getpgid(child.pid))
        except ProcessLookupError:
            pass
    groups.discard(os.getpgrp())
    for group in groups:
        try:
            os.killpg(group, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    for child in descendants:
        try:
            child.kill()
        except psutil.NoSuchProcess:
            pass
    process.wait()
    psutil.wait_procs(descendants, timeout=5)


def _structure_problem(exercise_id, expected, found, solution, submission):
    """A message when the submission lost an exercise's cells or changed its checks, else None."""
    if found is None or not found["solution"]:
        return f"solution cell for exercise {exercise_id} is missing (keep the exercise's cells; write in them)"
    if not found["check"]:
        return f"check cell for exercise {exercise_id} is missing (restore it from the exercise notebook)"
    expected_checks = [_normalized(solution.cells[index].source) for index in expected["check"]]
    found_checks = [_normalized(submission.cells[index].source) for index in found["check"]]
    if found_checks != expected_checks:
        return f"check cell for exercise {exercise_id} was changed (restore it from the exercise notebook)"
    return None


def _normalized(source):
    return "\n".join(line.rstrip() for line in source.strip().splitlines())


def _exercise_outcome(exercise_id, cell_numbers, run, timeout):
    """(status, message) of an exercise from the results of its code cells, in order."""
    for number in cell_numbers:
        result = run.results.get(number)
        if result is None:
            return _unfinished(number, run, timeout)
        if result["outcome"] == "skipped":
            return "not-run", f"{run.name(number)} was skipped"
        if result["outcome"] == "failed":
            name, value = result.get("ename"), result.get("evalue") or ""
            if name in CHECK_FAILURES:
                return "failed", _one_line(value or f"{name} in {run.name(number)}")
            if name == "NotImplementedError":
                return "failed", _one_line(f"not attempted: {value}")
            if name:
                return "error", _one_line(f"{name}: {value} ({run.name(number)})")
            return "error", _one_line(f"{run.name(number)} failed: {result.get('message')}")
    return "passed", f"exercise {exercise_id} passed"


def _unfinished(number, run, timeout):
    running = run.last_started if run.last_started not in run.results else None
    where = run.name(running) if running is not None else "starting the kernel"
    if run.timed_out:
        if number == running:
            return "timeout", f"{run.name(number)} was still running after the {timeout:g} s limit (an endless loop?)"
        return "timeout", f"not reached: the notebook hit its {timeout:g} s limit in {where}"
    if run.kernel_died:
        if number == running:
            return "error", (f"the kernel died while running {run.name(number)} (os._exit, a crash, or out of "
                             f"memory?)")
        return "not-run", f"not run: the kernel died earlier, in {where}"
    return "error", _one_line(f"{run.name(number)} was not run; pytest said: {run.output_tail[-300:]}")


def _one_line(text):
    text = " | ".join(line.strip() for line in ANSI_CODES.sub("", text).strip().splitlines() if line.strip())
    return text if len(text) <= MESSAGE_LIMIT else text[:MESSAGE_LIMIT] + " …"


def _row(path, exercise_id, score, max_score, status, message):
    return {"notebook": str(path), "exercise": exercise_id, "score": score, "max_score": max_score,
            "status": status, "message": _one_line(message)}


def write_reports(rows, out):
    """Writes the CSV `out` and the Markdown summary beside it (same name, .md), each atomically."""
    out = Path(out)
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=COLUMNS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    write_text_atomically(out, buffer.getvalue())
    write_text_atomically(out.with_suffix(".md"), markdown_summary(rows))


def markdown_summary(rows):
    """Per-notebook totals, then every row, as Markdown tables."""
    totals = {}
    for row in rows:
        total = totals.setdefault(row["notebook"], [0, 0, 0, 0])
        total[0] += row["score"]
        total[1] += row["max_score"]
        total[2] += row["status"] == "passed"
        total[3] += 1

    def cell(value):
        return str(value).replace("|", "\\|")

    lines = ["# Grades", "", "| notebook | score | max_score | exercises passed |", "|---|---:|---:|---:|"]
    lines += [f"| {cell(name)} | {score} | {maximum} | {passed} of {count} |"
              for name, (score, maximum, passed, count) in totals.items()]
    lines += ["", "## Exercises", "", "| " + " | ".join(COLUMNS) + " |", "|---|---|---:|---:|---|---|"]
    lines += ["| " + " | ".join(cell(row[column]) for column in COLUMNS) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def add_arguments(parser):
    parser.add_argument("submissions", nargs="+", type=Path, metavar="SUBMISSION",
                        help="a submitted .ipynb, or a folder of them (searched recursively)")
    parser.add_argument("--out", type=Path, default=Path("grades.csv"),
                        help="CSV to write (default grades.csv); the Markdown summary goes beside it (.md)")
    parser.add_argument("--solutions", type=Path, default=resources.REPO_ROOT / "solutions",
                        help="folder of solution notebooks, the list of exercises and points "
                             "(default: solutions/ of the repository)")
    parser.add_argument("--timeout", type=float, default=600.0,
                        help="seconds one notebook may run, kernel start included (default 600)")
    parser.add_argument("--jobs", type=int, default=1, help="notebooks graded at the same time (default 1)")
    parser.add_argument("--no-fast", dest="fast", action="store_false",
                        help="do not set BERTLIB_FAST=1 (run the notebooks at full size)")


def run(args):
    if args.timeout <= 0 or args.jobs < 1:
        print(f"error: --timeout must be > 0 and --jobs >= 1, got {args.timeout} and {args.jobs}")
        return 2
    rows = grade(args.submissions, args.out, solutions_dir=args.solutions, timeout=args.timeout, fast=args.fast,
                 jobs=args.jobs)
    score, maximum = sum(row["score"] for row in rows), sum(row["max_score"] for row in rows)
    print(f"graded {len({row['notebook'] for row in rows})} notebooks: {score} of {maximum} points; "
          f"wrote {args.out} and {args.out.with_suffix('.md')}")
    return 1 if any(row["message"].startswith("internal grader error") for row in rows) else 0
