"""One masked-LM training step: bertlib against keras-hub, in float32 and in mixed bfloat16, in one process.

Both models: L4/H256/A4, FFN 1024, vocabulary 30,522, sequence 128, batch 32, 20 predictions, the same
AdamW (§A.2 hyperparameters) and the same Keras `train_on_batch` machinery and compile settings; only the
model code differs. Each precision's models are built under that Keras dtype policy. Rounds alternate
(bertlib float32, keras-hub float32, bertlib bfloat16, ...) so that load on the machine hits all alike; each
model's figure is the median of its rounds, and its spread is the slowest round over the fastest, minus 1.

How close to the hardware: the matmul peak is measured in this process, at each precision, as the best
GFLOP/s of the step's own matmul shapes and a 2048^3 one, before and after the rounds (the higher counts). A step's FLOPs follow chapter 05 (§A.2's 6N
rule): 6 FLOPs per weight per token for every weight a token is multiplied by, plus 12 n H per query row
and layer for the attention scores and the weighted values (n = 128 keys). The embedding tables are looked
up, not multiplied, so they count only where the masked-LM decoder multiplies by the tied table (at the
20 predicted rows), and the last block counts only the rows the loss reads (its keys and values at every
position, the rest at the 20 predicted rows): the work the loss needs, the same count for both libraries.
MFU = achieved FLOP/s / the same-precision matmul peak.

The CPU threads are set by `bertlib.train.host.configure_cpu()` before TensorFlow starts, for both libraries.

    python bench/step_time.py [--rounds 7] [--steps 10] [--precisions float32 mixed_bfloat16]

Last line: `speedup_vs_keras_hub: X` (keras-hub step time / bertlib step time at the first precision).
"""

import argparse
import functools
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from bertlib.train import host  # noqa: E402

THREADS = host.configure_cpu()  # before TensorFlow starts its pools

import keras  # noqa: E402
import numpy as np  # noqa: E402
from _record import headline  # noqa: E402  (bench/_record.py: the run's record)

SIZE = dict(num_layers=4, num_heads=4, hidden_dim=256, intermediate_dim=1024, vocabulary_size=30522)
BATCH, SEQ, PREDICTIONS = 32, 128, 20
SHORT = {"float32": "f32", "mixed_bfloat16": "bf16", "mixed_float16": "f16"}


def step_flops(layers, hidden, intermediate, vocabulary, batch, seq, predictions):
    """Training FLOPs of one masked-LM step (forward + backward), counted as chapter 05 counts them."""
    block_weights = 4 * hidden * hidden + 2 * hidden * intermediate  # Q, K, V, output; feed-forward in and out
    attention = 12 * seq * hidden  # per query row and layer: Q K^T and A V, forward + backward
    full_blocks = (layers - 1) * batch * seq * (6 * block_weights + attention)
    last_block = (batch * seq * 6 * 2 * hidden * hidden  # keys and values at every position
                  + batch * predictions * (6 * (block_weights - 2 * hidden * hidden) + attention))
    head = batch * predictions * 6 * (hidden * hidden + hidden * vocabulary)  # transform + tied decoder
    return full_blocks + last_block + head


def matmul_peak(dtype, repeats=8):
    """Best GFLOP/s of a compiled matmul in `dtype` on the backend's default device (a GPU where there is one), over
    the step's shapes and a large square one."""
    tokens, rows, hidden = BATCH * SEQ, BATCH * PREDICTIONS, SIZE["hidden_dim"]
    shapes = [(tokens, hidden, 3 * hidden), (tokens, hidden, SIZE["intermediate_dim"]),
              (tokens, SIZE["intermediate_dim"], hidden), (rows, hidden, SIZE["vocabulary_size"]),
              (2048, 2048, 2048)]
    best = {(m, k, n): matmul_flops(m, k, n, dtype, repeats) / 1e9 for m, k, n in shapes}
    return max(best.values()), best


def matmul_flops(m, k, n, dtype, repeats=8):
    """Best FLOP/s of an (m, k) @ (k, n) matmul in `dtype`: compiled, warmed up once, each run waited for on the
    device (no copy back)."""
    matmul, finish = compiled_matmul()
    a = keras.ops.cast(keras.random.normal((m, k), seed=0), dtype)
    b = keras.ops.cast(keras.random.normal((k, n), seed=1), dtype)
    finish(matmul(a, b))
    best = float("inf")
    for _ in range(repeats):
        started = time.perf_counter()
        finish(matmul(a, b))
        best = min(best, time.perf_counter() - started)
    return 2 * m * k * n / best


@functools.cache  # one compiled function a process (a new tf.function per call warns of retracing)
def compiled_matmul():
    """(the backend's matmul, compiled on TensorFlow and JAX; a function that waits until its result is computed)."""
    backend = keras.backend.backend()
    if backend == "tensorflow":
        import tensorflow as tf

        return tf.function(tf.matmul), lambda result: result.numpy()
    if backend == "jax":
        import jax

        return jax.jit(jax.numpy.matmul), lambda result: result.block_until_ready()
    import torch

    wait = torch.cuda.synchronize if torch.cuda.is_available() else (lambda: None)
    return torch.matmul, lambda result: wait()


def optimizer(library="keras_hub"):
    """The same AdamW for both: Keras' class, as `bertlib.train.schedule.make_optimizer` makes it."""
    return keras.optimizers.AdamW(learning_rate=1e-4, weight_decay=0.01, beta_1=0.9, beta_2=0.999, epsilon=1e-6,
                                  global_clipnorm=1.0)


def batch(seed=0):
    rng = np.random.default_rng(seed)
    low = min(999, SIZE["vocabulary_size"] // 2)  # past the special tokens (a smaller vocabulary: profile_step.py)
    x = {"token_ids": rng.integers(low, SIZE["vocabulary_size"], (BATCH, SEQ)).astype("int32"),
         "segment_ids": (np.arange(SEQ) >= SEQ // 2).astype("int32")[None].repeat(BATCH, 0),
         "padding_mask": np.ones((BATCH, SEQ), "int32"),
         "mask_positions": np.sort(rng.choice(SEQ, (BATCH, PREDICTIONS)), axis=1).astype("int32")}
    mask_ids = rng.integers(low, SIZE["vocabulary_size"], (BATCH, PREDICTIONS)).astype("int32")
    return x, mask_ids, np.ones((BATCH, PREDICTIONS), "float32")


def bertlib_model(jit_compile, activation):
    from bertlib import BertBackbone, BertConfig, BertPretrainer

    model = BertPretrainer(BertBackbone(BertConfig(**SIZE, activation=activation)), next_sentence=False)
    model.compile(optimizer=optimizer("bertlib"), jit_compile=jit_compile)
    return model, lambda x, y, w: model.train_on_batch(x, {"mlm_logits": y}, sample_weight={"mlm_logits": w})


def keras_hub_model(jit_compile):
    import keras_hub

    backbone = keras_hub.models.BertBackbone(**SIZE, max_sequence_length=512)
    model = keras_hub.models.BertMaskedLM(backbone, preprocessor=None)
    model.compile(optimizer=optimizer(), loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  weighted_metrics=[keras.metrics.SparseCategoricalAccuracy()], jit_compile=jit_compile)
    return model, lambda x, y, w: model.train_on_batch(x, y, sample_weight=w)


def time_steps(step, data, steps):
    start = time.perf_counter()
    for _ in range(steps):
        step(*data)
    return (time.perf_counter() - start) / steps


def cpu_model():
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown CPU"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--precisions", nargs="+", default=["float32", "mixed_bfloat16"])
    parser.add_argument("--libraries", nargs="+", default=["bertlib", "keras_hub"])
    parser.add_argument("--jit-compile", default="auto", help="auto, true or false (same for all)")
    parser.add_argument("--activation", default="gelu_approximate",
                        help="bertlib's GELU: gelu_approximate (the tanh form keras-hub uses, so both models do "
                             "the same arithmetic) or gelu (exact, bertlib's default)")
    args = parser.parse_args()
    jit = {"auto": "auto", "true": True, "false": False}[args.jit_compile.lower()]
    bf16_units = sorted(host.cpu_flags() & set(host.BFLOAT16_CPU_FLAGS))
    print(f"{cpu_model()}, bfloat16 units {bf16_units or 'none'}, usable cores {host.usable_cpus()} "
          f"(os.cpu_count() {os.cpu_count()}), threads {THREADS}, load average {os.getloadavg()}")
    flops = step_flops(SIZE["num_layers"], SIZE["hidden_dim"], SIZE["intermediate_dim"], SIZE["vocabulary_size"],
                       BATCH, SEQ, PREDICTIONS)

    peaks = {}
    for precision in args.precisions:
        dtype = keras.dtype_policies.get(precision).compute_dtype
        peaks[precision], by_shape = matmul_peak(dtype)
        print(f"matmul peak {dtype}: {peaks[precision]:.0f} GFLOP/s ("
              + ", ".join(f"{'x'.join(map(str, shape))} {value:.0f}" for shape, value in by_shape.items()) + ")")

    data = batch()
    models = {}
    for precision in args.precisions:
        keras.config.set_dtype_policy(precision)
        keras.utils.set_random_seed(0)
        for library in args.libraries:
            name = f"{library} {SHORT.get(precision, precision)}"
            model, step = bertlib_model(jit, args.activation) if library == "bertlib" else keras_hub_model(jit)
            models[name] = (model, step, precision)
    keras.config.set_dtype_policy("float32")
    print(f"backend={keras.backend.backend()} jit_compile={args.jit_compile} bertlib activation={args.activation} "
          f"params={ {name: model.count_params() for name, (model, _, _) in models.items()} }; "
          f"step {flops / 1e9:.1f} GFLOP (6N x tokens with N = every parameter would say "
          f"{6 * 11_267_386 * BATCH * SEQ / 1e9:.0f}: the embedding table is a lookup)")
    for _, step, _ in models.values():  # trace outside the timed rounds
        time_steps(step, data, 3)
    print("resolved jit_compile: " + ", ".join(f"{name} {model.jit_compile}" for name, (model, _, _) in models.items()))
    times = {name: [] for name in models}
    for round_index in range(args.rounds):
        for name, (_, step, _) in models.items():
            times[name].append(time_steps(step, data, args.steps))
        print(f"round {round_index}: " + ", ".join(f"{n} {t[-1] * 1000:.0f} ms" for n, t in times.items())
              + f"; load {os.getloadavg()[0]:.1f}", flush=True)
    for precision in args.precisions:  # again after the rounds: a busy moment must not lower the peak
        dtype = keras.dtype_policies.get(precision).compute_dtype
        again, _ = matmul_peak(dtype)
        print(f"matmul peak {dtype} after the rounds: {again:.0f} GFLOP/s")
        peaks[precision] = max(peaks[precision], again)
    medians = {name: statistics.median(values) for name, values in times.items()}
    for name, median in medians.items():
        achieved = flops / median / 1e9
        peak = peaks[models[name][2]]
        print(f"{name:14s} median {median * 1000:6.1f} ms (fastest {min(times[name]) * 1000:.0f}, slowest "
              f"{max(times[name]) * 1000:.0f}, spread {max(times[name]) / min(times[name]) - 1:.1%}), "
              f"{BATCH * SEQ / median:,.0f} tokens/s, {achieved:.0f} GFLOP/s = MFU {achieved / peak:.0%} "
              f"of the {peak:.0f} GFLOP/s matmul peak")
    print(f"load average at the end: {os.getloadavg()}")
    first = SHORT.get(args.precisions[0], args.precisions[0])
    if "bertlib f32" in medians and "bertlib bf16" in medians:
        print(f"bertlib_bf16_over_float32: {medians['bertlib f32'] / medians['bertlib bf16']:.3f}")
        if "keras_hub f32" in medians:
            print(f"bertlib_bf16_over_keras_hub_float32: {medians['keras_hub f32'] / medians['bertlib bf16']:.3f}")
    for precision in args.precisions[1:]:
        short = SHORT.get(precision, precision)
        if f"keras_hub {short}" in medians and f"bertlib {short}" in medians:
            print(f"speedup_vs_keras_hub_{short}: {medians[f'keras_hub {short}'] / medians[f'bertlib {short}']:.3f}")
    if f"keras_hub {first}" in medians and f"bertlib {first}" in medians:
        details = {f"{name.replace(' ', '_')}_ms": round(median * 1000, 1) for name, median in medians.items()}
        headline("speedup_vs_keras_hub", medians[f"keras_hub {first}"] / medians[f"bertlib {first}"], unit="x",
                 digits=3, details={"precision": first, **details})


if __name__ == "__main__":
    main()
