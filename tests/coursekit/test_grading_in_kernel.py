"""The compiled-step check in `coursekit grade`: a check marked `coursekit_in_kernel` runs where the learner's class
is, so a numpy answer whose values pass still fails the grade (issue 56: before, the grader's stand-in for the
class made `check_compiled_step` print "not checked here" and pass)."""

import sys
import types
from pathlib import Path

import nbformat
import pytest

from coursekit import grading
from coursekit.grading import checker, wire
from tests.coursekit.test_exercises import exercise_cell

KERAS_SOLUTION = """import keras
from keras import ops


class Doubler(keras.layers.Layer):
    def call(self, x):
        ### BEGIN SOLUTION
        return ops.multiply(x, 2.0)
        ### END SOLUTION"""
NUMPY_ANSWER = "return ops.convert_to_tensor(np.asarray(x) * 2.0)"
CHECK = """from bertlib_course.checks import check_array_close, checked_call
from bertlib_course.exercise_refs import check_compiled_step

x = np.linspace(-1.0, 1.0, 24, dtype="float32").reshape(2, 3, 4)
check_array_close("Doubler()(x)", checked_call("Doubler()(x)", lambda: np.asarray(Doubler()(x))), 2 * x)
check_compiled_step("Doubler", Doubler, (x,), hint="keras.ops only")
done("3.1")"""


def in_process_channel(namespace):
    """A checker.Channel whose kernel is this process: the agent's module installed as install_code() installs it."""
    module = types.ModuleType(checker.AGENT_MODULE)
    module.agent = wire.Agent(namespace)
    sys.modules[checker.AGENT_MODULE] = module

    def execute(code, expressions):
        exec(code, {})  # noqa: S102 (the checker's own request)
        return {"user_expressions": {key: {"data": {"text/plain": repr(eval(expression, {}))}}  # noqa: S307
                                     for key, expression in expressions.items()}}

    return checker.Channel(execute)


def run_check(learner_code, check_source):
    namespace = {}
    exec(learner_code, namespace)  # noqa: S102 (the test's own "learner")
    channel = in_process_channel(namespace)
    check = checker.Checker([], channel, deadline=float("inf"))
    check.namespace.update(channel.names(["Doubler"]))
    assert isinstance(check.namespace["Doubler"], checker.Remote)  # the checker holds a stand-in, as in a grade
    return check._exec(check_source, "the check cell")


def test_statements_calling_a_marked_check_go_to_the_kernel_and_others_stay():
    sent = []
    namespace = {"__coursekit_in_kernel__": lambda source, names: sent.append((source, names)),
                 "marked": checker.in_kernel(lambda *args, **kwargs: None), "plain": lambda *args: sent.append("here")}
    exec(checker.kernel_statements("x = 3\nmarked('a', x, make=lambda cls: cls(y))\nplain(x)\n", "cell"),  # noqa: S102
         namespace)
    assert sent == [("marked('a', x, make=lambda cls: cls(y))", ["marked", "x", "y"]), "here"]


@pytest.mark.parametrize("answer, passes", [("ops.multiply(x, 2.0)", True), (NUMPY_ANSWER, False)])
def test_the_compiled_step_runs_in_the_kernel_and_fails_a_numpy_answer(answer, passes):
    learner = "import numpy as np\n" + KERAS_SOLUTION.replace("ops.multiply(x, 2.0)", answer.removeprefix("return "))
    error, output = run_check(learner, "import numpy as np\n" + CHECK.replace('done("3.1")', ""))
    if passes:
        assert error is None and "✔ Doubler in a compiled training step" in output, (error, output)
    else:
        assert isinstance(error, AssertionError), (error, output)
        assert "Doubler in a compiled training step (model.fit on" in str(error)
        assert "this uses numpy and cannot run inside a compiled training step" in str(error), str(error)
        assert "✔ Doubler()(x)" in output  # the values passed: only the compiled step rejects it


def test_a_failed_stub_in_the_kernel_is_not_attempted_and_an_unsendable_name_is_a_grader_fault():
    stub = "import keras\n\nclass Doubler(keras.layers.Layer):\n    def call(self, x):\n        raise NotImplementedError('3.1')"
    error, _ = run_check(stub, "from bertlib_course.exercise_refs import check_compiled_step\nimport numpy as np\n"
                               "check_compiled_step('Doubler', Doubler, (np.ones((1, 2, 3), 'float32'),))")
    assert isinstance(error, NotImplementedError), error
    error, _ = run_check(KERAS_SOLUTION.replace("### BEGIN SOLUTION\n", "").replace("        ### END SOLUTION", ""),
                         "from bertlib_course.exercise_refs import check_compiled_step\nimport numpy as np\n"
                         "local = lambda cls: cls()\n"
                         "check_compiled_step('Doubler', Doubler, (np.ones((1, 2, 3), 'float32'),), make=local)")
    assert isinstance(error, checker.Unsendable), error


@pytest.mark.slow
def test_coursekit_grade_fails_a_numpy_keras_answer_that_passes_the_value_checks(tmp_path):
    """End to end, in a real kernel (no sandbox: the sandbox's own tests are test_grading_sandbox's)."""
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.cells = [nbformat.v4.new_markdown_cell("# Chapter 3 (toy)"),
                nbformat.v4.new_code_cell("import numpy as np\nfrom bertlib_course.checks import done"),
                exercise_cell(KERAS_SOLUTION, "3.1", "solution"), exercise_cell(CHECK, "3.1", "check")]
    (tmp_path / "solutions").mkdir()
    solution = tmp_path / "solutions" / "03_toy.ipynb"
    nbformat.write(nb, str(solution))
    nb.cells[2].source = nb.cells[2].source.replace("return ops.multiply(x, 2.0)", NUMPY_ANSWER)
    wrong = tmp_path / "numpy" / "03_toy.ipynb"
    wrong.parent.mkdir()
    nbformat.write(nb, str(wrong))
    rows = grading.grade([solution, wrong], tmp_path / "grades.csv", solutions_dir=solution.parent, timeout=180,
                         unsafe=True)
    outcomes = {Path(row.notebook).parent.name: row.outcome for row in rows}
    assert outcomes["solutions"].status.value == "passed", outcomes
    assert outcomes["numpy"].status.value == "failed", outcomes
    assert "this uses numpy and cannot run inside a compiled training step" in outcomes["numpy"].message
