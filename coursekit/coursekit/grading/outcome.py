"""The one outcome type the grader's parts share: the runner gives each step one, an exercise takes the first that
did not pass, a row of the report carries the exercise's.

    passed   every solution cell and every instructor check of the exercise ran without error
    failed   a check rejected the answer, the stub was left (NotImplementedError), or the solution cell is missing
    error    the exercise's code raised another exception, the kernel died while running it, the notebook could
             not be read or graded, or the grader itself failed (then `grader_fault` is set and the command exits 1);
             a cell that raised the library's "not on this machine" error (a dataset, the checkpoint) is the grading
             machine's fault, and so is every exercise that did not pass after it ("not graded: the grading
             machine lacks ...")
    timeout  the notebook passed its time limit before the exercise finished
    not-run  the exercise's cells never ran (the kernel had died, or hit a limit, in an earlier cell)
"""

import enum
import re
from dataclasses import dataclass, field

from coursekit.grading import needs

ANSI_CODES = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
MACHINE_LACKS = "the grading machine lacks "  # starts the message of a step that failed for want of data
MESSAGE_LIMIT = 500  # characters of a message kept in the CSV (the feedback file keeps DETAIL_LIMIT)
DETAIL_LIMIT = 20_000


class Status(str, enum.Enum):
    PASSED = "passed"
    FAILED = "failed"
    ERROR = "error"
    TIMEOUT = "timeout"
    NOT_RUN = "not-run"


STATUSES = tuple(status.value for status in Status)


@dataclass(frozen=True)
class Outcome:
    """A status and the message a learner reads (the CSV keeps its first MESSAGE_LIMIT characters on one line)."""

    status: Status
    message: str = ""
    grader_fault: bool = False  # the grader, not the submission, failed: the command exits 1

    def __post_init__(self):
        object.__setattr__(self, "status", Status(self.status))
        object.__setattr__(self, "message", ANSI_CODES.sub("", str(self.message))[:DETAIL_LIMIT])

    @property
    def passed(self):
        return self.status is Status.PASSED

    def with_note(self, note):
        return Outcome(self.status, f"{self.message} ({note})" if note else self.message, self.grader_fault)

    def one_line(self):
        text = " | ".join(line.strip() for line in self.message.strip().splitlines() if line.strip())
        return text if len(text) <= MESSAGE_LIMIT else text[:MESSAGE_LIMIT] + " …"

    def to_json(self):
        return {"status": self.status.value, "message": self.message, "grader_fault": self.grader_fault}

    @classmethod
    def from_json(cls, data):
        """Reads what a runner reported; anything malformed is the grader's own fault, never a pass."""
        try:
            return cls(Status(data["status"]), str(data.get("message", "")), bool(data.get("grader_fault", False)))
        except (KeyError, TypeError, ValueError) as error:
            return cls(Status.ERROR, f"the runner's report is malformed ({error!r})", grader_fault=True)


PASSED = Outcome(Status.PASSED)


class Ending(str, enum.Enum):
    """How a notebook's run ended."""

    FINISHED = "finished"  # every step ran
    TIMED_OUT = "timed out"  # the notebook passed --timeout
    KERNEL_DIED = "kernel died"  # os._exit, a crash
    LIMIT = "limit"  # the sandbox stopped it: memory, output, files or processes (`detail` says which)
    GRADER_FAULT = "grader fault"  # the runner failed or gave no report (`detail` says why)


@dataclass
class NotebookRun:
    """What happened when one notebook ran: an outcome per step that finished, and how the run ended."""

    outcomes: dict = field(default_factory=dict)  # step number -> Outcome
    started: list = field(default_factory=list)  # step numbers in the order they started
    ending: Ending = Ending.FINISHED
    detail: str = ""  # the limit that stopped it, or what went wrong in the grader
    seconds: float = 0.0
    step_names: dict = field(default_factory=dict)  # step number -> "cell 8" / "the check of exercise 3.2"

    def name(self, number):
        return self.step_names.get(number, f"step {number}")

    @property
    def running(self):
        """The step that had started but not finished when the run ended, or None."""
        last = self.started[-1] if self.started else None
        return last if last is not None and last not in self.outcomes else None

    def to_json(self):
        return {"outcomes": {str(number): outcome.to_json() for number, outcome in self.outcomes.items()},
                "started": list(self.started), "ending": self.ending.value, "detail": self.detail}

    @classmethod
    def from_json(cls, data):
        try:
            return cls(outcomes={int(number): Outcome.from_json(outcome) for number, outcome in data["outcomes"].items()},
                       started=[int(number) for number in data["started"]], ending=Ending(data["ending"]),
                       detail=str(data.get("detail", "")))
        except (KeyError, TypeError, ValueError, AttributeError) as error:
            return cls(ending=Ending.GRADER_FAULT, detail=f"the runner's report is malformed ({error!r})")


def exercise_outcome(exercise_id, step_numbers, run, timeout):
    """The outcome of an exercise from its steps (solution cells, then instructor checks), in order: the first one
    that did not pass, else passed; a step that never finished takes its outcome from how the run ended. When the
    grading machine lacked something in that step or an earlier one (a set-up cell's dataset), the exercise is
    not graded, at the machine's fault: its NameError or failed check says nothing about the learner."""
    for number in step_numbers:
        outcome = run.outcomes.get(number)
        if outcome is None or not outcome.passed:
            lacked = machine_fault(run, number)
            if lacked is not None and lacked is not outcome:
                return Outcome(Status.ERROR, f"not graded: {lacked.message}; fetch it and grade again",
                               grader_fault=True)
            return outcome if outcome is not None else unfinished(number, run, timeout)
    return Outcome(Status.PASSED, f"exercise {exercise_id} passed")


def machine_fault(run, number):
    """The first outcome up to step `number` that failed because the grading machine lacks something, or None."""
    for step in sorted(run.outcomes):
        outcome = run.outcomes[step]
        if step <= number and outcome.grader_fault and outcome.message.startswith(MACHINE_LACKS):
            return outcome
    return None


def unfinished(number, run, timeout):
    """The outcome of a step that has no result, from how the run ended."""
    running = run.running
    where = run.name(running) if running is not None else "starting the kernel"
    if run.ending is Ending.TIMED_OUT:
        if number == running:
            return Outcome(Status.TIMEOUT, f"{run.name(number)} was still running after the {timeout:g} s limit "
                                           f"(an endless loop?)")
        return Outcome(Status.TIMEOUT, f"not reached: the notebook hit its {timeout:g} s limit in {where}")
    if run.ending is Ending.KERNEL_DIED:
        if number == running:
            return Outcome(Status.ERROR, f"the kernel died while running {run.name(number)} (os._exit, a crash?)")
        return Outcome(Status.NOT_RUN, f"not run: the kernel died earlier, in {where}")
    if run.ending is Ending.LIMIT:
        if number == running:
            return Outcome(Status.ERROR, f"stopped while running {run.name(number)}: {run.detail}")
        return Outcome(Status.NOT_RUN, f"not run: the notebook was stopped earlier, in {where}: {run.detail}")
    if run.ending is Ending.GRADER_FAULT:
        return Outcome(Status.ERROR, f"the grader could not run the notebook: {run.detail}", grader_fault=True)
    return Outcome(Status.ERROR, f"{run.name(number)} was not run although the notebook finished", grader_fault=True)


def cell_outcome(error_name, error_value, step_name):
    """The outcome of a step that raised `error_name: error_value` (the rules of the module docstring)."""
    value = str(error_value or "")
    lacked = needs.lacking(error_name, value)
    if lacked:
        return Outcome(Status.ERROR, f"{MACHINE_LACKS}{lacked} ({step_name} raised {error_name})", grader_fault=True)
    if error_name in ("CheckFailed", "AssertionError"):
        return Outcome(Status.FAILED, value or f"{error_name} in {step_name}")
    if error_name == "NotImplementedError":
        return Outcome(Status.FAILED, f"not attempted: {value}")
    return Outcome(Status.ERROR, f"{error_name}: {value} ({step_name})")
