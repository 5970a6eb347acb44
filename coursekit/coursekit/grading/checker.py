"""The checker: the instructor's check cells run here, in the grader's runner, never in the learner's kernel.

The runner is a fresh interpreter per submission that loads no learner code. Before each check cell, the checker
binds every name the solution regions up to that check define to what the learner's kernel holds under that name:
a value (numbers, strings, containers, numpy arrays; see wire.py) is copied, any other object becomes a `Remote`,
a stand-in whose calls, attributes and items are answered by the kernel, with values as arguments and results.
Then it runs the solution notebook's own cells up to the check (the ordinary ones whole, the solution cells
without their regions) and the check cell, in one namespace of its own. So `numpy`, the builtins and the check
helpers the check uses are the grader's, and what the learner's code can do is return values; patching numpy or
the course's check helpers in the kernel changes nothing here.

One kind of check cannot run here: one that must see the learner's code run on the grading machine's backend, such
as a Keras layer inside a compiled `model.fit` step (a stand-in answers calls with values; it cannot be traced). A
check function marked with `coursekit_in_kernel = True` (see `in_kernel`) is such a check: a top-level statement of a
check cell that calls one runs in the learner's kernel (`wire.Agent._run`), with the statement's modules and
installed functions imported there, its values copied and the learner's objects passed by reference; its ✔ or ✘
comes back. Its pass is the kernel's report, so a notebook that tampers with the kernel's Keras could forge it; the
value checks, which decide the numbers, stay here.

A check's exceptions decide its outcome as before: an AssertionError (CheckFailed) fails it, NotImplementedError
says "not attempted", anything else is an error. An exception raised by the learner's code in the kernel is raised
again here: a builtin exception as itself (a check may expect a ValueError), any other as a `LearnerError` of the
same name.
"""

import ast
import base64
import builtins
import contextlib
import io
import re
import signal
import time
import types

from coursekit.grading import wire
from coursekit.grading.outcome import Ending, Outcome, Status

AGENT_MODULE = "_coursekit_grading_wire"
_AGENT = f"__import__('sys').modules[{AGENT_MODULE!r}].agent"
_OUTPUT_KEPT = 4000  # characters of a check's printed output kept for its message


class KernelGone(BaseException):
    """The kernel died, hit a limit, or the notebook's time ran out while a step was waiting for it.

    A BaseException, so that no `except Exception` in a check takes it for the learner's error.
    """

    def __init__(self, ending, detail=""):
        super().__init__(detail or ending.value)
        self.ending, self.detail = ending, detail


class LearnerError(Exception):
    """An exception of the learner's code (not a builtin one), raised again in the checker under its own name."""


class Unsendable(TypeError):
    """A check passed the learner's code an object that cannot travel (a function, a model): a grader problem."""


_BUILTIN_ERRORS = {name: value for name, value in vars(builtins).items()
                   if isinstance(value, type) and issubclass(value, Exception)}


def in_kernel(check):
    """Marks a check function to run in the learner's kernel when a check cell calls it (see the module's text)."""
    check.coursekit_in_kernel = True
    return check


_IN_KERNEL = "__coursekit_in_kernel__"


def kernel_statements(source, name):
    """`source` compiled so that each top-level statement calling a function by name asks, when it runs, whether
    that function is marked `coursekit_in_kernel`, and if so hands the statement to `__coursekit_in_kernel__`."""
    tree = ast.parse(source, name)
    for index, statement in enumerate(tree.body):
        call = statement.value if isinstance(statement, ast.Expr) else None
        if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name)):
            continue
        bound = {argument.arg for node in ast.walk(statement) if isinstance(node, ast.Lambda)
                 for argument in ast.walk(node.args) if isinstance(argument, ast.arg)}
        names = sorted({node.id for node in ast.walk(statement) if isinstance(node, ast.Name)} - bound)
        test = ast.parse(f"getattr(globals().get({call.func.id!r}), 'coursekit_in_kernel', False) is True",
                         mode="eval").body
        sent = ast.parse(f"{_IN_KERNEL}({ast.get_source_segment(source, statement)!r}, {names!r})").body
        tree.body[index] = ast.copy_location(ast.If(test=test, body=sent, orelse=[statement]), statement)
    return compile(ast.fix_missing_locations(tree), name, "exec")


def install_code():
    """The code that installs the kernel's end of the channel (wire.py's `Agent`) in a fresh kernel."""
    source = open(wire.__file__, encoding="utf-8").read()
    return (f"def _coursekit_install(source):\n"
            f"    import sys, types\n"
            f"    module = types.ModuleType({AGENT_MODULE!r})\n"
            f"    module.__builtins__ = dict(vars(__import__('builtins')))  # its own, should the notebook patch them\n"
            f"    exec(compile(source, 'coursekit-grading-wire', 'exec'), module.__dict__)\n"
            f"    module.agent = module.Agent(get_ipython().user_ns)\n"
            f"    sys.modules[{AGENT_MODULE!r}] = module\n"
            f"_coursekit_install({source!r})\n"
            f"del _coursekit_install\n")


class Channel:
    """Requests to the kernel's `Agent`, over the runner's kernel client (`execute(code, user_expressions)` returns
    the execute_reply's content or raises KernelGone)."""

    def __init__(self, execute):
        self._execute = execute

    def request(self, request, generators=()):
        text = base64.b64encode(wire.dumps(request).encode()).decode()
        reply = self._execute(f"{_AGENT}.handle({text!r})", {"reply": f"{_AGENT}.result"})
        try:
            shown = reply["user_expressions"]["reply"]["data"]["text/plain"]
            answer = wire.loads(base64.b64decode(shown, validate=True).decode())
            if not isinstance(answer, dict):
                raise wire.WireError("not an answer")
        except (KeyError, TypeError, ValueError) as error:
            raise wire.WireError(f"the kernel's answer could not be read ({type(error).__name__}); did the notebook "
                                 f"change the kernel's grading module?") from None
        if "raised" in answer:
            _raise_again(answer["raised"])
        for generator, state in zip(generators, answer.get("states", [])):
            wire.set_generator_state(generator, self.decode(state))
        return answer

    def names(self, names):
        """{name: value or Remote} of the names the kernel's namespace holds."""
        values = self.request({"op": "names", "names": list(names)}).get("values")
        if not isinstance(values, dict):
            raise wire.WireError("the kernel's answer is not a table of names")
        return {name: self.decode(tree) for name, tree in values.items() if name in names}

    def decode(self, tree, generators=None):
        return wire.decode(tree, self._remote, generators)

    def encode(self, value, generators=None):
        return wire.encode(value, self._refer, plain_dataclasses=True, generators=generators)

    def _remote(self, tree):
        if type(tree.get("id")) is not int:
            raise wire.WireError("a malformed reference")
        return Remote(self, tree["id"], str(tree.get("type", "object"))[:100], str(tree.get("repr", ""))[:300])

    @staticmethod
    def _refer(value):
        if isinstance(value, Remote):
            return {"t": "ref", "id": value._id}
        raise Unsendable(f"a check passed a {type(value).__name__} to the learner's code; only values (numbers, "
                        f"strings, containers, arrays, random generators) and the learner's own objects can go there")

    def operate(self, remote, operation, **fields):
        generators = []
        if operation == "call":
            fields = {"args": [self.encode(item, generators) for item in fields["args"]],
                      "kwargs": [[key, self.encode(item, generators)] for key, item in fields["kwargs"].items()]}
        elif operation == "getitem":
            fields = {"key": self.encode(fields["key"])}
        return self.decode(self.request({"op": operation, "id": remote._id, **fields}, generators)["value"])


def _raise_again(description):
    if not isinstance(description, dict):
        raise wire.WireError("a malformed exception")
    name = str(description.get("type", "Exception"))
    message = str(description.get("message", ""))
    if description.get("builtin") is True and name in _BUILTIN_ERRORS:
        raise _BUILTIN_ERRORS[name](message)
    safe_name = re.sub(r"\W", "_", name)[:100] or "Exception"
    raise type(safe_name, (LearnerError,), {})(message)


class Remote:
    """A learner's object that is not a value: it stays in the kernel. Calling it, reading an attribute (not a
    private one) or an item, taking its length or iterating it asks the kernel; it has no truth value, and it is
    equal only to itself."""

    __slots__ = ("_channel", "_id", "_type", "_repr")

    def __init__(self, channel, number, type_name, shown):
        self._channel, self._id, self._type, self._repr = channel, number, type_name, shown

    def __call__(self, *args, **kwargs):
        return self._channel.operate(self, "call", args=args, kwargs=kwargs)

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        return self._channel.operate(self, "getattr", name=name)

    def __getitem__(self, key):
        return self._channel.operate(self, "getitem", key=key)

    def __len__(self):
        length = self._channel.operate(self, "len")
        if type(length) is not int or length < 0:
            raise TypeError(f"the learner's {self._type} gave a length that is not a count")
        return length

    def __iter__(self):
        items = self._channel.operate(self, "iter")
        if not isinstance(items, list):
            raise TypeError(f"the learner's {self._type} could not be iterated")
        return iter(items)

    def __bool__(self):
        raise TypeError(f"the learner's {self._type} is not a value: it is neither true nor false")

    def __repr__(self):
        return self._repr or f"<the learner's {self._type}>"


class Checker:
    """Runs the instructor's code for one submission: the solution notebook's context, then each check cell."""

    def __init__(self, context, channel, deadline):
        self.context, self.channel, self.deadline = list(context), channel, deadline
        self.namespace = {"__name__": "__main__", _IN_KERNEL: self._in_kernel}
        self.done_until = 0  # the context cells before this solution-notebook index have run

    def run(self, step):
        """The outcome of a check step; raises KernelGone when the kernel goes or the time runs out."""
        names = list(dict.fromkeys(name for cell in self.context if cell.index < step.solution_index
                                   for name in cell.learner_names))
        with self._deadline():
            try:
                values = self.channel.names(names) if names else {}
            except Exception as error:  # noqa: BLE001 (e.g. the notebook broke Python's builtins in its kernel)
                outcome = _check_outcome(error, step.name)
                return Outcome(outcome.status, f"the kernel could not give the values of {', '.join(names)}: "
                                               f"{outcome.message}")
            for name in names:
                if name in values:
                    self.namespace[name] = values[name]
                else:
                    self.namespace.pop(name, None)
            for cell in self.context:
                if self.done_until <= cell.index < step.solution_index:
                    problem = self._run_context(cell)
                    if problem is not None:
                        self.done_until = cell.index + 1
                        return problem
            self.done_until = max(self.done_until, step.solution_index)
            error, output = self._exec(step.source, step.name)
        if error is None:
            return Outcome(Status.PASSED, output)
        return _check_outcome(error, step.name)

    def _run_context(self, cell):
        error, _ = self._exec(cell.code, f"the solution notebook's cell {cell.index}")
        if error is None or cell.may_raise:
            return None
        if cell.given:
            outcome = _check_outcome(error, f"the instructor's part of cell {cell.index}")
            return Outcome(outcome.status, f"{outcome.message}; the code outside your solution regions in that cell "
                                           f"must stay as it was given")
        return Outcome(Status.ERROR, f"the grader could not run the solution notebook's cell {cell.index}: "
                                     f"{type(error).__name__}: {error}", grader_fault=True)

    def _exec(self, source, name):
        output = io.StringIO()
        try:
            with contextlib.redirect_stdout(output), contextlib.redirect_stderr(output):
                exec(kernel_statements(source, name), self.namespace)  # noqa: S102 (the instructor's own code)
        except Exception as error:  # noqa: BLE001 (KernelGone, a BaseException, goes through)
            return error, output.getvalue()[-_OUTPUT_KEPT:]
        return None, output.getvalue()[-_OUTPUT_KEPT:]

    def _in_kernel(self, source, names):
        """Runs one statement of a check in the learner's kernel (see the module's text); its ✘ is raised here."""
        imports, values = {}, {}
        for name in names:
            if name not in self.namespace or name == _IN_KERNEL:
                continue  # a builtin, or a name the statement binds itself
            value = self.namespace[name]
            module = getattr(value, "__module__", None)
            if isinstance(value, types.ModuleType):
                imports[name] = [value.__name__, ""]
            elif isinstance(value, (types.FunctionType, type)) and module and module != "__main__":
                imports[name] = [module, value.__qualname__]
            else:
                values[name] = self.channel.encode(value)
        answer = self.channel.request({"op": "run", "source": source, "imports": imports, "values": values})
        print(str(answer.get("output", "")), end="")
        if "failed" in answer:
            raise AssertionError(str(answer["failed"]))

    @contextlib.contextmanager
    def _deadline(self):
        """Stops the instructor's own code too (a check that loops) at the notebook's deadline."""

        def expire(*_):
            raise KernelGone(Ending.TIMED_OUT)

        remaining = self.deadline - time.monotonic()
        if remaining <= 0:
            raise KernelGone(Ending.TIMED_OUT)
        previous = signal.signal(signal.SIGALRM, expire)
        signal.setitimer(signal.ITIMER_REAL, remaining)
        try:
            yield
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)


def _check_outcome(error, name):
    if isinstance(error, Unsendable):
        return Outcome(Status.ERROR, f"the grader could not run {name}: {error}", grader_fault=True)
    if isinstance(error, AssertionError):
        return Outcome(Status.FAILED, str(error) or f"{type(error).__name__} in {name}")
    if isinstance(error, NotImplementedError):
        return Outcome(Status.FAILED, f"not attempted: {error}")
    if isinstance(error, wire.WireError):
        return Outcome(Status.ERROR, f"the learner's kernel gave an answer the checks cannot use: {error} ({name})")
    return Outcome(Status.ERROR, f"{type(error).__name__}: {error} ({name})")
