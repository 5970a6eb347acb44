"""`bertlib grade`: run submitted exercise notebooks and write one CSV row per exercise, plus one feedback file each.

    bertlib grade submissions/ --out grades.csv [--solutions solutions] [--timeout 600] [--jobs 1] [--no-fast]

A submission (a `.ipynb`, or a folder searched recursively) is matched to its solution notebook by the chapter id
in its metadata (`"bertlib": {"chapter": "03", ...}`, written by `bertlib exercises build`), else by its file name
(same name, else the same `NN_` prefix), else by the exercise ids of its cells. The solution notebook is the
authoritative list of exercises and points (`bertlib.course.exercises` describes the convention), so every
exercise gets a row even when the submission is unreadable, crashed, hung or lost a cell. A renamed submission is
graded and says how it was identified; two submissions of one chapter in one folder are both graded and flagged.

How a notebook is graded: the learner's code cells run in order in a fresh kernel, except that its check cells are
never run: the instructor's check cells (from `solutions/`, hidden tests included) run in their place, each after
the check helpers were loaded afresh from `bertlib/course/checks.py`. The grading process drives the kernel
itself (jupyter_client) and reads each cell's result from the kernel's replies; nothing the notebook writes to
disk is read back. The kernel runs in a private temporary folder, under a runner process that is the reaper of
every process the notebook starts (a PID namespace where `unshare` allows one, `PR_SET_CHILD_SUBREAPER`
otherwise), and the whole tree is killed when the notebook ends, passes `--timeout` or its kernel dies.
docs/grading.md says what this protects against and what it does not (it is not a sandbox).

Columns: notebook, exercise, score, max_score, status, message, note. Statuses:
    passed   every solution cell and every instructor check of the exercise ran without error
    failed   a check rejected the answer, the stub was left (NotImplementedError), or the solution cell is missing
    error    the exercise's code raised another exception, the kernel died while running it, or the notebook
             could not be read or graded
    timeout  the notebook passed its time limit before the exercise finished
    not-run  the exercise's cells never ran (the kernel had died in an earlier cell)
"""

import concurrent.futures
import csv
import ctypes
import hashlib
import hmac
import io
import json
import os
import queue
import re
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import psutil

from bertlib import resources
from bertlib.course import checks, exercises
from bertlib.files import write_text_atomically

COLUMNS = ("notebook", "exercise", "score", "max_score", "status", "message", "note")
STATUSES = ("passed", "failed", "error", "timeout", "not-run")
CHECK_FAILURES = ("CheckFailed", "AssertionError")
ANSI_CODES = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
MESSAGE_LIMIT = 500  # characters of a message kept in the CSV (the feedback file keeps more)
CHECK_HELPERS = ("CheckFailed", "check_equal", "check_close", "check_shape", "check_array_close", "check_true",
                 "check_function", "check_digest", "answer_digest", "done")
PR_SET_CHILD_SUBREAPER = 36
RUNNER_GRACE_SECONDS = 60  # beyond --timeout, for the runner to stop the kernel and report

# Run silently before every instructor check cell: the check helpers are loaded from the grader's copy of
# checks.py into a new module object, so a submission that replaced them (or the names bound to them) gains nothing.
RESTORE_HELPERS = '''
def _bertlib_restore_checks(path, names):
    import importlib.util
    import sys
    spec = importlib.util.spec_from_file_location("bertlib.course.checks", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    for name in ("bertlib.course.checks", "bertlib.checks"):
        sys.modules[name] = module
    for parent in ("bertlib", "bertlib.course"):
        if parent in sys.modules:
            setattr(sys.modules[parent], "checks", module)
    globals().update({{name: getattr(module, name) for name in names}})


_bertlib_restore_checks({path!r}, {names!r})
del _bertlib_restore_checks
'''

_running = set()  # runner processes in flight, killed if grading is interrupted
_running_lock = threading.Lock()


class GradingInputError(ValueError):
    """A grading run that cannot start: a missing submission or solutions folder, or an output it cannot write."""


@dataclass
class NotebookRun:
    """What happened when one notebook ran: results by cell number (in the run), and how the run ended."""

    results: dict = field(default_factory=dict)  # cell number -> {"outcome", "ename", "evalue", "message"}
    started: list = field(default_factory=list)  # cell numbers in the order they started
    timed_out: bool = False
    kernel_died: bool = False
    seconds: float = 0.0
    output_tail: str = ""
    cell_names: dict = field(default_factory=dict)  # cell number -> "cell 8" (position in the notebook, from 1)

    def name(self, number):
        return self.cell_names.get(number, f"code cell {number}")

    @property
    def last_started(self):
        return self.started[-1] if self.started else None


class GradeResult(list):
    """The rows of a grading run (a list of dicts with the keys of COLUMNS), and where the reports went."""

    def __init__(self, rows=(), details=None):
        super().__init__(rows)
        self.details = details or {}  # (notebook, exercise) -> the full, multi-line message
        self.written = []  # paths of the reports written
        self.fallback = None  # a message when the reports could not go where asked


@dataclass
class Submission:
    """One submitted notebook, the solution it is graded against, and how that was decided."""

    path: Path
    solution: Path = None
    how: str = ""
    note: str = ""


def grade(submissions, out, solutions_dir=None, timeout=600, fast=True, jobs=1):
    """Grades notebooks; writes `out` (CSV), its Markdown summary (`out` with suffix .md) and feedback files.

    Args:
        submissions: paths of notebooks or folders of notebooks.
        out: path of the CSV to write. The summary goes beside it, the feedback files into `<out stem>_feedback/`.
        solutions_dir: folder of solution notebooks, defaults to `solutions/` of the repository.
        timeout: float, defaults to 600. Seconds one notebook may run, kernel start included.
        fast: bool, defaults to True. Set BERTLIB_FAST=1 for the notebooks.
        jobs: int, defaults to 1. Notebooks graded at the same time.

    Returns:
        A `GradeResult`: the list of rows. The reports are written even when grading fails part-way (an internal
        error becomes rows with status "error"), and somewhere else, said on stderr, when `out` cannot be written
        at the end.

    Raises:
        GradingInputError: before any work, when `solutions_dir` has no solution notebook or `out` cannot be written.
    """
    solutions_dir = Path(solutions_dir or resources.REPO_ROOT / "solutions")
    try:
        solution_paths = exercises.solution_notebooks(solutions_dir)
    except FileNotFoundError as error:
        raise GradingInputError(str(error)) from error
    check_writable(out)
    plans = identify_submissions(find_notebooks(submissions), solution_paths)
    rows_by_notebook, details = {}, {}
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=max(1, jobs))
    try:
        futures = {pool.submit(_grade_safely, plan, timeout, fast, details): plan.path for plan in plans}
        for future in concurrent.futures.as_completed(futures):
            rows_by_notebook[futures[future]] = future.result()
    except BaseException:  # e.g. Ctrl-C: the runners are sessions of their own, so stop them here
        pool.shutdown(wait=False, cancel_futures=True)
        with _running_lock:
            for process in list(_running):
                _kill_process_tree(process)
        raise
    finally:
        pool.shutdown(wait=False)
        result = GradeResult(details=details)
        for plan in plans:
            result += rows_by_notebook.get(plan.path) or [
                _row(plan.path, "-", 0, 0, "not-run", "grading was interrupted before this notebook", plan.note)]
        write_reports(result, out)
    return result


def check_writable(out):
    """Raises GradingInputError unless the CSV `out` (and the files beside it) can be written: checked before work."""
    out = Path(out)
    if out.is_dir():
        raise GradingInputError(f"--out {out} is a folder; give the path of the CSV to write, e.g. {out / 'grades.csv'}")
    folder = out.parent
    if not folder.is_dir():
        raise GradingInputError(f"--out {out}: the folder {folder} does not exist (create it first)")
    try:
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".bertlib-write-test-"):
            pass
    except OSError as error:
        raise GradingInputError(f"--out {out}: cannot write in {folder} ({error.strerror or error}); choose a "
                                f"writable place") from error
    for path in (out, out.with_suffix(".md")):
        if path.exists() and not os.access(path, os.W_OK):
            raise GradingInputError(f"--out {out}: {path} exists and is read-only")


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


def identify_submissions(paths, solution_paths):
    """A `Submission` per path: its solution notebook, how it was found, and a note for renamed or duplicated files."""
    plans = [identify(path, solution_paths) for path in paths]
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


def identify(path, solution_paths):
    """Finds the solution notebook of one submission: its metadata, else its file name, else its exercise ids."""
    path = Path(path)
    by_chapter = {}
    for solution in solution_paths:
        match = exercises.NOTEBOOK_NAME.match(solution.name)
        if match:
            by_chapter.setdefault(match.group(1), []).append(solution)
    by_name = matching_solution(path, solution_paths)
    chapter_of_metadata, chapter_of_cells = None, None
    try:
        nb = exercises.read_notebook(path) if path.is_file() else None
    except exercises.ExerciseFormatError:
        nb = None
    if nb is not None:
        chapter = nb.metadata.get("bertlib", {}).get("chapter") if isinstance(nb.metadata.get("bertlib"), dict) else None
        chapter_of_metadata = f"{int(chapter):02d}" if str(chapter).isdigit() else None
        ids = [cell.metadata["bertlib"].get("exercise") for cell in nb.cells
               if isinstance(cell.get("metadata", {}).get("bertlib"), dict)]
        chapters = {str(exercise_id).split(".")[0] for exercise_id in ids if exercise_id}
        if len(chapters) == 1 and next(iter(chapters)).isdigit():
            chapter_of_cells = f"{int(next(iter(chapters))):02d}"
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
            return Submission(path, solution, how, note)
    if by_name is not None:
        return Submission(path, by_name, "its file name")
    return Submission(path, None, "", "")


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


def _grade_safely(plan, timeout, fast, details):
    try:
        return grade_notebook(plan, timeout=timeout, fast=fast, details=details)
    except Exception as error:  # noqa: BLE001 (a grader bug must not cost this notebook its rows)
        return [_row(plan.path, "-", 0, 0, "error", f"internal grader error: {type(error).__name__}: {error}",
                     plan.note)]


def grade_notebook(plan, timeout=600, fast=True, details=None):
    """Returns the rows of one submitted notebook (a `Submission`), one per exercise of its solution notebook."""
    path, details = plan.path, {} if details is None else details
    if plan.solution is None:
        return [_row(path, "-", 0, 0, "error", f"no solution notebook matches {path.name} (expected \"bertlib\": "
                                               f"{{\"chapter\": \"NN\"}} in its metadata, or a file named like "
                                               f"NN_<topic>.ipynb)", plan.note)]
    try:
        solution = exercises.read_notebook(plan.solution)
        exercises.validate_solution_notebook(solution, plan.solution)
    except exercises.ExerciseFormatError as error:
        return [_row(path, "-", 0, 0, "error", f"the solution notebook is invalid: {error}", plan.note)]
    expected = exercises.exercise_cells(solution)

    def rows_for_all(status, message):
        return [_row(path, exercise_id, 0, entry["points"], status, message, plan.note)
                for exercise_id, entry in expected.items()]

    if not path.is_file():
        return rows_for_all("error", f"no such file: {path}")
    try:
        submission = exercises.read_notebook(path)
        found = exercises.exercise_cells(submission, str(path))
    except exercises.ExerciseFormatError as error:
        return rows_for_all("error", f"could not read the notebook: {error}")
    cells, numbers, names = grading_cells(submission, solution)
    run = run_cells(cells, timeout=timeout, fast=fast, lang=_language_of(submission))
    run.cell_names = names
    rows = []
    for exercise_id, entry in expected.items():
        mine = found.get(exercise_id)
        if mine is None or not mine["solution"]:
            status, message = "failed", (f"solution cell for exercise {exercise_id} is missing (keep the exercise's "
                                         f"cells, with their metadata, and write in them)")
        else:
            status, message = _exercise_outcome(exercise_id, numbers[exercise_id], run, timeout)
            edited = _edited_checks(entry, mine, solution, submission)
            if edited:
                message = f"{message} ({edited})"
        details[(str(path), exercise_id)] = message
        rows.append(_row(path, exercise_id, entry["points"] if status == "passed" else 0, entry["points"], status,
                         message, plan.note))
    return rows


def grading_cells(submission, solution):
    """The cells a grading run executes, the run numbers of each exercise's cells, and their names.

    The submission's code cells in order, without its check cells; after the last solution cell of each exercise,
    the instructor's check cells of that exercise (from the solution notebook, hidden tests included).

    Returns:
        (cells, numbers, names): cells are dicts {"source", "kind"} with kind "code" or "check";
        numbers maps an exercise id to the run numbers of its solution and check cells; names maps a run number
        to how a learner finds the cell.
    """
    expected = exercises.exercise_cells(solution)
    found = exercises.exercise_cells(submission)
    last_solution = {max(entry["solution"]): exercise_id for exercise_id, entry in found.items()
                     if entry["solution"] and exercise_id in expected}
    check_indices = {index for entry in found.values() for index in entry["check"]}
    cells, numbers, names = [], {exercise_id: [] for exercise_id in expected}, {}
    for index, cell in enumerate(submission.cells):
        if cell.cell_type != "code" or index in check_indices:
            continue
        info = cell.metadata.get("bertlib") if isinstance(cell.metadata.get("bertlib"), dict) else {}
        names[len(cells)] = f"cell {index + 1}"
        if info.get("role") == "solution" and info.get("exercise") in numbers:
            numbers[info["exercise"]].append(len(cells))
        cells.append({"source": cell.source, "kind": "code"})
        exercise_id = last_solution.get(index)
        if exercise_id is not None:
            for check_index in expected[exercise_id]["check"]:
                names[len(cells)] = f"the check of exercise {exercise_id}"
                numbers[exercise_id].append(len(cells))
                cells.append({"source": solution.cells[check_index].source, "kind": "check"})
    return cells, numbers, names


def _edited_checks(expected, found, solution, submission):
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


# ----------------------------------------------------------------------------------------------- running a notebook

def run_cells(cells, timeout=600, fast=True, lang=None):
    """Runs `cells` (see `grading_cells`) in a fresh kernel under a runner process; returns a NotebookRun.

    The runner reports on a pipe, with an HMAC under a key it got on its stdin, so a line the notebook forges
    into that pipe is ignored. Never raises on a timeout or a dead kernel.
    """
    key = secrets.token_hex(32)
    # The limit counts from now, so the runner's own start-up (slow on a loaded machine) is inside it.
    job = {"key": key, "cells": cells, "deadline": time.time() + float(timeout), "fast": bool(fast),
           "checks_path": str(Path(checks.__file__).resolve())}
    command = _isolation_prefix() + [sys.executable, "-c",
                                     "from bertlib.course.grading import runner_main; runner_main()"]
    started = time.monotonic()
    process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               env=_runner_environment(fast, lang), start_new_session=True)
    with _running_lock:
        _running.add(process)
    try:
        try:
            stdout, stderr = process.communicate(json.dumps(job).encode(), timeout=timeout + RUNNER_GRACE_SECONDS)
        except subprocess.TimeoutExpired:
            _kill_process_tree(process)
            stdout, stderr = process.communicate()
    finally:
        _kill_process_tree(process)
        with _running_lock:
            _running.discard(process)
    report = _verified_report(stdout, key)
    run = NotebookRun(seconds=time.monotonic() - started)
    if report is None:
        run.timed_out = time.monotonic() - started > timeout
        run.output_tail = ANSI_CODES.sub("", stderr.decode("utf-8", "replace"))[-2000:] or "the runner gave no report"
        run.kernel_died = not run.timed_out
        return run
    run.started = report["started"]
    run.results = {int(number): result for number, result in report["results"].items()}
    run.timed_out, run.kernel_died = report["timed_out"], report["kernel_died"]
    run.output_tail = report.get("problem", "") or ANSI_CODES.sub("", stderr.decode("utf-8", "replace"))[-2000:]
    return run


def _signature(key, payload):
    return hmac.new(key.encode(), payload.encode(), hashlib.sha256).hexdigest()


def _verified_report(stdout, key):
    for line in reversed(stdout.decode("utf-8", "replace").splitlines()):
        try:
            message = json.loads(line)
            payload, signature = message["payload"], message["hmac"]
        except (ValueError, KeyError, TypeError):
            continue
        if isinstance(payload, str) and isinstance(signature, str) and hmac.compare_digest(
                signature, _signature(key, payload)):
            return json.loads(payload)
    return None


_ISOLATION = None


def _isolation_prefix():
    """`unshare` into new user and PID namespaces when this machine allows it (tested once), else nothing.

    In its own PID namespace the runner is process 1: every process the notebook starts, however detached, is
    its descendant, cannot see or signal processes outside, and dies with it (`--kill-child`).
    """
    global _ISOLATION
    if _ISOLATION is None:
        prefix = ["unshare", "--user", "--map-current-user", "--pid", "--fork", "--kill-child", "--mount-proc"]
        try:
            ok = shutil.which("unshare") is not None and subprocess.run(
                prefix + ["true"], capture_output=True, timeout=20).returncode == 0
        except (OSError, subprocess.SubprocessError):
            ok = False
        _ISOLATION = prefix if ok and os.environ.get("BERTLIB_GRADE_NO_NAMESPACE") != "1" else []
    return list(_ISOLATION)


def _language_of(notebook):
    """The edition a submission comes from ("zh" for the Chinese one), so its feedback is in that language."""
    info = notebook.metadata.get("bertlib")
    lang = info.get("lang") if isinstance(info, dict) else None
    return lang if lang in ("en", "zh") else None


def _runner_environment(fast, lang=None):
    environment = dict(os.environ)
    if lang:
        environment["BERTLIB_LANG"] = lang
    environment.pop("PYTEST_ADDOPTS", None)
    environment["PYTHONPATH"] = os.pathsep.join(
        filter(None, [str(resources.REPO_ROOT), environment.get("PYTHONPATH")]))
    environment.setdefault("MPLBACKEND", "Agg")
    environment["PYDEVD_DISABLE_FILE_VALIDATION"] = "1"
    if fast:
        environment["BERTLIB_FAST"] = "1"
    else:
        environment.pop("BERTLIB_FAST", None)
    return environment


def runner_main():
    """The runner: reads a job on stdin, runs it in a private folder, kills every descendant, reports on stdout."""
    job = json.loads(sys.stdin.read())
    key = job.pop("key")
    _become_subreaper()
    root = Path(tempfile.mkdtemp(prefix="bertlib-grade-"))
    try:
        report = _run_job(job, root)
    except Exception as error:  # noqa: BLE001 (reported as the run's problem)
        report = {"started": [], "results": {}, "timed_out": False, "kernel_died": True,
                  "problem": f"the grader could not run the notebook: {type(error).__name__}: {error}"}
    finally:
        _kill_descendants()
        shutil.rmtree(root, ignore_errors=True)
    payload = json.dumps(report)
    sys.stdout.write(json.dumps({"payload": payload, "hmac": _signature(key, payload)}) + "\n")
    sys.stdout.flush()


def _become_subreaper():
    """Orphans of the notebook's processes (double forks, `setsid`) become children of this process (Linux)."""
    if sys.platform.startswith("linux"):
        try:
            ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
        except (OSError, AttributeError):
            pass


def _kill_descendants():
    """Stops, then kills every descendant of this process, until none is left (orphans come back as children)."""
    for _ in range(20):
        descendants = psutil.Process().children(recursive=True)
        if not descendants:
            return
        for process in descendants:
            try:
                process.suspend()
            except psutil.Error:
                pass
        for process in descendants:
            try:
                process.kill()
            except psutil.Error:
                pass
        psutil.wait_procs(descendants, timeout=2)


def _run_job(job, root):
    from jupyter_client import KernelManager

    deadline = time.monotonic() + (job["deadline"] - time.time())
    folders = {name: root / name for name in ("work", "runtime", "tmp", "ipython", "config")}
    for folder in folders.values():
        folder.mkdir(mode=0o700)
    environment = dict(os.environ, TMPDIR=str(folders["tmp"]), JUPYTER_RUNTIME_DIR=str(folders["runtime"]),
                       IPYTHONDIR=str(folders["ipython"]), MPLCONFIGDIR=str(folders["config"]))
    report = {"started": [], "results": {}, "timed_out": False, "kernel_died": False}
    manager = KernelManager(kernel_name="python3", connection_file=str(folders["runtime"] / "kernel.json"))
    with open(root / "kernel.log", "wb") as log:
        manager.start_kernel(cwd=str(folders["work"]), env=environment, stdout=log, stderr=log,
                             stdin=subprocess.DEVNULL)
    client = manager.blocking_client()
    client.start_channels()
    try:
        try:
            client.wait_for_ready(timeout=max(1.0, deadline - time.monotonic()))
        except RuntimeError:
            report["kernel_died" if not manager.is_alive() else "timed_out"] = True
            return report
        restore = RESTORE_HELPERS.format(path=job["checks_path"], names=CHECK_HELPERS)
        for number, cell in enumerate(job["cells"]):
            report["started"].append(number)
            if cell["kind"] == "check":
                outcome = _execute(client, manager, restore, deadline, silent=True)
                if outcome["outcome"] == "failed":
                    outcome["ename"], outcome["evalue"] = "GraderError", (
                        f"the grader could not load its check helpers in this kernel ({outcome['ename']}: "
                        f"{outcome['evalue']})")
                    report["results"][number] = outcome
                    continue
                if outcome["outcome"] in ("timeout", "died"):
                    report["timed_out" if outcome["outcome"] == "timeout" else "kernel_died"] = True
                    break
            outcome = _execute(client, manager, cell["source"], deadline)
            if outcome["outcome"] == "timeout":
                report["timed_out"] = True
                break
            if outcome["outcome"] == "died":
                report["kernel_died"] = True
                break
            report["results"][number] = outcome
        return report
    finally:
        client.stop_channels()
        try:
            manager.shutdown_kernel(now=True)
        except Exception:  # noqa: BLE001 (the kernel may be gone already; the descendants are killed next)
            pass
        manager.cleanup_resources()


def _execute(client, manager, source, deadline, silent=False):
    """Runs one cell; its result is taken from the kernel's reply messages, never from files."""
    message_id = client.execute(source, silent=silent, store_history=not silent, allow_stdin=False,
                                stop_on_error=False)
    reply, idle, output = None, silent, []
    while reply is None or not idle:
        if time.monotonic() > deadline:
            return {"outcome": "timeout"}
        if not manager.is_alive():
            return {"outcome": "died"}
        try:
            message = client.get_iopub_msg(timeout=0.1)
            if message["parent_header"].get("msg_id") == message_id:
                kind, content = message["msg_type"], message["content"]
                if kind == "stream":
                    output.append(content.get("text", ""))
                elif kind == "status" and content.get("execution_state") == "idle":
                    idle = True
        except queue.Empty:
            pass
        if reply is None:
            try:
                message = client.get_shell_msg(timeout=0.01)
                if message["parent_header"].get("msg_id") == message_id:
                    reply = message["content"]
            except queue.Empty:
                pass
    if reply.get("status") == "ok":
        return {"outcome": "passed", "ename": None, "evalue": None, "output": "".join(output)[-2000:]}
    return {"outcome": "failed", "ename": reply.get("ename") or "Error", "evalue": reply.get("evalue") or "",
            "output": "".join(output)[-2000:]}


def _kill_process_tree(process):
    """Kills a runner, its process group and every descendant it still has."""
    try:
        descendants = psutil.Process(process.pid).children(recursive=True)
    except psutil.NoSuchProcess:
        descendants = []
    try:
        if os.getpgid(process.pid) != os.getpgrp():
            os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    for child in [*descendants, process]:
        try:
            child.kill()
        except (psutil.NoSuchProcess, ProcessLookupError):
            pass
    process.wait()
    psutil.wait_procs(descendants, timeout=5)


# ------------------------------------------------------------------------------------------------------- outcomes

def _exercise_outcome(exercise_id, cell_numbers, run, timeout):
    """(status, message) of an exercise from the results of its cells, in order."""
    for number in cell_numbers:
        result = run.results.get(number)
        if result is None:
            return _unfinished(number, run, timeout)
        if result["outcome"] == "skipped":
            return "not-run", f"{run.name(number)} was skipped"
        if result["outcome"] == "failed":
            name, value = result.get("ename"), result.get("evalue") or ""
            if name in CHECK_FAILURES:
                return "failed", value or f"{name} in {run.name(number)}"
            if name == "NotImplementedError":
                return "failed", f"not attempted: {value}"
            if name:
                return "error", f"{name}: {value} ({run.name(number)})"
            return "error", f"{run.name(number)} failed: {result.get('message')}"
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
    return "error", f"{run.name(number)} was not run: {run.output_tail[-300:]}"


def _one_line(text):
    text = " | ".join(line.strip() for line in ANSI_CODES.sub("", text).strip().splitlines() if line.strip())
    return text if len(text) <= MESSAGE_LIMIT else text[:MESSAGE_LIMIT] + " …"


def _join(first, second):
    return f"{first}; {second}" if first and second else first or second


def _row(path, exercise_id, score, max_score, status, message, note=""):
    return {"notebook": str(path), "exercise": exercise_id, "score": score, "max_score": max_score,
            "status": status, "message": _one_line(message), "note": note}


# -------------------------------------------------------------------------------------------------------- reports

def write_reports(rows, out):
    """Writes the CSV `out`, the Markdown summary beside it (.md) and one feedback file per notebook, atomically.

    When `out` cannot be written (it became read-only during the run, the disk filled up), the reports go to a new
    temporary folder instead, and a message on stderr says where. Returns the paths written.
    """
    out = Path(out)
    details = getattr(rows, "details", {})
    try:
        written = _write_reports(rows, details, out)
    except OSError as error:
        fallback = Path(tempfile.mkdtemp(prefix="bertlib-grades-")) / out.name
        written = _write_reports(rows, details, fallback)
        message = (f"could not write the reports to {out} ({error.strerror or error}); they were written to "
                   f"{fallback.parent} instead")
        print(f"warning: {message}", file=sys.stderr)
        if isinstance(rows, GradeResult):
            rows.fallback = message
    if isinstance(rows, GradeResult):
        rows.written = written
    return written


def _write_reports(rows, details, out):
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=COLUMNS, lineterminator="\n", extrasaction="ignore")
    writer.writeheader()
    writer.writerows(rows)
    write_text_atomically(out, buffer.getvalue())
    write_text_atomically(out.with_suffix(".md"), markdown_summary(rows))
    written = [out, out.with_suffix(".md")]
    for notebook, path in feedback_paths(rows, out).items():
        write_text_atomically(path, feedback(notebook, [row for row in rows if row["notebook"] == notebook], details))
        written.append(path)
    return written


def feedback_paths(rows, out):
    """`{notebook: path of its feedback file}`, in `<out stem>_feedback/`, named after the notebook's path."""
    notebooks = list(dict.fromkeys(row["notebook"] for row in rows))
    folder = Path(out).parent / f"{Path(out).stem}_feedback"
    try:
        common = Path(os.path.commonpath([str(Path(name).resolve().parent) for name in notebooks])) if notebooks else None
    except ValueError:
        common = None
    paths = {}
    for notebook in notebooks:
        resolved = Path(notebook).resolve()
        relative = resolved.relative_to(common) if common and resolved.is_relative_to(common) else Path(resolved.name)
        stem = re.sub(r"[^A-Za-z0-9_.-]+", "_", "__".join(relative.with_suffix("").parts)) or "notebook"
        candidate, count = folder / f"{stem}.md", 2
        while candidate in paths.values():
            candidate, count = folder / f"{stem}_{count}.md", count + 1
        paths[notebook] = candidate
    return paths


def feedback(notebook, rows, details=None):
    """The Markdown feedback for one notebook: its total, then each exercise's score, status and full message."""
    details = details or {}
    score, maximum = sum(row["score"] for row in rows), sum(row["max_score"] for row in rows)
    lines = [f"# Feedback on {Path(notebook).name}", "", f"Notebook: `{notebook}`", "",
             f"**Score: {score} of {maximum}**", ""]
    notes = list(dict.fromkeys(row.get("note") for row in rows if row.get("note")))
    lines += [f"> Note: {note}" for note in notes] + ([""] if notes else [])
    for row in rows:
        title = "the notebook" if row["exercise"] == "-" else f"Exercise {row['exercise']}"
        lines += [f"## {title}: {row['status']} ({row['score']} of {row['max_score']})", ""]
        message = details.get((row["notebook"], row["exercise"]), row["message"])
        lines += ["```", ANSI_CODES.sub("", message).strip(), "```", ""]
    return "\n".join(lines)


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
    lines += ["", "## Exercises", "", "| " + " | ".join(COLUMNS) + " |", "|---|---|---:|---:|---|---|---|"]
    lines += ["| " + " | ".join(cell(row.get(column, "")) for column in COLUMNS) + " |" for row in rows]
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------------------------------------------------ CLI

def add_arguments(parser):
    parser.add_argument("submissions", nargs="+", type=Path, metavar="SUBMISSION",
                        help="a submitted .ipynb, or a folder of them (searched recursively)")
    parser.add_argument("--out", type=Path, default=Path("grades.csv"),
                        help="CSV to write (default grades.csv); the Markdown summary goes beside it (.md), the "
                             "feedback files into <name>_feedback/")
    parser.add_argument("--solutions", type=Path, default=resources.REPO_ROOT / "solutions",
                        help="folder of solution notebooks, the list of exercises, points and checks "
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
    missing = [str(path) for path in args.submissions if not Path(path).exists()]
    if missing:
        print(f"error: no such submission: {', '.join(missing)} (give notebooks or folders of notebooks)")
        return 2
    if not find_notebooks(args.submissions):
        print(f"error: no .ipynb notebook in {', '.join(map(str, args.submissions))}")
        return 2
    try:
        rows = grade(args.submissions, args.out, solutions_dir=args.solutions, timeout=args.timeout,
                     fast=args.fast, jobs=args.jobs)
    except GradingInputError as error:
        print(f"error: {error}")
        return 2
    score, maximum = sum(row["score"] for row in rows), sum(row["max_score"] for row in rows)
    where = rows.written[0].parent if rows.written else args.out.parent
    print(f"graded {len({row['notebook'] for row in rows})} notebooks: {score} of {maximum} points; "
          f"wrote {len(rows.written)} reports in {where}" + (f" ({rows.fallback})" if rows.fallback else ""))
    internal = any(row["message"].startswith("internal grader error") for row in rows)
    return 1 if internal or rows.fallback else 0
