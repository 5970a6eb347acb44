"""Where pretraining runs: one CPU, several GPUs, several machines or a TPU (appendix A.2: "4 Cloud TPUs in
Pod configuration (16 TPU chips total)" for BERT_BASE, 16 Pods for BERT_LARGE).

`get_strategy(kind)` returns a `tf.distribute.Strategy` for the TensorFlow backend. Every replica holds a
copy of the weights and gets `global_batch / replicas` examples of each batch; gradients are averaged over
replicas, so the step is the same as one device running the whole global batch (up to float rounding and
the per-replica mean of the masked-LM loss, which the library's tests measure).

On the JAX backend the same data parallelism is `keras.distribution.DataParallel`; `data_parallel()`
returns it. It also spans several processes, one per host (a TPU pod slice, GPU nodes): `bertlib.train.multihost`
joins them, the mesh holds every host's devices, and each process builds only its rows of every global batch
(`process_rows`; `local_rows` cuts them out of whole batches). On PyTorch, bertlib runs on one device. TensorFlow
has no multi-worker kind (`NO_MULTI_WORKER`).

`distributed(kind)` is the one way to say where models live, on every backend: a context manager that opens
the strategy's scope (TensorFlow) or sets `DataParallel` (JAX), and says how many replicas there are.

Example:
>>> with distributed("auto") as placement:   # TPU if present, else all GPUs, else the CPU
...     model = build_model()
>>> per_replica_batch_size(256, placement)    # 32 on 8 TPU cores
"""

import contextlib
import os

from bertlib.train import host

STRATEGY_KINDS = ("auto", "tpu", "gpus", "mirrored-cpu", "cpu")

# Keras 3's `fit` cannot train under TensorFlow's MultiWorkerMirroredStrategy: even a one-layer model fails in its
# first step with "Attempt to convert a value (PerReplica:{...}) with an unsupported type" (Keras 3.15, TensorFlow
# 2.21; keras-team/keras#20585). Several machines train on the JAX backend instead (`bertlib.train.multihost`).
NO_MULTI_WORKER = ("Keras 3 cannot train one model over several TensorFlow workers (MultiWorkerMirroredStrategy "
                   "fails in fit: keras-team/keras#20585). Run the processes on the JAX backend instead: "
                   "KERAS_BACKEND=jax with KERAS_DISTRIBUTION_JOB_ADDRESSES, KERAS_DISTRIBUTION_NUM_PROCESSES and "
                   "KERAS_DISTRIBUTION_PROCESS_ID (docs/full_size_pretraining.md)")


def get_strategy(kind="auto", tpu=None):
    """A `tf.distribute.Strategy` for `kind`.

    Args:
        kind: str, defaults to "auto". One of:

            - `"tpu"`: a TPU found with `TPUClusterResolver`: `tpu=None` or "" finds a Colab TPU (from the
              environment variables `COLAB_TPU_ADDR` or `TPU_NAME`), "local" is the TPU of a Cloud TPU VM,
              any other string is the name (or grpc:// address) of a TPU or TPU Pod slice;
            - `"gpus"`: `MirroredStrategy` over every local GPU;
            - `"mirrored-cpu"`: `MirroredStrategy` over the logical CPUs (split first with
              `split_cpu(n)`, before TensorFlow starts), for tests of the multi-replica path;
            - `"cpu"`: one device, TensorFlow's default strategy (no replicas, no wrapping);
            - `"auto"`: the first of tpu, gpus (or one GPU), cpu that this machine has.

            There is no multi-worker kind: Keras 3 cannot train with TensorFlow's `MultiWorkerMirroredStrategy`
            (`NO_MULTI_WORKER`), and `TF_CONFIG` in the environment is refused with that message. Several
            machines train on JAX (`bertlib.train.multihost`).

        tpu: str or None, the TPU to use for "tpu" (and for "auto", where a value forces the TPU).

    Returns:
        the strategy; `strategy.num_replicas_in_sync` is the number of replicas.
    """
    if kind not in STRATEGY_KINDS:
        raise ValueError(f"Unknown strategy {kind!r}; expected one of {list(STRATEGY_KINDS)}.")
    if os.environ.get("TF_CONFIG") and kind != "tpu":
        raise RuntimeError(f"TF_CONFIG is set, but {NO_MULTI_WORKER}; or unset TF_CONFIG to train on this machine.")
    host.configure_cpu()
    import tensorflow as tf

    if kind == "auto":
        kind = _detect_kind(tpu)
        if kind == "one-gpu":
            return tf.distribute.get_strategy()
    if kind == "tpu":
        return _tpu_strategy(tpu)
    if kind == "gpus":
        gpus = tf.config.list_logical_devices("GPU")
        if not gpus:
            raise RuntimeError("strategy 'gpus' needs at least one GPU, but TensorFlow sees none "
                               "(tf.config.list_logical_devices('GPU') is empty). Use 'cpu' or 'auto'.")
        return tf.distribute.MirroredStrategy([gpu.name for gpu in gpus])
    if kind == "mirrored-cpu":
        cpus = tf.config.list_logical_devices("CPU")
        if len(cpus) < 2:
            raise RuntimeError(
                f"strategy 'mirrored-cpu' needs at least 2 logical CPU devices, TensorFlow has {len(cpus)}. "
                "Call bertlib.train.distribute.split_cpu(2) before TensorFlow runs anything (in a fresh process).")
        return tf.distribute.MirroredStrategy([cpu.name for cpu in cpus])
    # One device needs no distribution at all: the default strategy feeds `fit` a plain tf.data iterator.
    # (OneDeviceStrategy wraps it in a prefetch-to-device iterator whose teardown at the end of an epoch
    # crashed the process now and then on TensorFlow 2.21 CPU: a segfault or a hang in `fit`.)
    return tf.distribute.get_strategy()


class Placement:
    """Where models live: what `distributed()` returns. A context manager that can be entered again and again.

    Attributes:
        name: str, "tpu", "mirrored" or "one-device" (TensorFlow), "jax-data-parallel" or
            "one-device" (JAX), "torch" (PyTorch).
        num_replicas: int, copies of the model that each take a share of every batch.
        backend: str, the Keras backend.
        devices: tuple of str, the kind of each device used ("CPU", "GPU", "TPU").
        strategy: the `tf.distribute.Strategy` on TensorFlow, else None.
        distribution: the `keras.distribution.DataParallel` on JAX with several devices, else None.
        processes: int, the processes (hosts) the replicas span: 1 but for a multi-process JAX run
            (`bertlib.train.multihost`).
        process_index: int, this process's number among them (0 writes the run's files).
    """

    def __init__(self, name, num_replicas, backend, devices, strategy=None, distribution=None, processes=1,
                 process_index=0):
        self.name, self.num_replicas, self.backend = name, num_replicas, backend
        self.devices, self.strategy, self.distribution = tuple(devices), strategy, distribution
        self.processes, self.process_index = processes, process_index
        self._entered = []  # what each open `with` must undo, innermost last

    @property
    def num_replicas_in_sync(self):  # the tf.distribute spelling, so a Placement goes where a strategy went
        return self.num_replicas

    @property
    def opened(self):
        """In words, what `with placement` opens.

        "tf.distribute <strategy>" on TensorFlow, "keras.distribution.DataParallel" on JAX with several devices,
        None where nothing is opened.
        """
        if self.strategy is not None:
            return f"tf.distribute {strategy_name(self.strategy)}"
        return "keras.distribution.DataParallel" if self.distribution is not None else None

    def __enter__(self):
        if self.strategy is not None:
            scope = self.strategy.scope()
            scope.__enter__()
            self._entered.append(scope)
        elif self.distribution is not None:
            import keras

            self._entered.append(keras.distribution.distribution())
            keras.distribution.set_distribution(self.distribution)
        else:
            self._entered.append(None)
        return self

    def __exit__(self, *exc_info):
        undo = self._entered.pop()
        if self.strategy is not None:
            return undo.__exit__(*exc_info)
        if self.distribution is not None:
            import keras

            keras.distribution.set_distribution(undo)
        return False

    def __repr__(self):
        over = f", {self.processes} processes" if self.processes > 1 else ""
        return f"Placement({self.name!r}, {self.num_replicas} replica(s){over}, {self.backend}, devices={self.devices})"


def distributed(kind="auto", tpu=None):
    """Where models live, the same call on every backend: `with distributed() as placement:`.

    Build (and on JAX also train) models inside the `with`; every replica holds a copy of the weights and
    takes `global_batch / placement.num_replicas` examples of each batch.

    - TensorFlow: `get_strategy(kind, tpu)` and its `scope()`; `placement.strategy` is the strategy.
      `kind` "auto" finds a TPU (Colab's old TPU nodes, a Cloud TPU VM with `tensorflow-tpu`), else all GPUs,
      else the CPU.
    - JAX: `keras.distribution.DataParallel` over the devices of `kind` when there are two or more (a Colab
      TPU v2-8 has 8; `XLA_FLAGS=--xla_force_host_platform_device_count=8` simulates 8 on a CPU), set on
      entry and the previous distribution restored on exit; one device needs none. Kinds: "auto" (the
      accelerators JAX sees, else the CPU), "tpu", "gpus", "mirrored-cpu" (every CPU device), "cpu" (one
      device). JAX finds its TPU itself, so `tpu` may only be None or "local".
    - PyTorch: one replica on the device Keras picked (a GPU when torch sees one); nothing to open. Kinds
      "auto" and "cpu" only.

    The returned `Placement` may be entered again (`with placement:` in later cells) and nested.

    Args:
        kind: str, defaults to "auto"; one of `STRATEGY_KINDS` (see `get_strategy`).
        tpu: str or None, the TPU for kind "tpu" on TensorFlow (see `get_strategy`).

    Returns:
        a `Placement`: `.name`, `.num_replicas`, `.backend`, `.devices`, and `.strategy` (TensorFlow) or
        `.distribution` (JAX).
    """
    if kind not in STRATEGY_KINDS:
        raise ValueError(f"Unknown strategy {kind!r}; expected one of {list(STRATEGY_KINDS)}.")
    import keras

    backend = keras.backend.backend()
    if backend == "tensorflow":
        return _tensorflow_placement(get_strategy(kind, tpu))
    if backend == "jax":
        return _jax_placement(kind, tpu)
    if backend == "torch":
        return _torch_placement(kind)
    raise RuntimeError(f"bertlib runs on the tensorflow, jax and torch backends, not {backend!r} "
                       "(set KERAS_BACKEND before Keras is imported).")


def placement_of(strategy, tpu=None):
    """The `Placement` for what a caller passed as `strategy`: a kind of `STRATEGY_KINDS` (`distributed(kind,
    tpu)`), a `Placement` (returned as it is) or a ready `tf.distribute.Strategy` (its placement)."""
    if isinstance(strategy, str):
        return distributed(strategy, tpu=tpu)
    if isinstance(strategy, Placement):
        return strategy
    if hasattr(strategy, "scope") and hasattr(strategy, "num_replicas_in_sync"):
        return _tensorflow_placement(strategy)
    raise ValueError(f"strategy must be one of {list(STRATEGY_KINDS)}, a bertlib.train.distribute.Placement or a "
                     f"tf.distribute.Strategy, got {strategy!r}.")


def _tensorflow_placement(strategy):
    import tensorflow as tf

    if is_tpu(strategy):
        name = "tpu"
    elif isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy):
        raise RuntimeError(f"A MultiWorkerMirroredStrategy was given: {NO_MULTI_WORKER}.")
    elif isinstance(strategy, tf.distribute.MirroredStrategy):
        name = "mirrored"
    else:
        name = "one-device"
    if name == "tpu":
        kinds = ["TPU"] * strategy.num_replicas_in_sync
    elif name == "one-device":  # the default strategy: the first device TensorFlow would use
        kinds = [(tf.config.list_logical_devices("GPU") or tf.config.list_logical_devices())[0].device_type]
    else:
        kinds = [device.split(":")[-2].upper() for device in strategy.extended.worker_devices]  # "/...GPU:0"
    return Placement(name, strategy.num_replicas_in_sync, "tensorflow", kinds, strategy=strategy)


def _jax_placement(kind, tpu):
    import jax
    import keras

    if tpu not in (None, "", "local"):
        raise RuntimeError(f"On the JAX backend the TPU is the one JAX sees (jax.devices()); tpu={tpu!r} cannot "
                           "name another. Use TensorFlow's TPUStrategy for a remote TPU, or run on the TPU VM.")
    platform = {"tpu": "tpu", "gpus": "gpu", "mirrored-cpu": "cpu", "cpu": "cpu"}.get(kind)  # "auto": None
    seen = sorted({device.platform for device in jax.devices()})
    if platform in ("tpu", "gpu") and platform not in seen:
        raise RuntimeError(f"strategy {kind!r} needs a {platform.upper()}, but JAX sees only {seen} devices "
                           "(jax.devices()). Use 'cpu' or 'auto'.")
    devices = keras.distribution.list_devices(platform)
    if kind == "cpu":
        devices = devices[:1]
    if kind == "mirrored-cpu" and len(devices) < 2:
        raise RuntimeError("strategy 'mirrored-cpu' needs at least 2 CPU devices, JAX has 1. Start Python with "
                           "XLA_FLAGS=--xla_force_host_platform_device_count=2 (or more) in the environment.")
    kinds = [device.split(":")[0].upper() for device in devices]
    processes = jax.process_count()
    if processes > 1 and kind == "cpu":
        raise RuntimeError(f"strategy 'cpu' is one device, but this run has {processes} processes, each with its own "
                           "devices: use 'auto' (or 'tpu', 'gpus', 'mirrored-cpu') to train on all of them.")
    if len(devices) < 2:
        return Placement("one-device", 1, "jax", kinds)
    # Several processes: each gives Keras its own rows of every global batch (`process_rows`), so Keras must not
    # shard the input again.
    distribution = keras.distribution.DataParallel(devices=devices, auto_shard_dataset=processes == 1)
    return Placement("jax-data-parallel", len(devices), "jax", kinds, distribution=distribution, processes=processes,
                     process_index=jax.process_index())


def _torch_placement(kind):
    if kind not in ("auto", "cpu"):
        raise RuntimeError(f"strategy {kind!r} is not available on the PyTorch backend: bertlib trains on one "
                           "device there (Keras 3 has no multi-device distribution for torch). Use 'auto' or "
                           "'cpu', or the tensorflow or jax backend for several devices.")
    import torch

    device = "GPU" if kind == "auto" and torch.cuda.is_available() else "CPU"
    return Placement("torch", 1, "torch", [device])


def _detect_kind(tpu):
    import tensorflow as tf

    if tpu or os.environ.get("COLAB_TPU_ADDR") or os.environ.get("TPU_NAME"):
        return "tpu"
    if tf.config.list_physical_devices("TPU"):  # a Cloud TPU VM: the TPU is a local device
        return "tpu"
    gpus = tf.config.list_physical_devices("GPU")
    if len(gpus) > 1:
        return "gpus"
    if len(gpus) == 1:
        return "one-gpu"
    return "cpu"


def tpu_address(tpu=None):
    """What to give `TPUClusterResolver`: "local" on a TPU VM, a name or grpc:// address, or None (Colab).

    With `tpu` None or "", the Colab runtime's `COLAB_TPU_ADDR` (host:port) becomes `grpc://host:port`,
    else `TPU_NAME` is used; without either, a clear error says how to name the TPU.
    """
    if tpu:
        return tpu
    if os.environ.get("COLAB_TPU_ADDR"):
        return "grpc://" + os.environ["COLAB_TPU_ADDR"]
    if os.environ.get("TPU_NAME"):
        return os.environ["TPU_NAME"]
    raise RuntimeError(
        "No TPU given and none found: COLAB_TPU_ADDR and TPU_NAME are unset. On Colab choose a TPU runtime; "
        "on a Cloud TPU VM pass tpu='local' (--tpu local); for a TPU or Pod slice pass its name.")


def _tpu_strategy(tpu):
    import tensorflow as tf

    address = tpu_address(tpu)
    try:
        resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu=address)
    except ValueError as error:
        raise RuntimeError(f"Could not find the TPU {address!r}: {error}") from error
    if address != "local":  # a TPU VM runs the TPU in-process; a remote TPU needs a connection first
        tf.config.experimental_connect_to_cluster(resolver)
    tf.tpu.experimental.initialize_tpu_system(resolver)
    return tf.distribute.TPUStrategy(resolver)


def split_cpu(num_devices):
    """Split the CPU into `num_devices` logical devices, so that `mirrored-cpu` has replicas to mirror.

    Must run before TensorFlow initializes its devices (in a fresh process, before any tensor is made).
    """
    import tensorflow as tf

    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(
        cpu, [tf.config.LogicalDeviceConfiguration() for _ in range(num_devices)])


def num_replicas(strategy):
    """Replicas of a `Placement`, a `tf.distribute.Strategy`, a `keras.distribution` (devices), or an int."""
    if isinstance(strategy, int):
        return strategy
    if isinstance(strategy, Placement):
        return strategy.num_replicas
    if hasattr(strategy, "num_replicas_in_sync"):
        return strategy.num_replicas_in_sync
    return len(strategy.device_mesh.devices.flatten())


def per_replica_batch_size(global_batch, strategy):
    """Examples each replica sees per step: `global_batch / replicas`, which must divide exactly.

    The paper's batch is global (256 sequences per step over all chips, A.2), so a run keeps the same step
    when it moves to more chips; each replica's share must be a whole number.
    """
    replicas = num_replicas(strategy)
    if global_batch % replicas:
        raise ValueError(
            f"The global batch size {global_batch} does not split over {replicas} replicas "
            f"({global_batch} / {replicas} is not a whole number). Use a multiple of {replicas}, "
            f"e.g. {max(replicas, global_batch // replicas * replicas)}.")
    return global_batch // replicas


def strategy_name(strategy):
    """The strategy's class name, or "default (one device)" for TensorFlow's default strategy."""
    name = type(strategy).__name__
    return "default (one device)" if name.startswith("_Default") else name


def is_tpu(strategy):
    """Whether a `tf.distribute.Strategy` is a TPUStrategy, or a `Placement` runs on TPUs (any backend)."""
    if isinstance(strategy, Placement):
        return "TPU" in strategy.devices
    return type(strategy).__name__.startswith("TPUStrategy")


def check_static_shapes(dataset):
    """Raise when a dataset element has an unknown dimension: TPUs compile one program for fixed shapes.

    `bertlib.text.data.pretraining_dataset` batches with drop_remainder, so its shapes are fully known.
    """
    import tensorflow as tf

    for path, spec in _flatten_specs(dataset.element_spec):
        if isinstance(spec, tf.TensorSpec) and not spec.shape.is_fully_defined():
            raise ValueError(
                f"Dataset element {path!r} has shape {spec.shape}; a TPU needs fixed shapes. Batch with "
                "drop_remainder=True and pad every sequence to the same length.")


def _flatten_specs(spec, path=""):
    if isinstance(spec, dict):
        for key, value in spec.items():
            yield from _flatten_specs(value, f"{path}/{key}" if path else key)
    elif isinstance(spec, (tuple, list)):
        for index, value in enumerate(spec):
            yield from _flatten_specs(value, f"{path}/{index}" if path else str(index))
    elif spec is not None:
        yield path, spec


def local_rows(batches, placement, batch_size):
    """This process's rows of every global batch of `batches` (a tf.data dataset or an iterable of numpy
    batches), for a placement over several processes; `batches` itself for one process.

    For input that is cheap to build whole (fine-tuning's batches; pretraining's pipelines build only their rows,
    `process_rows`): every process builds the same global batch (a pure function of the seed and the batch
    number) and keeps the rows its own devices hold, so the step trains on
    exactly the examples one process would: the split Keras' `DataParallel.distribute_dataset` makes for a tf.data
    dataset (rebatch, then shard by process), written once for both kinds of input. Keras then assembles the
    global batch from the processes' rows (`jax.make_array_from_process_local_data`).
    """
    if placement.processes == 1:
        return batches
    start, stop = process_rows(placement, batch_size)
    import keras

    def cut(batch):
        return keras.tree.map_structure(lambda column: column[start:stop], batch)

    if hasattr(batches, "element_spec"):  # tf.data: the structure (x, y, sample_weight) arrives unpacked
        return batches.map(lambda *batch: cut(batch if len(batch) > 1 else batch[0]))
    return (cut(batch) for batch in batches)


@contextlib.contextmanager
def this_process_only(placement):
    """A block that one process runs alone (process 0 saving a `.keras` file), in a run over several processes.

    Keras' saving makes new variables (a fresh optimizer, to list what to save), and under the run's
    `DataParallel` a new variable is placed on every process's devices, which waits for the other processes,
    who are not saving. Inside the block no distribution is set: new variables stay on this process, and the
    run's own variables, the same in every process, are read from this process's copy.
    """
    if placement.processes == 1:
        yield
        return
    import keras

    previous = keras.distribution.distribution()
    keras.distribution.set_distribution(None)
    try:
        yield
    finally:
        keras.distribution.set_distribution(previous)


def process_rows(placement, batch_size):
    """`(start, stop)`: the rows of a global batch that this process's devices hold in the data layout; None
    for a placement in one process (the whole batch). A pipeline that builds only these rows of each batch, as
    `bertlib.text.data`'s do with `rows=`, reads and masks a process's share of the input."""
    if placement.processes == 1:
        return None
    layout = placement.distribution.get_data_layout((batch_size,)).backend_layout
    rows = [index[0] for index in layout.addressable_devices_indices_map((batch_size,)).values()]
    start, stop = min(row.start or 0 for row in rows), max(row.stop or batch_size for row in rows)
    if stop - start != batch_size // placement.processes:
        raise RuntimeError(f"process {placement.process_index}'s devices hold rows {start}-{stop} of a batch of "
                           f"{batch_size}, not one contiguous share; bertlib needs each process's devices next to "
                           "each other in jax.devices().")
    return start, stop


def data_parallel():
    """`keras.distribution.DataParallel` over every JAX device, or None when there is only one."""
    import keras

    devices = keras.distribution.list_devices()
    if len(devices) < 2:
        return None
    return keras.distribution.DataParallel(devices=devices)
