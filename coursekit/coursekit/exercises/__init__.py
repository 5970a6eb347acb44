"""Exercises from solution notebooks, and the measure of their checks: `coursekit exercises build|check|test`.

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
- A check cell calls the course's check helpers (this repository's: `bertlib_course.checks`) and ends with
  `done("3.2")`.
- No cell outside an exercise may use a name defined in a solution region: in `exercises/` it would fail.

In `exercises/`, solution and check cells carry nbval's `raises-exception` tag (the stub raises, and the check
then meets missing code), outputs and execution counts are cleared, metadata is reduced to what the course
uses, and the title's "(solutions)" reads "(exercises)" (Chinese: "（参考答案）" or "——参考答案" reads "（练习）" or
"——练习"), so the file is a pure function of the solution notebook.

`coursekit exercises test` proves each check on wrong answers: a check must reject every wrong answer of the
catalogue with a failed check (a ✘ message), never by crashing on it (a check that meets a `ValueError` in the
learner's value has not told the learner what is wrong).

The parts:

- `convention`: the rules a solution notebook follows, `exercise_cells`, `ExerciseFormatError`;
- `notebooks`: notebook files read and written byte-stably, a code cell as plain Python;
- `fingerprints`: whether stored outputs belong to a notebook's code;
- `generate`: exercise notebooks built from solution notebooks (`build`, `differences`);
- `answers`, `lint`, `mutation`: the catalogue of wrong answers, the static lints of check cells, and the
  mutation tests that run them;
- `cli`: the command line.
"""

from coursekit.exercises.answers import (
    MIN_WRONG_ANSWERS,
    load_right_answers,
    load_wrong_answers,
    wrong_answer_source,
    wrong_answers_path,
)
from coursekit.exercises.cli import add_arguments, run
from coursekit.exercises.convention import (
    BEGIN_HIDDEN,
    BEGIN_MARKER,
    END_HIDDEN,
    END_MARKER,
    NOTEBOOK_NAME,
    ROLES,
    ExerciseFormatError,
    exercise_cells,
    notebook_ids,
    solution_notebooks,
    validate_solution_notebook,
)
from coursekit.exercises.fingerprints import body_fingerprint, code_fingerprint, outputs_belong
from coursekit.exercises.generate import (
    ENGLISH_TEXTS,
    KEPT_CELL_METADATA,
    KEPT_NOTEBOOK_METADATA,
    RAISES_TAG,
    ExerciseTexts,
    build,
    build_exercise_notebook,
    differences,
    expected_exercises,
    strip_hidden_tests,
    strip_outputs,
    stub_solution_regions,
    syntax_problems,
)
from coursekit.exercises.lint import CALL_WRAPPERS, duplicate_check_names, unwrapped_calls
from coursekit.exercises.mutation import (
    STATED_ROUNDING,
    MutationReport,
    chapter_notebooks,
    mutation_test,
    run_mutation_tests,
    stated_roundings,
)
from coursekit.exercises.notebooks import notebook_text, read_notebook, runnable_code

__all__ = ["BEGIN_HIDDEN", "BEGIN_MARKER", "CALL_WRAPPERS", "END_HIDDEN", "END_MARKER",
           "ExerciseFormatError", "KEPT_CELL_METADATA", "KEPT_NOTEBOOK_METADATA", "MIN_WRONG_ANSWERS",
           "MutationReport", "NOTEBOOK_NAME", "RAISES_TAG", "ROLES", "STATED_ROUNDING", "ENGLISH_TEXTS",
           "ExerciseTexts", "add_arguments", "body_fingerprint", "build",
           "build_exercise_notebook", "chapter_notebooks", "code_fingerprint", "differences",
           "duplicate_check_names", "exercise_cells", "expected_exercises", "load_right_answers",
           "load_wrong_answers", "mutation_test", "notebook_ids", "notebook_text", "outputs_belong",
           "read_notebook", "run", "run_mutation_tests", "runnable_code", "solution_notebooks",
           "stated_roundings", "strip_hidden_tests", "strip_outputs", "stub_solution_regions",
           "syntax_problems", "unwrapped_calls", "validate_solution_notebook", "wrong_answer_source",
           "wrong_answers_path"]
