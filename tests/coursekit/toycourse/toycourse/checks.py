"""The check helpers of the toy course's exercise notebooks, as a course's own checks module works with the kit.

A passed check prints a `✔` line; a failed one raises `CheckFailed`, an AssertionError (the grader scores it
"failed"; any other error is the check's own crash), with the lines

    ✘ mean_of_squares is not what was expected.
      Expected: 6.0 (± 6e-05)
      Got:      4.0 (off by 2)
      Hint:     square first, then average

An error of the learner's code or value becomes such a message too; only an untouched stub's NotImplementedError
goes through (the grader's "not attempted"). The lines are Chinese where `TOYCOURSE_LANG` (the course's
`language_variable`, which the grader sets for a Chinese submission) is "zh".
"""

import os

import numpy as np

TEXTS = {
    "en": {"failed": "✘ {name} is not what was expected.", "expected": "  Expected: {text}",
           "got": "  Got:      {text}", "hint": "  Hint:     {text}", "off_by": "{got} (off by {gap:.3g})",
           "raised": "it raised {error}", "passed": "✔ {name}: as expected",
           "matches": "✔ {name} matches the reference on {trials} random inputs", "done": "✔ Exercise {id} passed"},
    "zh": {"failed": "✘ {name} 与预期不符。", "expected": "  预期：{text}", "got": "  得到：{text}",
           "hint": "  提示：{text}", "off_by": "{got}（相差 {gap:.3g}）", "raised": "抛出了 {error}",
           "passed": "✔ {name}：符合预期", "matches": "✔ {name} 在 {trials} 组随机输入上与参考实现一致",
           "done": "✔ 练习 {id} 通过"},
}


class CheckFailed(AssertionError):
    """A check that failed: its message is the ✘ lines above."""

    def _render_traceback_(self):  # IPython shows the message alone
        return [str(self)]


def _text(key, **fields):
    return TEXTS["zh" if os.environ.get("TOYCOURSE_LANG") == "zh" else "en"][key].format(**fields)


def _fail(name, expected, got, hint):
    lines = [_text("failed", name=name), _text("expected", text=expected), _text("got", text=got)]
    raise CheckFailed("\n".join(lines + ([_text("hint", text=hint)] if hint else [])))


def _equal(got, expected):
    if isinstance(got, np.ndarray) or isinstance(expected, np.ndarray):
        got, expected = np.asarray(got), np.asarray(expected)
        return got.shape == expected.shape and bool(np.all(got == expected))
    return bool(got == expected)


def check_equal(name, got, expected, hint=None):
    try:
        equal = _equal(got, expected)
    except Exception as error:  # noqa: BLE001 (a value that cannot be compared is a wrong answer)
        _fail(name, repr(expected), f"{got!r}: {error}", hint)
    if not equal:
        _fail(name, repr(expected), repr(got), hint)
    print(_text("passed", name=name))


def check_close(name, got, expected, rtol=1e-5, atol=1e-8, hint=None):
    tolerance = f"{expected!r} (± {atol + rtol * abs(expected):.3g})"
    try:
        number = float(np.asarray(got))
    except (TypeError, ValueError):
        _fail(name, tolerance, repr(got), hint)
    if not np.isclose(number, expected, rtol=rtol, atol=atol):
        _fail(name, tolerance, _text("off_by", got=number, gap=abs(number - expected)), hint)
    print(_text("passed", name=name))


def check_shape(name, got, expected_shape, hint=None):
    shape = tuple(np.shape(got))
    if len(shape) != len(expected_shape) or any(want not in (None, have) for want, have in zip(expected_shape, shape)):
        _fail(f"{name}.shape", repr(tuple(expected_shape)), repr(shape), hint)
    print(_text("passed", name=f"{name}.shape"))


def check_array_close(name, got, expected, rtol=1e-5, atol=1e-8, hint=None):
    got, expected = np.asarray(got), np.asarray(expected)
    if got.shape != expected.shape or not np.allclose(got, expected, rtol=rtol, atol=atol):
        _fail(name, repr(expected), repr(got), hint)
    print(_text("passed", name=name))


def check_true(name, condition, expected_text, got_text, hint=None):
    if not condition:
        _fail(name, expected_text, got_text, hint)
    print(_text("passed", name=name))


def checked_call(name, function, *args, hint=None, **kwargs):
    """`function(*args, **kwargs)` for a check cell: an error of the learner's code becomes a ✘ message."""
    try:
        return function(*args, **kwargs)
    except (NotImplementedError, CheckFailed):
        raise
    except Exception as error:  # noqa: BLE001
        _fail(name, "a result", _text("raised", error=f"{type(error).__name__}: {error}"), hint)


def check_function(name, student_fn, reference_fn, random_inputs_fn, trials=5, rtol=1e-5, atol=1e-6, hint=None):
    """The learner's function against the reference on `trials` random inputs (`random_inputs_fn(rng)`: a tuple of
    positional arguments, or one argument)."""
    rng = np.random.default_rng(0)
    for trial in range(1, trials + 1):
        args = random_inputs_fn(rng)
        args = args if isinstance(args, tuple) else (args,)
        expected = reference_fn(*args)
        call = f"{name}(trial {trial} of {trials})"
        got = checked_call(call, student_fn, *args, hint=hint)
        try:
            close = np.shape(got) == np.shape(expected) and np.allclose(got, expected, rtol=rtol, atol=atol)
        except Exception as error:  # noqa: BLE001
            _fail(call, repr(expected), f"{got!r}: {error}", hint)
        if not close:
            _fail(call, repr(expected), repr(got), hint)
    print(_text("matches", name=name, trials=trials))


def check_instance_of(name, learner_class, args, class_name, hint=None):
    """Checks that `learner_class(*args)` builds an object of the class `class_name`. The grader runs it in the
    learner's kernel (marked below), where the class is the learner's own; in the grader's runner the class is a
    stand-in, whose objects are stand-ins too."""
    value = checked_call(name, learner_class, *args, hint=hint)
    if type(value).__name__ != class_name:
        _fail(name, f"an object of class {class_name}", f"an object of class {type(value).__name__}", hint)
    print(_text("passed", name=name))


check_instance_of.coursekit_in_kernel = True  # coursekit.grading.checker.in_kernel, without importing the kit


def done(exercise_id):
    """The last line of a check cell: reaching it means every check of the exercise passed."""
    print(_text("done", id=exercise_id))
