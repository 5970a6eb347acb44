"""A grading run: check the inputs, plan each notebook, run each in its own runner, turn runs into grades, report.

Nothing a submission does can stop the run: every notebook is graded in a runner process of its own, an exception of
the grader itself becomes that notebook's rows (status error, `grader_fault`), and the reports are written in a
`finally`, also when grading is interrupted.
"""

import concurrent.futures
import dataclasses
import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import psutil

from coursekit import course, exercises
from coursekit.grading import formats, needs, registry, sandbox
from coursekit.grading.outcome import Ending, NotebookRun, Outcome, Status, exercise_outcome
from coursekit.grading.plan import (
    SubmissionError,
    edited_checks,
    find_notebooks,
    grading_cells,
    identify_submissions,
    language_of,
)
from coursekit.grading.report import Grade, GradeResult, display_name, write_reports

RUNNER_GRACE_SECONDS = 60  # beyond --timeout, for the runner to stop the kernel and report
MAX_REPORT_BYTES = 16 * 2**20

_running = set()  # runner processes in flight, killed if grading is interrupted
_running_lock = threading.Lock()


class GradingInputError(ValueError):
    """A grading run that cannot start: a missing submission or solutions folder, an output it cannot write, data
    the notebooks need and this machine lacks, or no sandbox (the message names the fix)."""


@dataclass(frozen=True)
class Options:
    """How each notebook runs."""

    timeout: float = 600.0  # seconds one notebook may run, kernel start included
    fast: bool = True  # the course's fast_variable=1 for the notebooks
    unsafe: bool = False  # no sandbox (--unsafe-no-sandbox)
    limits: sandbox.Limits = sandbox.Limits()
    read_only_paths: tuple = field(default_factory=tuple)  # what the sandbox shows the kernel
    registry_fds: tuple = field(default_factory=tuple)  # the run's registration, which its runners hold too


def grade(submissions, out, solutions_dir=None, timeout=600, fast=True, jobs=1, unsafe=False, limits=None,
          report=None):
    """Grades notebooks; writes `out` (CSV), its Markdown summary (`out` with suffix .md) and feedback files, or
    with `report` another format (formats.py: Gradescope's results.json, a Canvas gradebook).

    Args:
        submissions: paths of notebooks or folders of notebooks.
        out: path of the CSV to write. The summary goes beside it, the feedback files into `<out stem>_feedback/`.
        solutions_dir: folder of solution notebooks, defaults to `solutions/` of the repository.
        timeout: float, defaults to 600. Seconds one notebook may run, kernel start included.
        fast: bool, defaults to True. Set the course's `fast_variable` (BERTLIB_FAST) to 1 for the notebooks.
        jobs: int, defaults to 1. Notebooks graded at the same time.
        unsafe: bool, defaults to False. Run the kernels without a sandbox (`--unsafe-no-sandbox`).
        limits: `sandbox.Limits` or None (the defaults).
        report: `formats.ReportFormat` or None (the CSV).

    Returns:
        A `GradeResult`: the list of `Grade` rows. The reports are written even when grading fails part-way, and
        somewhere else, said on stderr, when `out` cannot be written at the end.

    Raises:
        GradingInputError: before any work, when `solutions_dir` has no solution notebook, `out` cannot be
            written, a Canvas roster does not place every notebook, this machine lacks a dataset, the checkpoint or
            a module that the submissions' solution notebooks need (each named with the command that fetches it),
            the sandbox cannot start here (the message names the fix, or --unsafe-no-sandbox), or an unsafe run
            would meet another grading run (registry.py).
    """
    with course.using(solutions_dir):  # a course's solutions graded from outside it: its settings still apply
        return _grade(submissions, out, solutions_dir, timeout, fast, jobs, unsafe, limits,
                      report or formats.ReportFormat())


def _grade(submissions, out, solutions_dir, timeout, fast, jobs, unsafe, limits, report):
    started = time.monotonic()
    solutions_dir = Path(solutions_dir or course.current().solutions)
    try:
        solution_paths = exercises.solution_notebooks(solutions_dir)
    except FileNotFoundError as error:
        raise GradingInputError(str(error)) from error
    for path in report.paths(out):
        check_writable(path)
    notebooks = find_notebooks(submissions)
    plans = identify_submissions(notebooks, solution_paths)
    try:
        placement = formats.match_students(plans, report.roster, submissions) if report.format == "canvas" else None
    except formats.FormatError as error:
        raise GradingInputError(str(error)) from error
    check_needs(plans)
    options = Options(float(timeout), bool(fast), bool(unsafe), limits or sandbox.Limits())
    if not unsafe:
        try:
            exposed = sandbox.exposed_paths(hidden=[solutions_dir, Path(out).resolve().parent, *notebooks])
            sandbox.probe(exposed)
        except sandbox.SandboxUnavailable as error:
            raise GradingInputError(f"cannot grade safely here: {error}") from error
        options = dataclasses.replace(options, read_only_paths=tuple(map(str, exposed)))
    try:  # an unsafe run beside any other could reach it: refused while the other is active
        registration = registry.register_run(unsafe)
    except registry.RunConflict as error:
        raise GradingInputError(f"cannot grade now: {error}") from error
    options = dataclasses.replace(options, registry_fds=registration.fds)
    grades_by_notebook = {}
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=max(1, jobs))
    try:
        futures = {pool.submit(_grade_safely, plan, options): plan.path for plan in plans}
        for future in concurrent.futures.as_completed(futures):
            grades_by_notebook[futures[future]] = future.result()
            registration.check()
    except BaseException:  # e.g. Ctrl-C: the runners are sessions of their own, so stop them here
        pool.shutdown(wait=False, cancel_futures=True)
        with _running_lock:
            for process in list(_running):
                _kill_process_tree(process)
        raise
    finally:
        pool.shutdown(wait=False)
        result = GradeResult()
        for plan in plans:
            result += grades_by_notebook.get(plan.path) or [
                Grade(display_name(plan.path), "-", 0,
                      Outcome(Status.NOT_RUN, "grading was interrupted before this notebook"), plan.note)]
        try:
            result = _marked_if_overlapped(result, registration.check(), unsafe)
            result.isolation, result.seconds = isolation_text(unsafe), time.monotonic() - started
            write_reports(result, out, report.files(result, placement))
        finally:  # also when the reports cannot be written: a long-lived process must not keep the run's name
            registration.release()
    return result


def isolation_text(unsafe):
    """What kept the notebooks apart, in the words a results file gives it (Gradescope's `output`)."""
    if unsafe:
        return ("Graded WITHOUT a sandbox (--unsafe-no-sandbox): the notebook ran as the grading user, with its files "
                "and network.")
    return ("Graded in a bubblewrap sandbox: the notebook ran as an unprivileged user in namespaces of its own, "
            "offline, with a read-only view of the course; the checks ran outside it.")


def _marked_if_overlapped(result, overlaps, unsafe):
    """`result` with a note on every row when another run that rules this one out was seen during it (registry.py):
    an unsafe run's notebooks could have reached this run, so its grades are not to be trusted."""
    if not overlaps:
        return result
    who = "; ".join(overlaps)
    text = (f"graded while another grading run was active beside this --unsafe-no-sandbox run ({who}); grade again"
            if unsafe else f"graded while a run with --unsafe-no-sandbox was active on this machine ({who}): its "
                           f"notebooks ran outside any sandbox and could have changed these grades; grade again")
    marked = GradeResult(dataclasses.replace(grade, note="; ".join(filter(None, [grade.note, text])))
                         for grade in result)
    marked.overlaps = list(overlaps)
    return marked


def check_writable(out):
    """Raises GradingInputError unless the CSV `out` (and the files beside it) can be written: checked before work."""
    out = Path(out)
    if out.is_dir():
        raise GradingInputError(f"--out {out} is a folder; give the path of the CSV to write, e.g. {out / 'grades.csv'}")
    folder = out.parent
    if not folder.is_dir():
        raise GradingInputError(f"--out {out}: the folder {folder} does not exist (create it first)")
    try:
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".coursekit-write-test-"):
            pass
    except OSError as error:
        raise GradingInputError(f"--out {out}: cannot write in {folder} ({error.strerror or error}); choose a "
                                f"writable place") from error
    for path in (out, out.with_suffix(".md")):
        if path.exists() and not os.access(path, os.W_OK):
            raise GradingInputError(f"--out {out}: {path} exists and is read-only")


def check_needs(plans):
    """Raises GradingInputError, naming each missing thing and its command, when this machine lacks a dataset, the
    checkpoint or a module that the solution notebooks of `plans` need (needs.py): checked before any kernel."""
    try:
        lacking = needs.missing(plan.solution for plan in plans if plan.solution is not None)
    except ValueError as error:  # e.g. a broken registry of the course's datasets
        raise GradingInputError(f"cannot tell whether this machine has the notebooks' data: {error}") from error
    if lacking:
        raise GradingInputError(needs.refusal(lacking))


def _grade_safely(plan, options):
    try:
        return grade_notebook(plan, options)
    except Exception as error:  # noqa: BLE001 (a grader bug must not cost this notebook its rows)
        return [Grade(display_name(plan.path), "-", 0, Outcome(
            Status.ERROR, f"internal grader error: {type(error).__name__}: {error}", grader_fault=True), plan.note)]


def grade_notebook(plan, options=Options()):
    """The grades of one submitted notebook (a `plan.Submission`), one per exercise of its solution notebook."""
    name = display_name(plan.path)
    note = plan.note
    if options.unsafe:
        note = "; ".join(filter(None, [note, "graded without a sandbox (--unsafe-no-sandbox)"]))
    if plan.solution is None:
        return [Grade(name, "-", 0, Outcome(Status.ERROR, plan.problem or (
            f"no solution notebook matches {Path(name).name} (expected \"{course.setting('metadata_key')}\": "
            f"{{\"chapter\": \"NN\"}} in its "
            f"metadata, or a file named like NN_<topic>.ipynb)")), note)]
    try:
        solution = exercises.read_notebook(plan.solution)
        exercises.validate_solution_notebook(solution, plan.solution)
    except exercises.ExerciseFormatError as error:
        return [Grade(name, "-", 0, Outcome(Status.ERROR, f"the solution notebook is invalid: {error}",
                                            grader_fault=True), note)]
    expected = exercises.exercise_cells(solution)

    hidden = {exercise_id: _has_hidden_tests(solution, entry) for exercise_id, entry in expected.items()}

    def for_all(outcome):
        return [Grade(name, exercise_id, entry["points"], outcome, note, hidden[exercise_id])
                for exercise_id, entry in expected.items()]

    try:
        if plan.problem:
            raise SubmissionError(plan.problem)
        submission = plan.notebook
        found = exercises.exercise_cells(submission, Path(name).name)
    except (SubmissionError, exercises.ExerciseFormatError) as error:
        message = str(error) if isinstance(error, SubmissionError) else f"could not read the notebook: {error}"
        return for_all(Outcome(Status.ERROR, message))
    steps = grading_cells(submission, solution)
    run = run_cells(steps, options, lang=language_of(submission))
    run.step_names = steps.step_names
    grades = []
    for exercise_id, entry in expected.items():
        mine = found.get(exercise_id)
        if mine is None or not mine["solution"]:
            outcome = Outcome(Status.FAILED, f"solution cell for exercise {exercise_id} is missing (keep the "
                                             f"exercise's cells, with their metadata, and write in them)")
        else:
            outcome = exercise_outcome(exercise_id, steps.exercise_steps[exercise_id], run, options.timeout)
            outcome = outcome.with_note(edited_checks(entry, mine, solution, submission))
        grades.append(Grade(name, exercise_id, entry["points"], outcome, note, hidden[exercise_id]))
    return grades


def _has_hidden_tests(solution, entry):
    return any(exercises.strip_hidden_tests(solution.cells[index].source) != solution.cells[index].source
               for index in entry["check"])


# ------------------------------------------------------------------------------------------------- the runner

def run_cells(plan, options=Options(), lang=None):
    """Runs a `Plan` in a runner process (runner.py); returns its `NotebookRun`. Never raises on a timeout or a
    dead kernel; a runner that gives no report is a grader fault (its log goes to stderr, never into feedback)."""
    started = time.monotonic()
    job = {"steps": [dataclasses.asdict(step) for step in plan.steps],
           "context": [dataclasses.asdict(cell) for cell in plan.context],
           # the limit counts from now, so the runner's own start-up (slow on a loaded machine) is inside it
           "deadline": time.time() + options.timeout, "fast": options.fast, "lang": lang, "unsafe": options.unsafe,
           "limits": dataclasses.asdict(options.limits), "read_only_paths": list(options.read_only_paths),
           "cpu_seconds": options.timeout * (os.cpu_count() or 1) + 60}
    report_read, report_write = os.pipe()
    with tempfile.TemporaryFile() as log:
        process = subprocess.Popen([sys.executable, "-m", "coursekit.grading.runner", str(report_write)],
                                   stdin=subprocess.PIPE, stdout=log, stderr=subprocess.STDOUT,
                                   pass_fds=(report_write, *options.registry_fds),
                                   env=_runner_environment(options.fast, lang),
                                   start_new_session=True)
        os.close(report_write)
        with _running_lock:
            _running.add(process)
        try:
            try:
                process.stdin.write(json.dumps(job).encode())
                process.stdin.close()
            except BrokenPipeError:
                pass
            data = _read_bounded(report_read, started + options.timeout + RUNNER_GRACE_SECONDS)
        finally:
            os.close(report_read)
            _kill_process_tree(process)
            with _running_lock:
                _running.discard(process)
        seconds = time.monotonic() - started
        try:
            run = NotebookRun.from_json(json.loads(data))
        except ValueError:
            if seconds > options.timeout:
                run = NotebookRun(ending=Ending.TIMED_OUT)
            else:
                log.seek(max(0, log.seek(0, os.SEEK_END) - 3000))
                tail = log.read().decode("utf-8", "replace")
                print(f"coursekit grade: a runner exited with code {process.returncode} without a report; its log "
                      f"ends:\n{tail}", file=sys.stderr)
                run = NotebookRun(ending=Ending.GRADER_FAULT, detail=f"the runner exited with code "
                                                                     f"{process.returncode} without a report (its "
                                                                     f"log is on the grader's stderr)")
    run.seconds = seconds
    return run


def _read_bounded(descriptor, deadline, limit=MAX_REPORT_BYTES):
    """What a runner wrote to its report pipe, until it closes it, the deadline passes or `limit` bytes came."""
    chunks, size = [], 0
    while size <= limit:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return b""
        ready, _, _ = select.select([descriptor], [], [], min(remaining, 1.0))
        if not ready:
            continue
        chunk = os.read(descriptor, 65536)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
        size += len(chunk)
    return b""


def _runner_environment(fast, lang=None):
    """The grader's environment for its runners (trusted; the kernel gets only sandbox.ENVIRONMENT_PASSED)."""
    environment = dict(os.environ)
    environment.pop("PYTEST_ADDOPTS", None)
    environment["PYTHONPATH"] = os.pathsep.join(
        filter(None, [sandbox.package_path(), environment.get("PYTHONPATH")]))
    environment.setdefault("MPLBACKEND", "Agg")
    environment["PYDEVD_DISABLE_FILE_VALIDATION"] = "1"
    root = course.find_root()
    if root is not None:  # the runner reads the same course (its hooks and settings)
        environment["COURSEKIT_ROOT"] = str(root)
    if lang:
        environment[course.setting("language_variable")] = lang
    if fast:
        environment[course.setting("fast_variable")] = "1"
    else:
        environment.pop(course.setting("fast_variable"), None)
    return environment


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
