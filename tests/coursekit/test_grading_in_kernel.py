"""Checks marked `coursekit_in_kernel` run in the learner's kernel, where the learner's objects are their own (issue
56: before, the grader's stand-in for a learner's Keras class made the course's compiled-step check print "not
checked here" and pass; that check, end to end, is in tests/course/test_kit_integration.py). Here the toy course's
`check_instance_of`, which names the class of what the learner's class builds: a stand-in's, if it ran in the
grader's runner."""

import sys
import types

import pytest

from coursekit.grading import checker, wire

pytestmark = pytest.mark.usefixtures("toy_course")

LEARNER = "class Doubler:\n    def __init__(self, factor):\n        self.factor = factor\n"
CHECK = "from toycourse.checks import check_instance_of\ncheck_instance_of('Doubler(2)', Doubler, (2,), 'Doubler')"


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


def run_check(learner_code, check_source, name="Doubler"):
    namespace = {}
    exec(learner_code, namespace)  # noqa: S102 (the test's own "learner")
    channel = in_process_channel(namespace)
    check = checker.Checker([], channel, deadline=float("inf"))
    check.namespace.update(channel.names([name]))
    assert isinstance(check.namespace[name], checker.Remote)  # the checker holds a stand-in, as in a grade
    return check._exec(check_source, "the check cell")


def test_statements_calling_a_marked_check_go_to_the_kernel_and_others_stay():
    sent = []
    namespace = {"__coursekit_in_kernel__": lambda source, names: sent.append((source, names)),
                 "marked": checker.in_kernel(lambda *args, **kwargs: None), "plain": lambda *args: sent.append("here")}
    exec(checker.kernel_statements("x = 3\nmarked('a', x, make=lambda cls: cls(y))\nplain(x)\n", "cell"),  # noqa: S102
         namespace)
    assert sent == [("marked('a', x, make=lambda cls: cls(y))", ["marked", "x", "y"]), "here"]


def test_a_marked_check_sees_the_learners_own_object_and_the_same_check_in_the_runner_sees_a_stand_in(monkeypatch):
    error, output = run_check(LEARNER, CHECK)
    assert error is None and "✔ Doubler(2): as expected" in output, (error, output)
    error, _ = run_check(LEARNER.replace("class Doubler:", "class Tripler:") + "Doubler = Tripler\n", CHECK)
    assert isinstance(error, AssertionError) and "Got:      an object of class Tripler" in str(error), error
    monkeypatch.setattr(checker, "kernel_statements", lambda source, name: source)  # no statement goes to the kernel
    error, _ = run_check(LEARNER, CHECK)
    assert isinstance(error, AssertionError) and "Got:      an object of class Remote" in str(error), error


def test_a_failed_stub_in_the_kernel_is_not_attempted_and_an_unsendable_name_is_a_grader_fault():
    stub = "class Doubler:\n    def __init__(self, factor):\n        raise NotImplementedError('3.1')\n"
    error, _ = run_check(stub, CHECK)
    assert isinstance(error, NotImplementedError), error
    error, _ = run_check(LEARNER, "from toycourse.checks import check_instance_of\nlocal = lambda factor: Doubler(factor)\n"
                                  "check_instance_of('Doubler(2)', local, (2,), 'Doubler')")
    assert isinstance(error, checker.Unsendable), error
