"""Checks for exercise notebooks: each says what was expected, what came, and a hint.

A check cell of an exercise (see `coursekit.exercises`) calls these helpers instead of a bare `assert`, then ends
with `done("3.2")`. A failed check raises `CheckFailed`, an `AssertionError` whose message a learner can act on:

    ✘ softmax(x) is not what was expected (trial 2 of 5).
      Expected: array of shape (2, 5), float64: [[0.1, ...]]
      Got:      array of shape (2, 5), float64: [[0.3, ...]]
      Hint:     subtract the row maximum before exp().

A passed check prints one `✔` line. The grader (`coursekit grade`) scores an exercise from whether its cells raised,
so these helpers never swallow an error; but an error that comes from the learner's answer (their function raised,
or returned something that cannot be compared, such as a tuple where one array was asked for) becomes a `✘`
message with the hint, never a bare traceback from inside this module. A check cell calls a learner's function
through `checked_call` for the same reason. Only an untouched stub's `NotImplementedError` goes through as
itself (the grader reports "not attempted"). In a notebook a `✘` shows as its message alone: IPython renders a
`CheckFailed` through its `_render_traceback_`, without the frames of these helpers. Only numpy is imported here
(`check_compiled_step` imports Keras when it runs), so a check cell stays fast; tensors of any backend are compared
through `numpy.asarray`.
"""

import contextlib
import hashlib
import hmac
import random
import re
from pathlib import Path

import numpy as np

from bertlib_course.failure import CheckFailed  # noqa: F401 (part of this module's API)
from bertlib_course.messages import check_text, message, pgettext

_MAX_SHOWN = 300  # characters of a value shown in a message; longer values are cut


def check_equal(name, got, expected, hint=None):
    """Checks `got == expected` exactly (arrays: same shape and all elements equal).

    Example:
        check_equal("tokenizer.tokenize('hello')", tokens, ["hello"])
    """
    name = check_text(name)
    with _answer_compared(name, lambda: _show(expected), got, hint):
        if _is_array_like(got) or _is_array_like(expected):
            got_array, expected_array = np.asarray(got), np.asarray(expected)
            equal = got_array.shape == expected_array.shape and bool(np.all(got_array == expected_array))
        else:
            equal = bool(got == expected)
    if not equal:
        _fail(name, _show(expected), _show(got), hint)
    _passed(name)


def check_close(name, got, expected, rtol=1e-5, atol=1e-8, hint=None):
    """Checks a number is within `atol + rtol * |expected|` of `expected` (the rule of `numpy.isclose`).

    Example:
        check_close("gelu(1.0)", gelu(1.0), 0.8413, rtol=1e-3)
    """
    name = check_text(name)
    try:
        got_number = float(np.asarray(got))
    except (TypeError, ValueError):
        _fail(name, message("number_close_to", expected=_show(expected)), _show(got), hint)
    if not np.isclose(got_number, expected, rtol=rtol, atol=atol):
        tolerance = atol + rtol * abs(expected)
        _fail(name, f"{_show(expected)} (± {tolerance:.3g})",
              message("off_by", got=_show(got_number), gap=f"{abs(got_number - expected):.3g}"), hint)
    _passed(name)


def check_rounded(name, got, expected, digits, hint=None):
    """Checks a number the question asks for to `digits` decimals: `got` passes when it rounds to what `expected`
    rounds to, so the value rounded as asked and the unrounded value both pass (as `check_digest(...,
    digits=digits)` compares them in the public check).

    Example:
        check_rounded("missing_share", missing_share, 41 / 58, digits=2)
    """
    name = check_text(name)
    want = _canonical(expected, digits)
    try:
        number = np.asarray(got)
        if number.ndim or number.dtype.kind not in "iuf":  # a string "0.71" or a bool is not the number asked
            raise TypeError(f"not a number: {type(got).__name__}")
        have = _canonical(float(number), digits)
    except (TypeError, ValueError):
        _fail(name, message("number_close_to", expected=want), _show(got), hint)
    if have != want:
        shown = _show(got)
        _fail(name, message("to_decimals", value=want, digits=digits), shown if shown == have else f"{shown} ({have})",
              hint)
    _passed(name)


def check_shape(name, got, expected_shape, hint=None):
    """Checks the shape of an array or tensor; `None` in `expected_shape` matches any size.

    Example:
        check_shape("sequence_output", outputs["sequence_output"], (2, 16, 64))
    """
    name = check_text(name)
    expected_shape = tuple(expected_shape)
    shown = "(" + ", ".join(message("any_size") if size is None else str(size) for size in expected_shape) + ")"
    with _answer_compared(message("shape_of", name=name), lambda: shown, got, hint):
        got_shape = tuple(np.shape(got)) if not hasattr(got, "shape") else tuple(got.shape)
    matches = len(got_shape) == len(expected_shape) and all(
        want is None or want == have for want, have in zip(expected_shape, got_shape))
    if not matches:
        _fail(message("shape_of", name=name), shown, str(got_shape), hint)
    _passed(message("shape_of", name=name))


def check_array_close(name, got, expected, rtol=1e-5, atol=1e-8, hint=None):
    """Checks shapes match and every element is close (the rule of `numpy.allclose`).

    On failure the message names how many elements differ and shows the worst one with its index.

    Example:
        check_array_close("attention weights", weights, reference_weights, atol=1e-6)
    """
    name = check_text(name)
    expected_array = np.asarray(expected)
    with _answer_compared(name, lambda: _show(expected_array), got, hint):
        got_array = np.asarray(got)
        if got_array.shape != expected_array.shape:
            _fail(message("shape_of", name=name), str(expected_array.shape), str(got_array.shape), hint)
        problem = _array_difference(got_array, expected_array, rtol, atol)
    if problem:
        _fail(name, _show(expected_array), f"{_show(got_array)}\n{' ' * 12}{problem}", hint)
    _passed(name)


def check_true(name, condition, expected_text, got_text, hint=None):
    """Checks a condition the other helpers cannot express; the texts describe it to the learner.

    Example:
        check_true("the loss", loss < 1.0, "below 1.0 after 50 steps", f"{loss:.3f}", hint="raise the learning rate")
    """
    name = check_text(name)
    if not condition:
        _fail(name, check_text(expected_text), check_text(got_text), hint)
    _passed(name)


def check_function(name, student_fn, reference_fn, random_inputs_fn, trials=5, rtol=1e-5, atol=1e-6, hint=None,
                   seed=0):
    """Compares a learner's function with the reference on random inputs.

    Args:
        name: str. How the function is called in messages, e.g. "softmax".
        student_fn: the learner's callable.
        reference_fn: the reference callable (usually from `bertlib`).
        random_inputs_fn: callable `(rng: numpy.random.Generator) -> args`, where args is a tuple of positional
            arguments, a dict of keyword arguments, or a single argument.
        trials: int, defaults to 5. Number of random inputs tried.
        rtol, atol: floats. Tolerances for numeric outputs (nested tuples, lists and dicts are compared leaf by
            leaf).
        hint: str or None. Shown when an output differs.
        seed: int, defaults to 0. Seed of the generator, so a failure is reproducible.

    Example:
        check_function("softmax", softmax, bertlib_softmax, lambda rng: (rng.normal(size=(2, 5)),))
    """
    __tracebackhide__ = True  # a stub's NotImplementedError shows the learner's frames, not this one
    name = check_text(name)
    rng = np.random.default_rng(seed)
    for trial in range(1, trials + 1):
        args, kwargs = _as_call_arguments(random_inputs_fn(rng))
        expected = reference_fn(*args, **kwargs)
        call = f"{name}({_describe_arguments(args, kwargs)})"
        try:
            got = student_fn(*args, **kwargs)
        except NotImplementedError:
            raise  # an untouched stub: the grader reports "not attempted"
        except Exception as error:
            raise CheckFailed(_message(message("trial", call=call, trial=trial, trials=trials), _show(expected),
                                       message("raised", error_type=type(error).__name__, error=error),
                                       hint)) from error
        with _answer_compared(message("trial", call=call, trial=trial, trials=trials), lambda expected=expected: _show(expected), got,
                              hint):
            problem = _structure_difference(got, expected, rtol, atol)
        if problem:
            _fail(message("trial", call=call, trial=trial, trials=trials), _show(expected),
                  f"{_show(got)}\n{' ' * 12}{problem}", hint)
    print(message("function_matches", name=name, trials=trials))


def checked_call(name, function, *args, hint=None, **kwargs):
    """Calls a learner's function from a check cell and returns its result; an error it raises becomes a ✘ message.

    Use it wherever a check cell calls the learner's code itself (to get a value it then checks), so that a
    crash reads like every other failed check, with the call and the hint, instead of a traceback. An untouched
    stub's `NotImplementedError` goes through unchanged.

    Example:
        pooled = checked_call("pool(sequence_output, kernel, bias)", pool, sequence_output, kernel, bias,
                              hint="a dense layer with tanh on the first position")
    """
    __tracebackhide__ = True  # a stub's NotImplementedError shows the learner's frames, not this one
    try:
        return function(*args, **kwargs)
    except NotImplementedError:
        raise  # an untouched stub: the grader reports "not attempted"
    except CheckFailed:
        raise
    except Exception as error:
        raise CheckFailed(_message(check_text(name), message("a_result"),
                                   message("raised", error_type=type(error).__name__, error=error), hint)) from error


def check_raises(name, error_type, function, *args, hint=None, **kwargs):
    """Calls a learner's function that should raise `error_type`; returns the error, or fails the check.

    Returning normally, or raising another kind of error, is a ✘ message with the hint; an untouched stub's
    `NotImplementedError` goes through unchanged.

    Example:
        error = check_raises("replica_plan(100, 8, 64)", ValueError, replica_plan, 100, 8, 64)
    """
    __tracebackhide__ = True  # a stub's NotImplementedError shows the learner's frames, not this one
    try:
        result = function(*args, **kwargs)
    except NotImplementedError:
        raise  # an untouched stub: the grader reports "not attempted"
    except CheckFailed:
        raise
    except error_type as error:
        _passed(check_text(name))
        return error
    except Exception as error:
        raise CheckFailed(_message(check_text(name), message("an_error", error_type=error_type.__name__),
                                   message("raised", error_type=type(error).__name__, error=error), hint)) from error
    _fail(check_text(name), message("an_error", error_type=error_type.__name__),
          message("returned", value=_show(result)), hint)


def check_compiled_step(name, piece_class, inputs=None, make=None, call=None, hint=None):
    """Checks that a learner's Keras piece runs inside one compiled training step, as `model.fit` compiles it.

    The exercises ask for `keras.ops` only "so that it runs in a compiled step": numpy, or a Python `if` on a
    tensor, can give the right numbers when called on arrays, and then fail in `fit`, where the step is traced
    (TensorFlow's graph, JAX's `jit`) and a tensor has a shape but no values yet. This check is that `fit`, on the
    current backend, with `jit_compile="auto"` (what `compile()` uses when not told: XLA on TensorFlow where Keras
    can, `jit` on JAX; PyTorch's default step is not traced, so there numpy that reads only shapes or the step
    counter still runs, as it does in PyTorch's own `fit`):

    - a layer (`make(piece_class)`, default `piece_class()`): a functional model on `keras.Input`s whose sizes are
      unknown but the last axis of the first, as a learner's model is; a trainable `Dense` in front of the piece,
      so that its first input carries a gradient; `call(piece, *tensors)` (default `piece(*tensors)`) as output and
      the mean square of that output as loss. One step is fitted on `inputs`, a tuple of arrays whose first is float
      (batch, ..., width).
    - a `LearningRateSchedule`: the learning rate of the optimizer of a one-layer model, fitted one step.

    A failure names the line of the learner's code that broke, and says when it is numpy. In the grader the
    learner's class stays in the learner's kernel (a stand-in that answers calls with values, not a class), so no
    model can be built around it there: the check says so and passes; the learner's notebook runs it.

    Example:
        check_compiled_step("CausalSelfAttention(num_heads=2)", CausalSelfAttention, (x, padding_mask),
                            make=lambda cls: cls(num_heads=2))
    """
    __tracebackhide__ = True  # pytest and IPython leave this frame out of a traceback
    import keras  # here, not at the top: the other checks need numpy only

    name = check_text(name)
    if not isinstance(piece_class, type):
        print(_compiled("(not checked here: {name} is not a class in this process; the grader keeps your class in "
                        "your kernel, and your notebook runs this check)").format(name=name))
        return
    kinds = (keras.layers.Layer, keras.optimizers.schedules.LearningRateSchedule)
    if not issubclass(piece_class, kinds):
        _fail(name, _compiled("a subclass of keras.layers.Layer or keras.optimizers.schedules.LearningRateSchedule"),
              ", ".join(repr(base) for base in piece_class.mro()[:3]), hint)
    piece = checked_call(name, make or (lambda cls: cls()), piece_class, hint=hint)
    # Keras draws its initializers' seeds from Python's `random`: the notebook's later numbers stay as they were.
    random_state, numpy_state = random.getstate(), np.random.get_state()
    try:
        _fit_one_compiled_step(keras, piece, inputs, call)
    except NotImplementedError as error:
        if not _traced(error):
            raise _chain(error)[-1] from None  # an untouched stub: the grader reports "not attempted"
        _fail_compiled(name, error, hint, keras)
    except CheckFailed:
        raise
    except Exception as error:  # noqa: BLE001 (any error of the learner's piece in the step is said, not raised)
        _fail_compiled(name, error, hint, keras)
    finally:
        random.setstate(random_state)
        np.random.set_state(numpy_state)
    _passed(_compiled("{name} in a compiled training step").format(name=name))


def _compiled(english):
    """A sentence of `check_compiled_step` in the learner's language (the catalogue's msgctxt "compiled_step")."""
    return pgettext("compiled_step", english)


def _fit_one_compiled_step(keras, piece, inputs, call):
    """Builds the small model around `piece` (see `check_compiled_step`), compiles it and fits one step."""
    ops = keras.ops
    if isinstance(piece, keras.optimizers.schedules.LearningRateSchedule):
        model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
        model.compile(optimizer=keras.optimizers.SGD(learning_rate=piece), loss="mean_squared_error",
                      jit_compile="auto")
        features = np.linspace(-1.0, 1.0, 8, dtype="float32").reshape(4, 2)
        model.fit(features, features[:, :1], epochs=1, batch_size=4, verbose=0, shuffle=False)
        return
    call = call or (lambda layer, *tensors: layer(*tensors))
    arrays = [np.asarray(array) for array in inputs]
    symbolic = [keras.Input(shape=(None,) * (array.ndim - 2) + (array.shape[-1],) if index == 0
                            else (None,) * (array.ndim - 1), dtype=str(array.dtype), name=f"input_{index}")
                for index, array in enumerate(arrays)]
    first = keras.layers.Dense(arrays[0].shape[-1], name="input_projection")(symbolic[0])

    class OneStep(keras.Model):  # the loss is the mean square of the piece's output: any loss that has a gradient
        def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
            return ops.mean(ops.square(ops.cast(y_pred, "float32")))

    model = OneStep(symbolic, call(piece, first, *symbolic[1:]))
    model.compile(optimizer=keras.optimizers.SGD(1e-3), jit_compile="auto")
    model.fit({tensor.name: array for tensor, array in zip(symbolic, arrays)}, epochs=1, batch_size=len(arrays[0]),
              verbose=0, shuffle=False)


def _traced(error):
    """Whether an error met in the compiled step is a tensor read where it has no value (a traced tensor)."""
    return any(type(link).__name__.startswith("Tracer") or "symbolic" in str(link) or "eager execution" in str(link)
               for link in _chain(error))


def _chain(error):
    """`error` and the errors it was raised from (Keras wraps an error of a layer's `call` in one of its own)."""
    links = []
    while error is not None and error not in links:
        links.append(error)
        error = error.__cause__ or error.__context__
    return links


def _learner_line(error):
    """(source line, function name, the frame after it is numpy's) of the learner's innermost frame in the
    traceback of the first error raised: the last frame outside the installed packages and the standard library."""
    import sys
    import sysconfig
    import traceback

    installed = {sysconfig.get_paths()[key] for key in ("purelib", "platlib", "stdlib")} | {sys.prefix}
    course = str(Path(__file__).resolve().parent)
    frames = traceback.extract_tb(_chain(error)[-1].__traceback__)
    ours = [index for index, frame in enumerate(frames)
            if not frame.filename.startswith((*installed, course))]
    if not ours:
        return None, None, False
    frame = frames[ours[-1]]
    after = frames[ours[-1] + 1:ours[-1] + 2]
    # numpy's own code next, or a tensor's `__array__` (numpy asking a traced tensor for its values)
    in_numpy = bool(after) and ("numpy" in Path(after[0].filename).parts or after[0].name == "__array__")
    return (frame.line or "").strip() or None, frame.name, in_numpy


def _fail_compiled(name, error, hint, keras):
    """The ✘ of `check_compiled_step`: the first error raised, where in the learner's code, and what to do."""
    __tracebackhide__ = True
    origin = _chain(error)[-1]
    line, function, in_numpy = _learner_line(error)
    text = " ".join((str(origin).strip().splitlines() or [""])[0].split())  # the first line: JAX's goes on for 10
    text = text if len(text) <= 200 else text[:200] + " …"
    got = message("raised", error_type=type(origin).__name__, error=text)
    if line:
        got += "\n" + " " * 12 + _compiled("raised at `{line}` (in {function})").format(line=line, function=function)
    elif function:
        got += "\n" + " " * 12 + _compiled("raised in {function}").format(function=function)
    uses_numpy = (in_numpy or bool(line and re.search(r"\b(np|numpy)\.", line)) or "numpy" in text.lower()
                  or "__array__" in text)
    reason = _compiled("this uses numpy and cannot run inside a compiled training step: there a tensor has a shape "
                       "but no values yet, and a length may be unknown. Write it with keras.ops only "
                       "(ops.shape, ops.arange, ops.where, ops.cos, ...)") if uses_numpy else _compiled(
        "this cannot run inside a compiled training step: there a tensor has a shape but no values yet (no numpy, "
        "no Python if or float() on a tensor), and a length may be unknown. Write it with keras.ops only")
    backend = {"tensorflow": "TensorFlow", "jax": "JAX", "torch": "PyTorch"}.get(keras.backend.backend(),
                                                                                   keras.backend.backend())
    raise CheckFailed(_message(_compiled("{name} in a compiled training step (model.fit on {backend})").format(
        name=name, backend=backend), _compiled("one training step runs"), got,
        _compiled("{reason}; {hint}").format(reason=reason, hint=check_text(hint)) if hint else reason)) from error


def answer_digest(value, salt, digits=None):
    """The salted SHA-256 of an answer, as `check_digest` compares it: `"<salt>$<hex>"`.

    The value is first put in a canonical text form: numbers rounded to `digits` decimals (when given), sets
    sorted, tuples and lists element by element, so `(110, 340)` and `[110.0, 340.0]` agree.

    Example:
        answer_digest(0.015, "3.1 random_share", digits=4)  # written into the check cell by the instructor
    """
    return f"{salt}${hashlib.sha256(f'{salt}|{_canonical(value, digits)}'.encode()).hexdigest()}"


def check_digest(name, got, digest, digits=None, hint=None):
    """Checks an answer against the salted hash of the expected one, without the expected value in the notebook.

    For closed-book questions: the learner copy holds only `digest` (from `answer_digest`), so a failure says what
    is wrong (the hint) but not the answer. Small answer spaces (a few booleans) can still be found by trying;
    the grader's hidden tests, not this check, decide the grade.

    Example:
        check_digest("squad_f1[0]", squad_f1[0], "1.4 squad_f1[0]$5a1f...", digits=1, hint="§5.1, the BERT_BASE row")
    """
    name = check_text(name)
    salt = digest.split("$", 1)[0]
    try:
        matches = hmac.compare_digest(answer_digest(got, salt, digits), digest)
    except (TypeError, ValueError) as error:
        _fail(name, message("answer_kind"), f"{_show(got)} ({error})", hint)
    if not matches:
        _fail(name, message("digest_answer"), _show(got), hint)
    _passed(name)


def _canonical(value, digits):
    if isinstance(value, (bool, np.bool_)):
        return repr(bool(value))
    if isinstance(value, (int, float, np.integer, np.floating)):
        number = float(value)
        if not np.isfinite(number):
            raise ValueError("not a finite number")
        if digits is None:
            return repr(int(number)) if number == int(number) else repr(number)
        return f"{round(number, digits) + 0.0:.{digits}f}"
    if isinstance(value, str):
        return repr(value)
    if isinstance(value, (set, frozenset)):
        return "{" + ",".join(sorted(_canonical(item, digits) for item in value)) + "}"
    if isinstance(value, (tuple, list)):
        return "(" + ",".join(_canonical(item, digits) for item in value) + ")"
    if isinstance(value, dict):
        return "{" + ",".join(f"{_canonical(key, None)}:{_canonical(item, digits)}"
                              for key, item in sorted(value.items(), key=lambda pair: repr(pair[0]))) + "}"
    if value is None:
        return "None"
    if _is_array_like(value):
        return _canonical(np.asarray(value).tolist(), digits)
    raise TypeError(f"cannot compare a {type(value).__name__}")


def done(exercise_id):
    """Prints the line that closes a check cell: reaching it means every check of the exercise passed."""
    print(message("exercise_passed", exercise_id=exercise_id))


def _passed(what):
    print(message("passed", name=what))


def _fail(name, expected_text, got_text, hint):
    raise CheckFailed(_message(name, expected_text, got_text, hint))


def _message(name, expected_text, got_text, hint):
    """The ✘ lines of a check; `name` and the texts already in the learner's language (`check_text`), as the
    check's caller looks them up before it builds them into other messages; the hint is looked up here."""
    lines = [message("not_expected", name=name), message("expected", text=expected_text),
             message("got", text=got_text)]
    if hint:
        lines.append(message("hint", text=check_text(hint)))
    return "\n".join(lines)


@contextlib.contextmanager
def _answer_compared(name, expected_text, got, hint):
    """Turns an error met while reading the learner's value `got` (a ragged list, a tuple where one array was
    asked for, an object numpy cannot compare) into a ✘ message; `expected_text()` describes what was asked."""
    try:
        yield
    except (CheckFailed, NotImplementedError):
        raise
    except Exception as error:
        raise CheckFailed(_message(name, expected_text(), f"{_show(got)}\n{' ' * 12}" + message(
            "not_comparable", error_type=type(error).__name__, error=error), hint)) from error


def _is_array_like(value):
    return isinstance(value, np.ndarray) or hasattr(value, "shape") and hasattr(value, "dtype")


def _show(value):
    try:
        value = _plain(value)
        if _is_array_like(value):
            array = np.asarray(value)
            text = np.array2string(array, precision=4, threshold=20, edgeitems=2, separator=", ")
            text = " ".join(text.split())
            shown = message("array_shown", shape=array.shape, dtype=array.dtype, values=text)
        elif isinstance(value, (tuple, list)) and any(_is_array_like(item) for item in value):
            shown = message("items_shown", kind=type(value).__name__, count=len(value), items=", ".join(
                message("array_item", shape=tuple(np.shape(item))) if _is_array_like(item) else _show(item)
                for item in value))
        else:
            shown = repr(value)
    except Exception:  # noqa: BLE001 (an object that cannot even be shown is still named)
        shown = message("object_shown", kind=type(value).__name__)
    return shown if len(shown) <= _MAX_SHOWN else shown[:_MAX_SHOWN] + " …"


def _plain(value):
    """`value` with numpy scalars as Python numbers, inside lists, tuples, sets and dicts too, so that a message
    shows 0.5, not np.float64(0.5)."""
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, (list, tuple, set, frozenset)):
        return type(value)(_plain(item) for item in value)
    if isinstance(value, dict):
        return {_plain(key): _plain(item) for key, item in value.items()}
    return value


def _array_difference(got, expected, rtol, atol):
    """Returns "" when close, else a sentence naming the worst element."""
    if not (np.issubdtype(got.dtype, np.number) or got.dtype == bool):
        return "" if np.array_equal(got, expected) else message("not_numbers")
    got_values, expected_values = got.astype(np.float64), expected.astype(np.float64)
    close = np.isclose(got_values, expected_values, rtol=rtol, atol=atol)
    if close.all():
        return ""
    gap = np.where(close, 0.0, np.abs(got_values - expected_values))
    gap = np.nan_to_num(gap, nan=np.inf)
    worst = np.unravel_index(np.argmax(gap), gap.shape) if gap.ndim else ()
    index = tuple(int(i) for i in worst)
    return message("elements_differ", count=int((~close).sum()), size=close.size, index=index,
                   expected=f"{expected_values[index]:.6g}", got=f"{got_values[index]:.6g}")


def _structure_difference(got, expected, rtol, atol, where=""):
    """Returns "" when `got` matches `expected` leaf by leaf, else a sentence saying where it does not."""
    at = message("in_where", where=where) if where else ""  # " in [0]": where the difference is, if not at the top
    if isinstance(expected, dict):
        if not isinstance(got, dict) or set(got) != set(expected):
            return message("expected_dict", keys=sorted(expected), where=at)
        for key in expected:
            problem = _structure_difference(got[key], expected[key], rtol, atol, f"{where}[{key!r}]")
            if problem:
                return problem
        return ""
    if isinstance(expected, (tuple, list)):
        if not isinstance(got, (tuple, list)) or len(got) != len(expected):
            return message("expected_sequence", kind=type(expected).__name__, length=len(expected), where=at)
        for index, (got_item, expected_item) in enumerate(zip(got, expected)):
            problem = _structure_difference(got_item, expected_item, rtol, atol, f"{where}[{index}]")
            if problem:
                return problem
        return ""
    got_array, expected_array = np.asarray(got), np.asarray(expected)
    if got_array.shape != expected_array.shape:
        return message("shape_mismatch", got=got_array.shape, where=at, expected=expected_array.shape)
    problem = _array_difference(got_array, expected_array, rtol, atol)
    return f"{problem[:-1]}{at}{problem[-1]}" if problem else ""


def _as_call_arguments(inputs):
    if isinstance(inputs, dict):
        return (), inputs
    if isinstance(inputs, tuple):
        return inputs, {}
    return (inputs,), {}


def _describe_arguments(args, kwargs):
    def describe(value):
        if _is_array_like(value):
            return f"<array {tuple(np.shape(value))}>"
        text = repr(value)
        return text if len(text) <= 40 else text[:40] + "…"

    parts = [describe(value) for value in args] + [f"{key}={describe(value)}" for key, value in kwargs.items()]
    return ", ".join(parts)


_LOCATOR_HELPERS = ("check_same_activations", "first_divergence")


def __getattr__(name):
    """`check_same_activations` and `first_divergence` live in `bertlib_course.locate`, imported when first asked for
    (so this module needs nothing else at import time)."""
    if name in _LOCATOR_HELPERS:
        from bertlib_course import locate

        return getattr(locate, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted([*globals(), *_LOCATOR_HELPERS])
