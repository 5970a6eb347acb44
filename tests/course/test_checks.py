"""bertlib_course.checks: passing checks print one line; failing ones raise CheckFailed with Expected / Got / Hint."""

import re
import subprocess
import sys

import numpy as np
import pytest

from bertlib_course import checks
from bertlib_course.checks import CheckFailed


def stable_softmax(x):
    shifted = np.exp(x - x.max(axis=-1, keepdims=True))
    return shifted / shifted.sum(axis=-1, keepdims=True)


def naive_softmax(x):
    with np.errstate(over="ignore", invalid="ignore"):
            return np.exp(x) / np.exp(x).sum(axis=-1, keepdims=True)


def failure_message(check, *args, **kwargs):
    with pytest.raises(CheckFailed) as caught:
        check(*args, **kwargs)
    return str(caught.value)


def test_check_failed_is_an_assertion_error():
    assert issubclass(CheckFailed, AssertionError)


def test_passing_checks_print_and_done_prints_the_pass_line(capsys):
    checks.check_equal("tokens", ["hello", "world"], ["hello", "world"])
    checks.check_close("gelu(1.0)", 0.84134, 0.8413447, rtol=1e-4)
    checks.check_array_close("weights", np.ones((2, 3)) + 1e-9, np.ones((2, 3)))
    checks.check_shape("sequence_output", np.zeros((2, 7, 4)), (2, None, 4))
    checks.check_true("the loss", True, "below 1.0", "0.5")
    checks.done("3.2")
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 6 and all(line.startswith("✔ ") for line in lines)
    assert lines[-1] == "✔ Exercise 3.2 passed"


def test_failure_message_has_expected_got_and_hint():
    message = failure_message(checks.check_equal, "vocabulary_size", 30000, 30522, hint="count the lines of vocab.txt")
    assert message.splitlines() == [
        "✘ vocabulary_size is not what was expected.",
        "  Expected: 30522",
        "  Got:      30000",
        "  Hint:     count the lines of vocab.txt",
    ]


@pytest.mark.parametrize("got, expected, rtol, atol", [
    (1.0001, 1.0, 1e-5, 1e-8), (1.0001, 1.0, 1e-3, 0.0), (0.0, 1e-9, 0.0, 1e-8), (2.0, 1.0, 0.5, 0.5)])
def test_check_close_follows_numpy_isclose(got, expected, rtol, atol):
    if np.isclose(got, expected, rtol=rtol, atol=atol):
        checks.check_close("x", got, expected, rtol=rtol, atol=atol)
    else:
        message = failure_message(checks.check_close, "x", got, expected, rtol=rtol, atol=atol)
        assert f"Got:      {got!r}" in message


def test_check_close_refuses_what_is_not_a_number():
    assert "a number close to 1.0" in failure_message(checks.check_close, "x", "1.0x", 1.0)


def test_check_equal_compares_arrays_by_shape_and_values():
    checks.check_equal("ids", np.array([1, 2, 3]), [1, 2, 3])
    failure_message(checks.check_equal, "ids", np.array([1, 2, 3]), np.array([[1, 2, 3]]))
    assert "array of shape (3,)" in failure_message(checks.check_equal, "ids", np.array([1, 2, 4]), [1, 2, 3])


def test_check_array_close_names_the_worst_element():
    expected = np.zeros((3, 4))
    got = expected.copy()
    got[1, 2], got[2, 0] = 0.5, 0.01
    message = failure_message(checks.check_array_close, "scores", got, expected, atol=1e-3)
    assert "2 of 12 elements differ; the worst at index (1, 2): expected 0, got 0.5" in message
    shape_message = failure_message(checks.check_array_close, "scores", got.T, expected)
    assert "Expected: (3, 4)" in shape_message and "Got:      (4, 3)" in shape_message


def test_check_shape_treats_none_as_any_size():
    message = failure_message(checks.check_shape, "mask", np.zeros((2, 5)), (2, None, 1))
    assert "Expected: (2, any, 1)" in message and "Got:      (2, 5)" in message


def test_check_true_shows_the_texts_it_was_given():
    message = failure_message(checks.check_true, "the loss", False, "below 1.0", "3.2", hint="train longer")
    assert "Expected: below 1.0" in message and "Got:      3.2" in message and "Hint:     train longer" in message


def test_check_function_accepts_a_correct_implementation():
    checks.check_function("softmax", stable_softmax, naive_softmax, lambda rng: (rng.normal(size=(2, 5)),))


def test_check_function_finds_inputs_where_a_wrong_implementation_differs():
    # naive softmax overflows for large logits; the reference must catch it on some random trial
    message = failure_message(checks.check_function, "softmax", naive_softmax, stable_softmax,
                              lambda rng: (rng.normal(size=(2, 5)) * 500,), hint="subtract the maximum")
    assert re.search(r"softmax\(<array \(2, 5\)>\) \(trial [1-5] of 5\)", message), message
    assert "got nan" in message and "Hint:     subtract the maximum" in message


def test_check_function_compares_nested_outputs_and_keyword_inputs():
    def reference(x, scale):
        return {"scaled": x * scale, "sum": (x * scale).sum()}

    def wrong(x, scale):
        return {"scaled": x * scale, "sum": x.sum()}

    def inputs(rng):
        return {"x": rng.normal(size=3), "scale": 2.0}

    checks.check_function("scale", reference, reference, inputs)
    assert "in ['sum']" in failure_message(checks.check_function, "scale", wrong, reference, inputs)


def test_check_function_reports_a_crash_but_lets_an_untouched_stub_through():
    def crashing(x):
        raise ValueError("shapes do not match")

    def stub(x):
        raise NotImplementedError("Exercise 3.1: write your code here")

    message = failure_message(checks.check_function, "f", crashing, np.negative, lambda rng: rng.normal(size=2))
    assert "Got:      an error: ValueError: shapes do not match" in message
    with pytest.raises(NotImplementedError, match="Exercise 3.1"):
        checks.check_function("f", stub, np.negative, lambda rng: rng.normal(size=2))


def test_a_value_that_cannot_be_compared_fails_the_check_with_the_hint():
    """A learner's tuple, ragged list or odd object met inside a check: a ✘ message, not numpy's traceback."""
    output_and_probabilities = (np.zeros((2, 3, 4)), np.zeros((2, 1, 3, 3)))
    for check, args in ((checks.check_array_close, ("output", output_and_probabilities, np.zeros((2, 3, 4)))),
                        (checks.check_equal, ("token_ids", [[1, 2], [3]], np.array([[1, 2], [3, 4]]))),
                        (checks.check_shape, ("output", [[1, 2], [3]], (2, 2)))):
        message = failure_message(check, *args, hint="return one array")
        assert message.startswith("✘ ") and "Hint:     return one array" in message, message
        assert "cannot be compared" in message or "the shape of" in message, message
    message = failure_message(checks.check_array_close, "output", output_and_probabilities, np.zeros((2, 3, 4)))
    assert "a tuple of 2: array of shape (2, 3, 4), array of shape (2, 1, 3, 3)" in message

    def chapter_version(x):  # returns the output and something else, as chapter 2's attention did
        return x * 2, np.ones((1, 2))

    message = failure_message(checks.check_function, "double", chapter_version, lambda x: x * 2,
                              lambda rng: (rng.normal(size=(2, 3)),), hint="return only the output")
    assert "(trial 1 of 5)" in message and "Hint:     return only the output" in message


def test_checked_call_turns_a_crash_into_a_failed_check_and_lets_a_stub_through():
    assert checks.checked_call("f(2)", lambda x: x + 1, 2) == 3
    message = failure_message(checks.checked_call, "pool(sequence_output)", lambda x: x[:, 0, 5], np.zeros((2, 3)),
                              hint="take the first position")
    assert message.splitlines()[0] == "✘ pool(sequence_output) is not what was expected."
    assert "IndexError" in message and "Hint:     take the first position" in message

    def stub():
        raise NotImplementedError("Exercise 2.6: write your code here")

    with pytest.raises(NotImplementedError, match="Exercise 2.6"):
        checks.checked_call("stub()", stub)


def test_exercise_modules_do_not_import_tensorflow_or_keras():
    """Check cells and the grading CLI stay fast: none of them loads a deep-learning framework."""
    script = ("import sys\nimport bertlib_course.checks, coursekit.exercises, coursekit.grading\n"
              "print(sorted(name for name in ('tensorflow', 'keras', 'jax') if name in sys.modules))")
    completed = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120,
                               check=False)
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.strip() == "[]"


def test_a_digest_check_accepts_the_answer_in_any_equal_form_and_never_shows_it():
    digest = checks.answer_digest((110, 340), "2.5 base_and_large")
    assert "110" not in digest and "340" not in digest
    checks.check_digest("base_and_large", [110.0, 340], digest)
    checks.check_digest("base_and_large", np.array([110, 340]), digest)
    message = failure_message(checks.check_digest, "base_and_large", (110, 330), digest, hint="§3's text")
    assert "Got:      (110, 330)" in message and "Hint:     §3's text" in message
    assert "340" not in message, "the expected answer must not appear in the learner's feedback"


def test_digests_round_to_the_digits_asked_and_depend_on_the_salt():
    assert checks.answer_digest(0.15 * 0.10, "share", digits=4) == checks.answer_digest(0.015, "share", digits=4)
    assert checks.answer_digest(0.015, "share", digits=4) != checks.answer_digest(0.016, "share", digits=4)
    assert checks.answer_digest(0.015, "share", digits=4) != checks.answer_digest(0.015, "other", digits=4)
    assert checks.answer_digest({"b", "a"}, "set") == checks.answer_digest({"a", "b"}, "set")
    assert checks.answer_digest(True, "bool") != checks.answer_digest(1, "bool")
    assert checks.answer_digest(-1e-17, "zero", digits=3) == checks.answer_digest(0.0, "zero", digits=3)
    message = failure_message(checks.check_digest, "x", float("nan"), checks.answer_digest(1.0, "x", digits=2), digits=2)
    assert "not a finite number" in message


def test_messages_show_numpy_numbers_as_plain_numbers():
    """numpy 2's repr is np.float64(0.5); a learner reads 0.5, in Expected and Got lines alike."""
    message = failure_message(checks.check_close, "share", np.float64(0.7213), np.float64(0.5))
    assert "Expected: 0.5 (±" in message and "Got:      0.7213 (off by" in message
    message = failure_message(checks.check_equal, "pair", (np.int64(3), [np.float32(0.5)]), (3, [0.25]))
    assert "Got:      (3, [0.5])" in message and "Expected: (3, [0.25])" in message
    message = failure_message(checks.check_digest, "x", [np.float64(0.25), np.int64(2)], checks.answer_digest(1, "x"))
    assert "Got:      [0.25, 2]" in message
    assert "np." not in message


def test_check_rounded_accepts_every_value_that_rounds_to_the_answer():
    """A question that asks for 2 decimals: the rounded value and the unrounded one both pass, as the public
    digest (digits=2) accepts them; a value that rounds elsewhere fails and says to how many decimals."""
    checks.check_rounded("missing_share", 41 / 58, 0.71, digits=2)
    checks.check_rounded("missing_share", 0.71, 41 / 58, digits=2)
    checks.check_rounded("missing_share", np.float64(0.7068965517241379), 0.71, digits=2)
    digest = checks.answer_digest(0.71, "7.5 share", digits=2)
    for value in (0.71, 41 / 58, 0.7149, 0.7051):
        checks.check_rounded("share", value, 0.71, digits=2)
        checks.check_digest("share", value, digest, digits=2)
    for value in (0.72, 0.7, 0.7151):
        message = failure_message(checks.check_rounded, "share", value, 0.71, digits=2)
        assert "to 2 decimals" in message
        with pytest.raises(CheckFailed):
            checks.check_digest("share", value, digest, digits=2)
    assert "a number close to 0.71" in failure_message(checks.check_rounded, "share", "0.71", 0.71, digits=2)


def test_check_raises_wants_that_error_and_turns_anything_else_into_a_failed_check():
    error = checks.check_raises("int('x')", ValueError, int, "x")
    assert isinstance(error, ValueError) and "'x'" in str(error)
    message = failure_message(checks.check_raises, "f()", ValueError, lambda: [][1], hint="raise ValueError")
    assert "Expected: a ValueError" in message and "IndexError" in message and "Hint:     raise ValueError" in message
    message = failure_message(checks.check_raises, "f()", ValueError, lambda: np.float64(2.0))
    assert "Got:      no error: it returned 2.0" in message

    def stub():
        raise NotImplementedError("Exercise 5.5: write your code here")

    with pytest.raises(NotImplementedError, match="Exercise 5.5"):
        checks.check_raises("stub()", ValueError, stub)


def test_a_nested_difference_says_where_in_words():
    """Issue 35: 4.2's message read "(expected a list of length 7[0])"."""
    message = failure_message(checks.check_function, "truncate_pair", lambda seed: ([1, 2], [3]),
                              lambda seed: ([1, 2, 3, 4, 5, 6, 7], [3]), lambda rng: (1,))
    assert "(expected a list of length 7 in [0])" in message
    message = failure_message(checks.check_function, "f", lambda seed: {"a": np.zeros(2)},
                              lambda seed: {"a": np.zeros(3)}, lambda rng: (1,))
    assert "(shape (2,) in ['a'], expected (3,))" in message


# A ✘ in a notebook: the message and hint, not a traceback through the check helpers (issue 56, item 6).


def _shown_by_ipython(code):
    """What IPython prints for a cell that raises (as JupyterLab shows its traceback lines), colours off."""
    import contextlib
    import io

    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance(colors="nocolor")
    shown = io.StringIO()
    with contextlib.redirect_stdout(shown), contextlib.redirect_stderr(shown):
        result = shell.run_cell(code)
    return result, re.sub(r"\x1b\[[0-9;]*m", "", shown.getvalue())


def test_a_failed_check_shows_in_ipython_as_its_message_without_the_helpers_frames():
    result, shown = _shown_by_ipython(
        "from bertlib_course.checks import check_function\nimport numpy as np\n"
        "check_function('softmax', lambda x: np.exp(x) / np.exp(x).sum(), lambda x: x * 0 + 1 / 3,\n"
        "               lambda rng: (rng.normal(size=3),), hint='the same value for every position')")
    assert isinstance(result.error_in_exec, CheckFailed)  # still an error of the cell: nbval and the grader see it
    lines = shown.strip().splitlines()
    assert lines[0].startswith("✘ softmax(<array (3,)>) (trial 1 of 5)") and "Hint:     the same value" in shown
    assert "checks.py" not in shown and "Traceback" not in shown and "File " not in shown and len(lines) <= 6
    assert result.error_in_exec._render_traceback_()[-1] == "  Hint:     the same value for every position"


def test_a_stub_still_shows_where_it_was_left_and_not_the_helper_that_called_it():
    result, shown = _shown_by_ipython("from bertlib_course.checks import checked_call\n"
                                      "def pool():\n    raise NotImplementedError('write pool')\n"
                                      "checked_call('pool()', pool)")
    assert isinstance(result.error_in_exec, NotImplementedError) and "write pool" in shown
    assert "checks.py" not in shown  # the helper's frame is hidden (__tracebackhide__)


# Every stated constraint is checked: "keras.ops only, so that it runs in a compiled step" (issue 56, item 2).


def _keras_pieces():
    import keras
    from keras import ops

    class MeanPool(keras.layers.Layer):  # the masked mean of 4.6, in keras.ops
        def call(self, x, padding_mask):
            mask = ops.cast(padding_mask, x.dtype)[:, :, None]
            return ops.sum(x * mask, axis=1) / ops.maximum(ops.sum(mask, axis=1), 1.0)

    class NumpyMeanPool(keras.layers.Layer):  # the same numbers on arrays, the mask read with numpy
        def call(self, x, padding_mask):
            mask = np.asarray(padding_mask, "float32")[:, :, None]
            return ops.sum(x * mask, axis=1) / mask.sum(axis=1)

    class NumpySchedule(keras.optimizers.schedules.LearningRateSchedule):
        def __call__(self, step):
            return np.float32(1e-3) * np.minimum(np.asarray(step, "float32") / 10, 1.0)

        def get_config(self):
            return {}

    class Schedule(keras.optimizers.schedules.LearningRateSchedule):
        def __call__(self, step):
            return 1e-3 * ops.minimum(ops.cast(step, "float32") / 10, 1.0)

        def get_config(self):
            return {}

    return MeanPool, NumpyMeanPool, Schedule, NumpySchedule


BATCH = (np.random.default_rng(0).normal(size=(2, 5, 4)).astype("float32"), np.array([[1] * 5, [1, 1, 0, 0, 0]]))


def test_a_keras_ops_piece_passes_the_compiled_step_and_the_same_in_numpy_fails_it(capsys):
    import keras

    mean_pool, numpy_mean_pool, schedule, numpy_schedule = _keras_pieces()
    # Both give the right numbers on arrays: only the compiled step tells them apart.
    np.testing.assert_allclose(keras.ops.convert_to_numpy(numpy_mean_pool()(*BATCH)),
                               keras.ops.convert_to_numpy(mean_pool()(*BATCH)), rtol=1e-6)
    checks.check_compiled_step("MeanPool", mean_pool, BATCH)
    checks.check_compiled_step("Schedule()", schedule)
    assert capsys.readouterr().out.splitlines() == ["✔ MeanPool in a compiled training step: as expected",
                                                    "✔ Schedule() in a compiled training step: as expected"]
    backend = {"tensorflow": "TensorFlow", "jax": "JAX", "torch": "PyTorch"}[keras.backend.backend()]
    message = failure_message(checks.check_compiled_step, "NumpyMeanPool", numpy_mean_pool, BATCH,
                              hint="padding_mask is a tensor there too")
    assert message.startswith(f"✘ NumpyMeanPool in a compiled training step (model.fit on {backend})")
    assert "Hint:     this uses numpy and cannot run inside a compiled training step" in message
    assert message.endswith("; padding_mask is a tensor there too")
    if keras.backend.backend() != "torch":  # PyTorch's fit runs eagerly: there numpy on the step counter works
        message = failure_message(checks.check_compiled_step, "NumpySchedule()", numpy_schedule)
        assert "raised at `return np.float32(1e-3) * np.minimum(" in message and "(in __call__)" in message
        assert "this uses numpy" in message


def test_the_compiled_step_check_names_a_piece_of_the_wrong_kind_and_passes_the_graders_stand_in(capsys):
    message = failure_message(checks.check_compiled_step, "Pool", dict, BATCH)
    assert "a subclass of keras.layers.Layer or keras.optimizers.schedules.LearningRateSchedule" in message

    class Remote:  # what the grader holds for a learner's class: an object whose calls the kernel answers
        def __call__(self, *args):
            raise AssertionError("the check must not build a model around a stand-in")

    checks.check_compiled_step("MeanPool", Remote(), BATCH)
    assert "not checked here" in capsys.readouterr().out


def test_a_numpy_piece_in_a_notebook_is_named_by_its_line_and_shown_without_a_traceback():
    import keras

    if keras.backend.backend() == "torch":
        pytest.skip("PyTorch's fit runs eagerly: numpy on the step counter runs there")
    result, shown = _shown_by_ipython(
        "import keras, numpy as np\nfrom bertlib_course.checks import check_compiled_step\n"
        "class Warmup(keras.optimizers.schedules.LearningRateSchedule):\n"
        "    def __call__(self, step):\n"
        "        return np.float32(1e-3) * np.minimum(np.asarray(step, 'float32') / 10, 1.0)\n"
        "    def get_config(self):\n        return {}\n"
        "check_compiled_step('Warmup()', Warmup, hint='the step is a tensor')")
    assert isinstance(result.error_in_exec, CheckFailed)
    assert "raised at `return np.float32(1e-3) * np.minimum(np.asarray(step, 'float32') / 10, 1.0)`" in shown
    assert "checks.py" not in shown and "site-packages" not in shown and len(shown.strip().splitlines()) <= 6


def test_the_compiled_step_leaves_the_notebooks_random_numbers_as_they_were():
    import random

    mean_pool = _keras_pieces()[0]
    random.seed(3)
    np.random.seed(3)
    expected = (random.random(), np.random.random())
    random.seed(3)
    np.random.seed(3)
    checks.check_compiled_step("MeanPool", mean_pool, BATCH)
    assert (random.random(), np.random.random()) == expected
