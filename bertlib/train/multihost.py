"""One run over several processes (hosts) on JAX: joining them, agreeing before any long work, and stopping together.

A TPU pod slice or a GPU cluster runs one process per host, every process the same command (JAX's multi-process
model: `jax.distributed`, one global mesh of every host's devices). `connect()` joins the processes from Keras' own
variables, the ones `keras.distribution.initialize()` reads:

    KERAS_DISTRIBUTION_JOB_ADDRESSES   host:port of process 0, the coordinator (or every process's, comma-separated)
    KERAS_DISTRIBUTION_NUM_PROCESSES   how many processes the run has
    KERAS_DISTRIBUTION_PROCESS_ID      this process's number, 0 to NUM_PROCESSES - 1

With NUM_PROCESSES alone, JAX finds the coordinator and the process numbers itself where it can (a Cloud TPU pod
slice, SLURM, Open MPI, Kubernetes). A program that already called `keras.distribution.initialize()` is joined as it
is. On CPUs the processes exchange gradients through gloo (`jax_cpu_collectives_implementation`), which is how the
tests run two processes on one machine.

What the processes then share (our implementation choices, beside what JAX does):

* `Processes.agree`: each process posts what it found (a folder it cannot write, its settings, the checkpoint it
  would resume) in the coordinator's key-value store, and every process raises the same one-line error naming the
  process that differs, before any data is built or any step is compiled.
* A watchdog: each process writes a heartbeat into the store every second and reads the others'. A process that
  falls silent for `SILENCE_LIMIT_S` seconds (killed, crashed, its host gone), or a store that stays unreachable
  that long, stops every other process with one line naming it, instead of leaving them in a collective until
  JAX's own timeouts end them minutes later. JAX's own heartbeat (`HEARTBEAT_TIMEOUT_S`) stays as the backstop.
  When process 0 itself dies, JAX's client ends the others at once, with its own message ("Terminating process
  because the JAX distributed service detected fatal errors", then a C++ abort). We could not reword it: given a
  Python function as its `missed_heartbeat_callback`, jaxlib 0.10.2's client aborted with `std::bad_cast` instead.
* A process whose step fails ends within seconds instead of waiting for the others at JAX's shutdown barrier
  (`Processes.failing_together`), so its silence stops them too; when the step failed because a peer died (gloo's
  "Connection reset by peer" names no process), the line names the peer. Errors every process meets alike before
  any training (`RunRefused`) end each process normally.

Example (two hosts), in a shell::

    # host 1, the coordinator; host 2 runs the same with KERAS_DISTRIBUTION_PROCESS_ID=1
    KERAS_DISTRIBUTION_JOB_ADDRESSES=10.0.0.1:1234 KERAS_DISTRIBUTION_NUM_PROCESSES=2 \\
        KERAS_DISTRIBUTION_PROCESS_ID=0 KERAS_BACKEND=jax bertlib pretrain ...
"""

import atexit
import contextlib
import hashlib
import json
import os
import socket
import sys
import threading
import time
from pathlib import Path

VARIABLES = ("KERAS_DISTRIBUTION_JOB_ADDRESSES", "KERAS_DISTRIBUTION_NUM_PROCESSES", "KERAS_DISTRIBUTION_PROCESS_ID")
CONNECT_TIMEOUT_S = 120  # every process must reach the coordinator within this (BERTLIB_CONNECT_TIMEOUT overrides)
BEAT_S = 1.0
SILENCE_LIMIT_S = 15  # a process silent this long is taken for dead (BERTLIB_SILENCE_LIMIT overrides)
HEARTBEAT_TIMEOUT_S = 60  # JAX's coordination service: the backstop behind our watchdog
AGREE_TIMEOUT_S = 900  # a slow host may still be reading its corpus; a dead one is caught by the watchdog first

_JOINED = {}  # "processes": the Processes of this program, once joined


class RunRefused(ValueError):
    """A set-up every process refuses alike (`Processes.agree`, `Processes.check_same`), so each can end normally."""


class Processes:
    """The processes of one run, as this process sees them: `count`, `index` (0 is the coordinator and the one that
    writes), and the coordinator's key-value store through JAX's distributed client."""

    def __init__(self, count, index, client, coordinator=None, command="bertlib"):
        self.count, self.index, self.client = count, index, client
        self.coordinator, self.command = coordinator, command
        self._round = 0  # keys are numbered, so a second `pretrain` in the same program never reads a stale value
        self._stop = threading.Event()
        self._watchdog = None
        self._last_change = {}  # other process (not finished) -> when the watchdog last saw its heartbeat change
        self._changes = {}  # other process -> how many changes of its heartbeat the watchdog has seen

    @property
    def is_writer(self):
        """Whether this process writes the run's files (checkpoints, logs, exports): process 0."""
        return self.index == 0

    def __repr__(self):
        return f"Processes(process {self.index} of {self.count}, coordinator {self.coordinator})"

    # ------------------------------------------------------------------------------------- exchanging values

    def share(self, name, value, timeout_s=AGREE_TIMEOUT_S):
        """Every process's `value` (JSON-ready), in process order: each posts its own and reads the others'."""
        self._round += 1
        prefix = f"bertlib/share/{self._round}/{name}"
        self.client.key_value_set(f"{prefix}/{self.index}", json.dumps(value))
        return [json.loads(self.client.blocking_key_value_get(f"{prefix}/{index}", int(timeout_s * 1000)))
                for index in range(self.count)]

    def agree(self, name, problem):
        """Post this process's `problem` (a sentence, or None) and raise one ValueError naming the first process
        that has one, in every process alike."""
        for index, found in enumerate(self.share(name, problem)):
            if found:
                raise RunRefused(f"{found} (process {index} of {self.count}; every process stops)")

    def check_same(self, name, record):
        """Raise in every process when some process's `record` (a flat dict) differs from process 0's, naming the
        first entry that differs and the process."""
        records = self.share(name, record)
        for index, other in enumerate(records[1:], start=1):
            for key in sorted(set(records[0]) | set(other)):
                if records[0].get(key) != other.get(key):
                    raise RunRefused(
                        f"The processes were started with different {name}: {key} is {records[0].get(key)!r} in "
                        f"process 0 and {other.get(key)!r} in process {index} of {self.count}. Start every process "
                        "with the same command, on the same data.")

    def barrier(self, name, timeout_s=AGREE_TIMEOUT_S):
        """Wait until every process gets here."""
        self._round += 1
        self.client.wait_at_barrier(f"bertlib/{self._round}/{name}", int(timeout_s * 1000))

    @contextlib.contextmanager
    def failing_together(self):
        """A block after which no process waits for one that failed: an error every process raised alike
        (`RunRefused`) goes on; any other error ends this process at once (`fail`)."""
        try:
            yield
        except RunRefused:
            raise
        except BaseException as error:  # noqa: BLE001 (KeyboardInterrupt too: the others must not wait for us)
            self.fail(error)

    def fail(self, error):
        """End this process after an error only it may have met, without waiting for the others (they would wait
        for it in the next collective), in one line. A collective fails when a peer dies, with an error that names
        no process; so first watch the others' heartbeats for a few seconds: one that does not beat twice in that
        time (the first change seen may be an old beat, read late by a watchdog the failed step held up) is named
        as the process that stopped; else this process and its error are."""
        started, counted = time.monotonic(), dict(self._changes)
        time.sleep(3.5 * BEAT_S)
        silent = [index for index in self._last_change if self._changes.get(index, 0) - counted.get(index, 0) < 2]
        if silent and not self._stop.is_set():
            self._stop_all(f"process {silent[0]} of {self.count} stopped (no heartbeat in the "
                           f"{time.monotonic() - started:.0f} s after a step with it failed)")
        print(f"{self.command}: process {self.index} of {self.count} failed: {type(error).__name__}: "
              f"{_first_line(error)}. The other processes stop too; run the same command in every process again to "
              "resume from the last checkpoint.", file=sys.stderr, flush=True)
        os._exit(1)

    # ---------------------------------------------------------------------------------------------- watchdog

    def watch(self):
        """Start the watchdog thread (once): heartbeats out, the others' heartbeats in."""
        if self._watchdog is None:
            self._watchdog = threading.Thread(target=self._watch, name="bertlib-watchdog", daemon=True)
            self._watchdog.start()
            atexit.register(self.finish)

    def finish(self):
        """This process ends normally: say so (so that its silence is not taken for a crash) and stop watching."""
        if self._stop.is_set():
            return
        try:
            self.client.key_value_set(f"bertlib/done/{self.index}", "1", allow_overwrite=True)
        except Exception:  # noqa: BLE001 (the coordinator is gone already: nothing left to tell)
            pass
        self._stop.set()

    def _watch(self):
        limit = float(os.environ.get("BERTLIB_SILENCE_LIMIT", SILENCE_LIMIT_S))
        others = [index for index in range(self.count) if index != self.index]
        seen = {index: (None, time.monotonic()) for index in others}  # last heartbeat read, and when it changed
        beat, failing_since = 0, None
        while not self._stop.wait(BEAT_S):
            beat += 1
            try:
                self.client.key_value_set(f"bertlib/alive/{self.index}", str(beat), allow_overwrite=True)
                beats = {key.rsplit("/", 1)[-1]: value for key, value in self.client.key_value_dir_get("bertlib/alive")}
                done = {key.rsplit("/", 1)[-1] for key, _ in self.client.key_value_dir_get("bertlib/done")}
            except Exception as error:  # noqa: BLE001 (whatever the client raises, the coordinator is unreachable)
                failing_since = failing_since or time.monotonic()  # a network hiccup is forgiven for `limit` s
                if not self._stop.is_set() and time.monotonic() - failing_since > limit:
                    self._stop_all(f"process 0 (the coordinator, {self.coordinator}) cannot be reached "
                                   f"({_first_line(error)})")
                continue
            failing_since, now = None, time.monotonic()
            for index in others:
                value = beats.get(str(index))
                if str(index) in done:
                    self._last_change.pop(index, None)
                    continue
                if value != seen[index][0]:
                    seen[index] = (value, now)
                    self._changes[index] = self._changes.get(index, 0) + 1
                self._last_change[index] = seen[index][1]
                if now - seen[index][1] > limit:
                    self._stop_all(f"process {index} of {self.count} stopped (no heartbeat for "
                                   f"{now - seen[index][1]:.0f} s)")

    def _stop_all(self, what):
        print(f"{self.command}: {what}; process {self.index} stops too. Run the same command in every process "
              "again to resume from the last checkpoint.", file=sys.stderr, flush=True)
        os._exit(1)  # the main thread may be waiting in a collective that will never complete


def _first_line(error):
    text = str(error).strip().splitlines()
    return text[0][:200] if text else type(error).__name__


def requested(environ=None):
    """Whether any of Keras' multi-process variables is set."""
    environ = os.environ if environ is None else environ
    return any(environ.get(name) for name in VARIABLES)


def read_variables(environ=None):
    """`(coordinator address or None, number of processes or None, process id or None)` from Keras' variables,
    checked: a ValueError naming the variable and what it should be."""
    environ = os.environ if environ is None else environ
    values = {}
    for name in VARIABLES[1:]:
        text = environ.get(name)
        if text is None or text == "":
            values[name] = None
            continue
        try:
            values[name] = int(text)
        except ValueError:
            raise ValueError(f"{name}={text!r} is not a whole number.") from None
    count, index = values["KERAS_DISTRIBUTION_NUM_PROCESSES"], values["KERAS_DISTRIBUTION_PROCESS_ID"]
    if count is not None and count < 1:
        raise ValueError(f"KERAS_DISTRIBUTION_NUM_PROCESSES={count}: a run has at least 1 process.")
    if index is not None and (index < 0 or (count is not None and index >= count)):
        raise ValueError(f"KERAS_DISTRIBUTION_PROCESS_ID={index} is out of range: the run has "
                         f"KERAS_DISTRIBUTION_NUM_PROCESSES={count} processes, numbered 0 to {count - 1}."
                         if count is not None else f"KERAS_DISTRIBUTION_PROCESS_ID={index} must be 0 or more.")
    addresses = [address.strip() for address in environ.get(VARIABLES[0], "").split(",") if address.strip()]
    if len(addresses) > 1 and count is not None and len(addresses) != count:
        raise ValueError(f"KERAS_DISTRIBUTION_JOB_ADDRESSES lists {len(addresses)} addresses but "
                         f"KERAS_DISTRIBUTION_NUM_PROCESSES is {count}; list one per process, or only process 0's.")
    for address in addresses:
        host, _, port = address.rpartition(":")
        if not host or not port.isdigit():
            raise ValueError(f"KERAS_DISTRIBUTION_JOB_ADDRESSES: {address!r} is not host:port.")
    if addresses and (count is None or index is None):
        raise ValueError("KERAS_DISTRIBUTION_JOB_ADDRESSES is set, so KERAS_DISTRIBUTION_NUM_PROCESSES and "
                         "KERAS_DISTRIBUTION_PROCESS_ID must be too (every process the same count, each its own id).")
    return (addresses[0] if addresses else None), count, index


def connect(command="bertlib"):
    """Join the run's processes (see the module docstring); returns the `Processes`, or None for a one-process run.

    Call it before JAX uses any device. On TensorFlow and PyTorch the variables are refused with a line that says
    where multi-host training runs. Errors are one line each: a variable out of range, a coordinator that cannot
    be reached within `CONNECT_TIMEOUT_S`, JAX already started.
    """
    if "processes" in _JOINED:
        return _JOINED["processes"]
    import keras

    backend = keras.backend.backend()
    if backend != "jax":
        if requested():
            raise RuntimeError(f"{', '.join(name for name in VARIABLES if os.environ.get(name))} set: a run over "
                               f"several processes runs on the JAX backend (KERAS_BACKEND=jax), not {backend}. "
                               "Keras 3 has no multi-worker training for TensorFlow (keras-team/keras#20585).")
        return None
    import jax

    if not jax.distributed.is_initialized():
        if not requested():
            return None
        _initialize(command)
    if jax.process_count() == 1:
        _JOINED["processes"] = None
        return None
    from jax._src import distributed

    coordinator, _, _ = read_variables()
    processes = Processes(jax.process_count(), jax.process_index(), distributed.global_state.client,
                          coordinator or "found by JAX", command)
    processes.watch()
    _JOINED["processes"] = processes
    return processes


def _initialize(command):
    import jax

    coordinator, count, index = read_variables()
    timeout = int(os.environ.get("BERTLIB_CONNECT_TIMEOUT", CONNECT_TIMEOUT_S))
    if coordinator is not None:
        _check_coordinator(coordinator, count, index, timeout)
    jax.config.update("jax_cpu_collectives_implementation", "gloo")  # CPUs: gradients exchanged over TCP
    try:
        jax.distributed.initialize(coordinator_address=coordinator, num_processes=count, process_id=index,
                                   initialization_timeout=timeout, heartbeat_timeout_seconds=HEARTBEAT_TIMEOUT_S)
    except (RuntimeError, ValueError) as error:
        if "before any JAX" in str(error) or "should only be called once" in str(error):
            raise RuntimeError("JAX was already running when the processes were to be joined: run "
                               f"`{command}` in a fresh process (nothing may use JAX before it).") from None
        if coordinator is None:
            raise RuntimeError(
                f"KERAS_DISTRIBUTION_NUM_PROCESSES={count} without KERAS_DISTRIBUTION_JOB_ADDRESSES, and JAX found "
                "no cluster to ask (a Cloud TPU pod slice, SLURM, Open MPI, Kubernetes): set "
                f"KERAS_DISTRIBUTION_JOB_ADDRESSES=host:port of process 0 ({_first_line(error)}).") from None
        raise RuntimeError(
            f"process {index} of {count} could not join the run at the coordinator {coordinator} within {timeout} s: "
            f"is every process started, and is {coordinator} process 0's address with a free port? "
            f"({_first_line(error)})") from None


def _check_coordinator(coordinator, count, index, timeout):
    """Before JAX joins (whose client aborts the process with a C++ stack trace when it cannot connect): process 0
    can open the coordinator's port, every other process can reach it within `timeout` seconds; else one line."""
    host, _, port = coordinator.rpartition(":")
    if index == 0:
        try:
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
                probe.bind(("", int(port)))
        except OSError as error:
            raise RuntimeError(f"process 0 cannot open the coordinator's port {port} ({error.strerror or error}): "
                               "choose a free port in KERAS_DISTRIBUTION_JOB_ADDRESSES, the same for every "
                               "process.") from None
        return
    deadline = time.monotonic() + timeout
    while True:
        try:
            socket.create_connection((host.strip("[]"), int(port)), timeout=2).close()
            return
        except OSError as error:
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"process {index} of {count} could not reach the coordinator {coordinator} within {timeout} s "
                    f"({error.strerror or error}): is process 0 started, and is {coordinator} its address?") from None
            time.sleep(0.5)


def run_id(processes):
    """A name for this run that every process shares: process 0's host, process id and start time."""
    mine = f"{socket.gethostname()}-{os.getpid()}-{int(time.time())}"
    return processes.share("run id", mine)[0]


def corpus_identity(corpus):
    """What tells two copies of a corpus apart without reading all of it: for each local file its size and the
    SHA-256 of its first MiB; for each local folder of TFRecord shards their names and sizes. Names of the built-in
    corpora and remote paths (gs://) are taken as they are."""
    identity = {}
    for name in corpus:
        paths = [name[len("tfrecords:"):]] if name.startswith("tfrecords:") else [name]
        for path_text in (part for path in paths for part in path.split(",")):
            path = Path(path_text)
            if "://" in path_text or not path.exists():
                identity[path_text] = "as named"
            elif path.is_dir():
                identity[path_text] = sorted((entry.name, entry.stat().st_size) for entry in path.glob("*.tfrecord"))
            else:
                with open(path, "rb") as file:
                    head = hashlib.sha256(file.read(1 << 20)).hexdigest()[:16]
                identity[path_text] = [path.stat().st_size, head]
    return identity
