"""The dtype policy a run computes in: float32, or mixed bfloat16 / float16 where the device is faster with it.

`precision_for` picks by device (what `precision="auto"` means); `set_precision` sets Keras' global policy.
"""

import functools

import keras

from bertlib.train import distribute, host

PRECISIONS = ("auto", "float32", "mixed_bfloat16", "mixed_float16")

# bfloat16 on a CPU must beat float32 by this much in the start-up probe: a matmul 1.3x faster made the bench
# step about 1.25x faster on an AVX512-BF16 CPU (bench/RESULTS.md), less would not pay for the casts.
BFLOAT16_MIN_SPEEDUP = 1.3


def precision_for(strategy=None, flags=None, probe=None):
    """The dtype policy that trains fastest on this device: what `precision="auto"` picks.

    "mixed_bfloat16" on a TPU and "mixed_float16" on a GPU (where `compile` adds loss scaling). On a CPU,
    "mixed_bfloat16" when the CPU has bfloat16 units (AMX-BF16, AVX512-BF16 or Arm BF16; see
    `host.BFLOAT16_CPU_FLAGS`) and a short matmul probe finds bfloat16 at least `BFLOAT16_MIN_SPEEDUP`
    times faster than float32; "float32" otherwise (without those units bfloat16 is emulated, and slower).
    The probe runs once per process. In both mixed policies the weights, LayerNorm, the attention softmax and
    the loss stay in float32.

    Args:
        strategy: a `tf.distribute.Strategy` or None (the devices TensorFlow or JAX sees).
        flags: set of CPU flags, defaults to `host.cpu_flags()` (for tests).
        probe: callable returning bfloat16's matmul speedup, defaults to `host.bfloat16_matmul_speedup`
            (for tests).
    """
    if strategy is not None and distribute.is_tpu(strategy):
        return "mixed_bfloat16"
    if keras.backend.backend() == "jax":
        import jax

        platform = jax.devices()[0].platform
    else:
        import tensorflow as tf

        platform = "gpu" if tf.config.list_logical_devices("GPU") else "cpu"
    if platform != "cpu":
        return {"tpu": "mixed_bfloat16", "gpu": "mixed_float16"}.get(platform, "float32")
    flags = host.cpu_flags() if flags is None else flags
    if not flags & set(host.BFLOAT16_CPU_FLAGS):
        return "float32"
    speedup = probe() if probe is not None else _bfloat16_speedup()
    return "mixed_bfloat16" if speedup >= BFLOAT16_MIN_SPEEDUP else "float32"


@functools.cache
def _bfloat16_speedup():
    return host.bfloat16_matmul_speedup()


def set_precision(policy="auto", strategy=None):
    """Set Keras' global dtype policy before building the model; "auto" picks by device (`precision_for`).

    Mixed precision computes in 16 bits and keeps float32 weights. "mixed_bfloat16" suits TPUs and CPUs with
    bfloat16 units (see `precision_for`; on other CPUs it is emulated and slower than float32);
    "mixed_float16" suits GPUs, where `compile` adds loss scaling. Returns the policy name.
    """
    if policy == "auto":
        policy = precision_for(strategy)
    keras.config.set_dtype_policy(policy)
    return keras.config.dtype_policy().name
