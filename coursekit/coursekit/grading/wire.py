"""Values between the grader's checker and a learner's kernel, and the kernel's end of that channel (`Agent`).

A value travels as a JSON tree: None, booleans, numbers and strings as themselves, everything else as an object
tagged "t" (tuple, list, set, frozenset, dict, bytes, complex, slice, ndarray as `.npy` bytes read with
`allow_pickle=False`, numpy scalar, random.Random and numpy Generator states, SimpleNamespace). An object that is
none of these travels as a reference ("ref"): the checker gets a stand-in that can call it, read its attributes
and items, and pass it back, but never runs its code outside the kernel. Nothing is unpickled, no class named in a
message is imported by the checker, and a message over `MAX_BYTES` or nested deeper than `MAX_DEPTH` is refused.

This file also runs inside the learner's kernel (the grader sends its source), so it imports only the standard
library and numpy, and trusts nothing it reads there: the kernel's answers are values the learner could have
computed anyway; what decides a grade is the instructor's check, run by the checker on those values. The one
exception is a check the checker sends here to run (`Agent._run`: a Keras piece inside a compiled training step,
which only the kernel that holds the class can run); its pass is this kernel's report.
"""

import base64
import dataclasses
import io
import json
import random
import types

MAX_BYTES = 64 * 2**20  # one message, as JSON
MAX_DEPTH = 64
MAX_REPR = 300


class WireError(ValueError):
    """A message that is not a value of this format (or is too large, or too deep)."""


def dumps(tree):
    text = json.dumps(tree, separators=(",", ":"))
    if len(text) > MAX_BYTES:
        raise WireError(f"a value of {len(text) / 2**20:.0f} MB, more than the {MAX_BYTES // 2**20} MB the grader "
                        f"passes between the kernel and the checks")
    return text


def loads(text):
    if len(text) > MAX_BYTES:
        raise WireError(f"a message of {len(text) / 2**20:.0f} MB, more than {MAX_BYTES // 2**20} MB")
    try:
        return json.loads(text)
    except (ValueError, RecursionError) as error:
        raise WireError(f"not a JSON message ({error})") from None


def _numpy():
    import numpy

    return numpy


def encode(value, refer, plain_dataclasses=False, generators=None, depth=0):
    """The JSON tree of `value`; `refer(obj)` gives the tree of an object that is not a value (a reference).

    `generators` (a list) collects the random generators met, in order, so their states can be sent back after a
    call. `plain_dataclasses` sends a dataclass instance as its fields (the checker's side), not as a reference.
    """
    if depth > MAX_DEPTH:
        raise WireError(f"a value nested more than {MAX_DEPTH} levels deep")
    deeper = depth + 1

    def inner(item):
        return encode(item, refer, plain_dataclasses, generators, deeper)

    if value is None or type(value) in (bool, str):
        return value
    if type(value) is int:
        return value
    if type(value) is float:
        return value if value == value and abs(value) != float("inf") else {"t": "float", "v": repr(value)}
    np = _numpy()
    if isinstance(value, np.ndarray) or isinstance(value, np.generic):
        return _encode_array(value, inner)
    if isinstance(value, bool):
        return bool(value)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return inner(float(value))
    if isinstance(value, str):
        return str(value)
    if isinstance(value, complex):
        return {"t": "complex", "v": [inner(value.real), inner(value.imag)]}
    if isinstance(value, (bytes, bytearray)):
        return {"t": "bytes", "v": base64.b64encode(bytes(value)).decode()}
    if isinstance(value, tuple):  # a named tuple too, as its items
        return {"t": "tuple", "v": [inner(item) for item in value]}
    if isinstance(value, list):
        return {"t": "list", "v": [inner(item) for item in value]}
    if isinstance(value, (set, frozenset)):
        return {"t": "frozenset" if isinstance(value, frozenset) else "set", "v": [inner(item) for item in value]}
    if isinstance(value, dict):
        return {"t": "dict", "v": [[inner(key), inner(item)] for key, item in value.items()]}
    if isinstance(value, slice):
        return {"t": "slice", "v": [inner(value.start), inner(value.stop), inner(value.step)]}
    if value is Ellipsis:
        return {"t": "ellipsis"}
    if isinstance(value, random.Random):
        if generators is not None:
            generators.append(value)
        return {"t": "random", "v": inner(value.getstate())}
    if isinstance(value, np.random.Generator):
        if generators is not None:
            generators.append(value)
        state = value.bit_generator.state
        return {"t": "generator", "name": str(state["bit_generator"]), "v": inner(state)}
    if isinstance(value, types.SimpleNamespace):
        return {"t": "namespace", "v": [[str(key), inner(item)] for key, item in vars(value).items()]}
    if plain_dataclasses and dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {"t": "namespace", "v": [[field.name, inner(getattr(value, field.name))]
                                        for field in dataclasses.fields(value)],
                "class": f"{type(value).__module__}:{type(value).__qualname__}"}
    if hasattr(value, "__array__") and hasattr(value, "shape") and hasattr(value, "dtype"):
        try:  # a tensor of any backend, as numpy; a PyTorch tensor that records gradients, detached first
            detach = getattr(value, "detach", None)
            return _encode_array(np.asarray(detach().cpu() if callable(detach) else value), inner)
        except Exception:  # noqa: BLE001 (not convertible: a reference then)
            pass
    return refer(value)


def _encode_array(value, inner):
    np = _numpy()
    scalar = isinstance(value, np.generic)
    array = np.asarray(value)
    if array.dtype.hasobject:
        return {"t": "objects", "shape": list(array.shape), "v": [inner(item) for item in array.ravel().tolist()]}
    buffer = io.BytesIO()
    np.save(buffer, array, allow_pickle=False)
    return {"t": "scalar" if scalar else "array", "v": base64.b64encode(buffer.getvalue()).decode()}


def decode(tree, resolve, generators=None, depth=0):
    """The value of a JSON tree; `resolve(tree)` gives the object of a reference. Raises WireError on anything else."""
    if depth > MAX_DEPTH:
        raise WireError(f"a value nested more than {MAX_DEPTH} levels deep")
    if tree is None or type(tree) in (bool, int, float, str):
        return tree
    if type(tree) is not dict or type(tree.get("t")) is not str:
        raise WireError(f"not a value: {type(tree).__name__}")
    kind, items = tree["t"], tree.get("v")

    def inner(item):
        return decode(item, resolve, generators, depth + 1)

    def listed(count=None):
        if type(items) is not list or (count is not None and len(items) != count):
            raise WireError(f"a malformed {kind}")
        return [inner(item) for item in items]

    try:
        if kind in _COLLECTIONS:
            return _COLLECTIONS[kind](listed())
        if kind in ("float", "dict", "bytes", "complex", "slice", "ellipsis", "namespace"):
            return _decode_builtin(kind, items, inner, listed)
        if kind in ("array", "scalar", "objects"):
            return _decode_array(kind, tree, items, listed)
        if kind in ("random", "generator"):
            generator = _decode_generator(kind, tree, items, inner)
            if generators is not None:
                generators.append(generator)
            return generator
        if kind == "ref":
            return resolve(tree)
    except WireError:
        raise
    except (TypeError, ValueError, OverflowError, KeyError) as error:
        raise WireError(f"a malformed {kind}: {error}") from None
    raise WireError(f"an unknown kind of value {kind!r}")


_COLLECTIONS = {"tuple": tuple, "list": list, "set": set, "frozenset": frozenset}


def _decode_builtin(kind, items, inner, listed):
    """A value of a built-in type other than a plain collection, from its tree's `items` ("v")."""
    if kind == "float":
        if items not in ("nan", "inf", "-inf"):
            raise WireError(f"not a float: {items!r}")
        return float(items)
    if kind == "dict":
        if type(items) is not list or not all(type(pair) is list and len(pair) == 2 for pair in items):
            raise WireError("a malformed dict")
        return {inner(key): inner(item) for key, item in items}
    if kind == "bytes":
        return base64.b64decode(items, validate=True)
    if kind == "complex":
        real, imag = listed(2)
        return complex(real, imag)
    if kind == "slice":
        return slice(*listed(3))
    if kind == "ellipsis":
        return Ellipsis
    if type(items) is not list or not all(type(pair) is list and len(pair) == 2 and type(pair[0]) is str
                                          for pair in items):  # a namespace
        raise WireError("a malformed namespace")
    return types.SimpleNamespace(**{key: inner(item) for key, item in items})


def _decode_array(kind, tree, items, listed):
    """A numpy array or scalar (`.npy` bytes, read with `allow_pickle=False`), or an array of objects (its items)."""
    np = _numpy()
    if kind in ("array", "scalar"):
        array = np.load(io.BytesIO(base64.b64decode(items, validate=True)), allow_pickle=False)
        return array[()] if kind == "scalar" else array
    shape = tree.get("shape")
    if type(shape) is not list or not all(type(size) is int and size >= 0 for size in shape):
        raise WireError("a malformed object array")
    values = listed()
    array = np.empty(len(values), dtype=object)
    array[:] = values
    return array.reshape(shape)


def _decode_generator(kind, tree, items, inner):
    """A `random.Random`, or a numpy Generator of one of numpy's own bit generators, in the state `items` holds."""
    if kind == "random":
        generator = random.Random()
        generator.setstate(_as_tuples(inner(items)))
        return generator
    np = _numpy()
    name = tree.get("name")
    if name not in ("PCG64", "PCG64DXSM", "Philox", "SFC64", "MT19937"):
        raise WireError(f"an unknown bit generator {name!r}")
    generator = np.random.Generator(getattr(np.random, name)())
    generator.bit_generator.state = inner(items)
    return generator


def _as_tuples(value):
    return tuple(_as_tuples(item) for item in value) if isinstance(value, (list, tuple)) else value


def generator_state(generator):
    return generator.getstate() if isinstance(generator, random.Random) else generator.bit_generator.state


def set_generator_state(generator, state):
    if isinstance(generator, random.Random):
        generator.setstate(_as_tuples(state))
    else:
        generator.bit_generator.state = state


def describe_error(error):
    """What the checker learns of an exception raised by the learner's code: its type's name and its message."""
    kind = type(error)
    return {"type": kind.__name__[:100], "builtin": kind.__module__ == "builtins",
            "message": str(error)[:2000]}


class _Raw:
    """A reply as IPython shows it in `user_expressions`: its text, with no quotes or escapes added."""

    def __init__(self, text):
        self.text = text

    def __repr__(self):
        return self.text


class Agent:
    """The kernel's end: answers the checker's requests about the learner's namespace (runs inside the kernel)."""

    def __init__(self, namespace):
        self.namespace, self.objects, self.result = namespace, {}, _Raw("")

    def handle(self, request_text):
        """Answers one request; the answer goes to `self.result`, which the grader reads in the reply."""
        try:
            reply = self._answer(loads(base64.b64decode(request_text).decode()))
            text = dumps(reply)
        except BaseException as error:  # noqa: BLE001 (SystemExit from the learner's code is an answer too)
            text = dumps({"raised": describe_error(error)})
        self.result = _Raw(base64.b64encode(text.encode()).decode())

    def _keep(self, value):
        number = len(self.objects) + 1
        self.objects[number] = value
        try:
            shown = repr(value)[:MAX_REPR]
        except Exception:  # noqa: BLE001 (a repr that raises still gets a reference)
            shown = f"<{type(value).__name__}>"
        return {"t": "ref", "id": number, "type": type(value).__qualname__[:100], "callable": callable(value),
                "repr": shown}

    def _resolve(self, tree):
        if tree.get("id") not in self.objects:
            raise WireError(f"no object {tree.get('id')!r} in this kernel")
        return self.objects[tree["id"]]

    def _decode(self, tree, generators=None):
        return decode(tree, self._resolve, generators)

    def _encode(self, value):
        return encode(value, self._keep)

    def _answer(self, request):
        operation = request["op"]
        if operation == "names":
            return {"values": {name: self._encode(self.namespace[name]) for name in request["names"]
                               if name in self.namespace}}
        if operation == "run":
            return self._run(request)
        target = self._resolve(request)
        try:
            if operation == "call":
                generators = []
                args = [self._decode(item, generators) for item in request["args"]]
                kwargs = {key: self._decode(item, generators) for key, item in request["kwargs"]}
                value = target(*args, **kwargs)
                return {"value": self._encode(value),
                        "states": [self._encode(generator_state(generator)) for generator in generators]}
            if operation == "getattr":
                value = getattr(target, request["name"])
            elif operation == "getitem":
                value = target[self._decode(request["key"])]
            elif operation == "len":
                value = len(target)
            elif operation == "iter":
                value = list(target)
            else:
                raise WireError(f"an unknown request {operation!r}")
        except WireError:
            raise
        except BaseException as error:  # noqa: BLE001 (the learner's code raised: the checker re-raises it)
            return {"raised": describe_error(error)}
        return {"value": self._encode(value)}

    def _run(self, request):
        """Runs one statement of an instructor's check here, in a namespace of its own: a check that must see the
        learner's code run on this machine's backend (a Keras layer inside a compiled training step), which no
        stand-in in the checker can do. The statement's names come as imports (modules, and functions of installed
        modules) and values; the learner's objects as references. An AssertionError (a failed check) comes back as
        its message, anything else as the error it is."""
        import contextlib
        import importlib

        namespace = {"__name__": "__coursekit_check__"}
        for name, (module, qualname) in request["imports"].items():
            value = importlib.import_module(module)
            for part in filter(None, qualname.split(".")):
                value = getattr(value, part)
            namespace[name] = value
        for name, tree in request["values"].items():
            namespace[name] = self._decode(tree)
        output = io.StringIO()
        try:
            with contextlib.redirect_stdout(output), contextlib.redirect_stderr(output):
                exec(compile(request["source"], "the instructor's check", "exec"), namespace)  # noqa: S102
        except AssertionError as error:
            return {"failed": str(error)[:20_000], "output": output.getvalue()[-4000:]}
        except BaseException as error:  # noqa: BLE001 (the learner's code raised: the checker re-raises it)
            return {"raised": describe_error(error)}
        return {"output": output.getvalue()[-4000:]}
