"""`coursekit grade`: run submitted exercise notebooks, each in a sandbox, and grade them with the instructor's checks.

Usage::

    coursekit grade submissions/ --out grades.csv [--solutions solutions] [--timeout 600] [--jobs 1] [--memory 4]
                  [--no-fast] [--unsafe-no-sandbox] [--format csv|gradescope|canvas] [--roster export.csv]
    coursekit gradescope-autograder autograder/    # a Gradescope autograder that runs this grader (`autograder`)

One CSV row per exercise (columns: notebook, exercise, score, max_score, status, message, note), a Markdown
summary beside it, and one feedback file per notebook. The parts, in the order a run uses them:

- `plan`: find the notebooks, read each within bounds, match it to its solution notebook, and cut its run into
  steps (the learner's cells; the instructor's checks) and the checker's context;
- `runner` (one process per notebook): starts the kernel in a bubblewrap sandbox (`sandbox`), runs the learner's
  cells there, and runs the instructor's checks itself (`checker`), reading the learner's names from the kernel as
  values (`wire`): no check runs in the learner's process, so nothing there can make one pass;
- `outcome`: the one typed outcome (`Outcome`: a `Status` and a message) that steps, exercises and rows share;
- `report`: the CSV, the summary and the feedback files, always written; `formats`: the same rows as Gradescope's
  results.json or a Canvas gradebook import;
- `registry`: the machine's grading runs, which keeps an unsafe run (`--unsafe-no-sandbox`) from any other.

`grader.grade` runs them; `cli` is the command line. docs/grading.md has the threat model and its tests.
"""

from coursekit.grading.cli import add_arguments, run
from coursekit.grading.grader import (
                                        GradingInputError,
                                        Options,
                                        check_writable,
                                        grade,
                                        grade_notebook,
                                        run_cells,
)
from coursekit.grading.outcome import STATUSES, Ending, NotebookRun, Outcome, Status, exercise_outcome
from coursekit.grading.plan import (
                                        Plan,
                                        Step,
                                        Submission,
                                        find_notebooks,
                                        grading_cells,
                                        identify,
                                        identify_submissions,
                                        matching_solution,
                                        read_submission,
)
from coursekit.grading.report import (
                                        COLUMNS,
                                        Grade,
                                        GradeResult,
                                        feedback,
                                        feedback_paths,
                                        markdown_summary,
                                        write_reports,
)
from coursekit.grading.sandbox import Limits, SandboxUnavailable

__all__ = ["COLUMNS", "STATUSES", "Ending", "Grade", "GradeResult", "GradingInputError", "Limits", "NotebookRun",
           "Options", "Outcome", "Plan", "SandboxUnavailable", "Status", "Step", "Submission", "add_arguments",
           "check_writable", "exercise_outcome", "feedback", "feedback_paths", "find_notebooks", "grade",
           "grade_notebook", "grading_cells", "identify", "identify_submissions", "markdown_summary",
           "matching_solution", "read_submission", "run", "run_cells", "write_reports"]
