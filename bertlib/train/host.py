"""The machine this process runs on: its usable cores, CPU features and thread pools, and JAX's compile cache.

`configure_cpu()` sizes TensorFlow's (and OpenMP's) thread pools to the cores this process may use
(`usable_cpus`: the affinity mask, capped by a cgroup quota), which a 2-core laptop or CI runner needs: left to
itself TensorFlow sizes them to every core of the host. `cpu_flags` and `bfloat16_matmul_speedup` tell
`bertlib.train.precision` whether this CPU has bfloat16 units worth using. `configure_compile_cache` keeps JAX's
compiled programs on disk. `pretrain`, `finetune` and the course's `setup()` call these for you.

Example:
>>> from bertlib.train import host
>>> host.configure_cpu()       # before TensorFlow starts its pools
{'intra_op': 2, 'inter_op': 2, 'applied': True}
"""

import os
import time
from pathlib import Path

# /proc/cpuinfo names of native bfloat16 units: Intel AMX tiles, AVX-512 BF16 (Intel, AMD Zen 4 and later),
# and the Arm BF16 extension (Graviton 3, Neoverse V1 and later)
BFLOAT16_CPU_FLAGS = ("amx_bf16", "avx512_bf16", "bf16")


def cpu_flags(cpuinfo="/proc/cpuinfo"):
    """The CPU's feature flags as a set (`flags` on x86, `Features` on Arm); empty where unreadable."""
    try:
        text = Path(cpuinfo).read_text()
    except OSError:
        return set()
    for line in text.splitlines():
        name, _, value = line.partition(":")
        if name.strip() in ("flags", "Features"):
            return set(value.split())
    return set()


def bfloat16_matmul_speedup(size=1024, rounds=5):
    """How much faster a (size x size) matmul runs in bfloat16 than in float32 here: a start-up probe.

    Rounds alternate the two precisions and each keeps its fastest, so a busy moment on a shared machine
    hits both alike. About 0.1-0.3 s on a 2-core CPU.
    """
    import keras
    from keras import ops

    timings = {"float32": [], "bfloat16": []}
    operands = {dtype: ops.cast(keras.random.normal((size, size), seed=0), dtype) for dtype in timings}
    for _ in range(rounds + 1):  # the first round warms up
        for dtype, matrix in operands.items():
            started = time.perf_counter()
            ops.convert_to_numpy(ops.matmul(matrix, matrix))
            timings[dtype].append(time.perf_counter() - started)
    return min(timings["float32"][1:]) / min(timings["bfloat16"][1:])


def cgroup_cpu_limit(proc_cgroup="/proc/self/cgroup", root="/sys/fs/cgroup"):
    """The CPU quota of this process's cgroup in cores (e.g. 1.5), or None when there is none.

    Reads cgroup v2 `cpu.max` ("150000 100000" is 1.5 cores, "max 100000" is no limit) or v1
    `cpu.cfs_quota_us` / `cpu.cfs_period_us` (quota -1 is no limit), in the process's own cgroup and in
    every cgroup above it, and returns the smallest limit found. A container (Docker's `--cpus`, Kubernetes'
    CPU limit) sets this while every core of the host stays visible to `os.cpu_count()`.
    """
    try:
        lines = Path(proc_cgroup).read_text().splitlines()
    except OSError:
        return None
    limits = []
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if controllers == "":  # v2: one unified hierarchy
            mounts = [Path(root)]
            read = _read_cpu_max
        elif "cpu" in controllers.split(","):
            mounts = [Path(root) / name for name in ("cpu", "cpu,cpuacct", "cpuacct,cpu")]
            read = _read_cfs_quota
        else:
            continue
        for mount in mounts:
            folder = mount / path.lstrip("/")
            # a container sees its own cgroup as the mount's root, so look there too
            for candidate in [folder, *folder.parents, mount]:
                if candidate == mount.parent:
                    break
                limit = read(candidate)
                if limit is not None:
                    limits.append(limit)
    return min(limits) if limits else None


def _read_cpu_max(folder):
    try:
        quota, period = (folder / "cpu.max").read_text().split()
    except (OSError, ValueError):
        return None
    return None if quota == "max" else int(quota) / int(period)


def _read_cfs_quota(folder):
    try:
        quota = int((folder / "cpu.cfs_quota_us").read_text())
        period = int((folder / "cpu.cfs_period_us").read_text())
    except (OSError, ValueError):
        return None
    return None if quota <= 0 else quota / period


def usable_cpus():
    """How many cores this process may really use: the CPUs of its affinity mask (`taskset`, a batch
    scheduler's cpuset), capped by the cgroup quota (`cgroup_cpu_limit`), at least 1.

    `os.cpu_count()` counts the host's cores, which is too many inside a container or under `taskset`.
    """
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    limit = cgroup_cpu_limit()
    if limit is not None:
        cores = min(cores, int(limit))  # a thread beyond the quota only gets the process throttled
    return max(1, cores)


_CONFIGURED = {}


def configure_cpu(threads=None):
    """Size TensorFlow's CPU thread pools to the cores this process may use (`usable_cpus`).

    One pool of `threads` threads splits each operation (a matmul, a softmax) across the cores
    (TF_NUM_INTRAOP_THREADS, and OMP_NUM_THREADS for libraries built with OpenMP), and `threads` threads run
    independent operations side by side (TF_NUM_INTEROP_THREADS): a small model's operations are often too
    small to split, and running them side by side is another way to use the cores. TensorFlow's own default
    counts the affinity mask but not a cgroup quota (`bench/threads.py` compares the settings; see
    bench/RESULTS.md). A value already set in the environment wins.

    OpenMP threads (PyTorch's CPU kernels) also wait passively (OMP_WAIT_POLICY=PASSIVE): spinning, their default,
    made a tiny model's PyTorch step 20-50x slower on a 2-core machine shared with other processes (2.8 s against
    60-70 ms, bench/RESULTS.md). OpenMP reads it when PyTorch is imported, which `import bertlib` does on the
    PyTorch backend: set it in the environment before that (the course's `setup()` does); the thread count is
    set through `torch.set_num_threads` when PyTorch is already imported.

    Call it before TensorFlow runs its first operation (`get_strategy`, `pretrain`, `finetune` and the
    course notebooks do); later, TensorFlow's pools exist and cannot change, and the call says so. The other
    half of keeping every core busy is in the input pipeline: `bertlib.text.data.input_options`.

    Args:
        threads: int or None, defaults to `usable_cpus()`.

    Returns:
        dict: the "intra_op" and "inter_op" thread counts in force and whether they were "applied" now.
    """
    import sys

    if "applied" in _CONFIGURED and threads in (None, _CONFIGURED["intra_op"]):
        return dict(_CONFIGURED)
    threads = threads or usable_cpus()
    wanted = {"TF_NUM_INTRAOP_THREADS": threads, "OMP_NUM_THREADS": threads, "TF_NUM_INTEROP_THREADS": threads,
              "OMP_WAIT_POLICY": "PASSIVE"}
    for name, value in wanted.items():
        os.environ.setdefault(name, str(value))
    intra, inter = int(os.environ["TF_NUM_INTRAOP_THREADS"]), int(os.environ["TF_NUM_INTEROP_THREADS"])
    applied = True
    if "tensorflow" in sys.modules:
        import tensorflow as tf

        try:
            tf.config.threading.set_intra_op_parallelism_threads(intra)
            tf.config.threading.set_inter_op_parallelism_threads(inter)
        except RuntimeError:  # TensorFlow has already started its pools
            applied = (tf.config.threading.get_intra_op_parallelism_threads() == intra
                       and tf.config.threading.get_inter_op_parallelism_threads() == inter)
            if not applied:
                print(f"bertlib: TensorFlow started before configure_cpu(); it keeps its own thread pools "
                      f"instead of {intra} x {inter}. Call bertlib.train.host.configure_cpu() first "
                      "(in a fresh process or notebook kernel).", file=sys.stderr)
    if "torch" in sys.modules:  # imported with Keras (`import bertlib` imports it), before OMP_NUM_THREADS was set
        import torch

        torch.set_num_threads(int(os.environ["OMP_NUM_THREADS"]))
    _CONFIGURED.update(intra_op=intra, inter_op=inter, applied=applied)  # so the warning comes once
    return dict(_CONFIGURED)


def configure_compile_cache(directory=None, max_bytes=2 << 30):
    """On JAX, keep compiled programs on disk, so that a program is compiled once, not at every run.

    JAX compiles a training step for each model and each batch shape it meets, and on a CPU that takes seconds
    for even a tiny BERT (chapter 04's downstream fine-tunes spent 110 of their 140 s compiling). JAX's persistent
    cache keys a program by its computation, not by the model object, so a second model of the same
    architecture, a re-run cell or the same chapter tomorrow loads the compiled program instead (a second
    2-layer model's first step: 1.1 s instead of 5.8 s, bench/RESULTS.md). A loaded program is the same
    program, so the numbers do not change (the library's tests compare the weights bit for bit).
    Only programs that took a second or more to compile are kept (JAX's default), and the least recently used
    are evicted past `max_bytes` where the `filelock` package is installed (JAX needs it for eviction).

    A no-op on TensorFlow and PyTorch, and where JAX's own settings say otherwise: `JAX_COMPILATION_CACHE_DIR`
    (or `jax_compilation_cache_dir`) names another folder, `JAX_ENABLE_COMPILATION_CACHE=false` turns it off.
    Also a no-op where the folder cannot be written (a grading sandbox's read-only cache): JAX would warn at
    every compilation instead. Call it before the first compilation (`course.setup()` does).

    Args:
        directory: str, Path or None: defaults to `$BERTLIB_CACHE/jax`, else `~/.cache/bertlib/jax`.
        max_bytes: int, the cache's size limit.

    Returns:
        Path or None: the folder in use.
    """
    import importlib.util

    import keras

    if keras.backend.backend() != "jax":
        return None
    import jax

    if not jax.config.jax_enable_compilation_cache:
        return None
    if jax.config.jax_compilation_cache_dir:
        return Path(jax.config.jax_compilation_cache_dir)
    from bertlib.io import files

    folder = Path(directory) if directory else files.cache_home() / "jax"
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None
    if not os.access(folder, os.W_OK):
        return None
    jax.config.update("jax_compilation_cache_dir", str(folder))
    if importlib.util.find_spec("filelock") is not None:
        jax.config.update("jax_compilation_cache_max_size", int(max_bytes))
    return folder
