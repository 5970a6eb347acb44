"""Pretraining steps through `bertlib pretrain`'s own entry point: step time, tokens a second and MFU (issue 37).

Writes a small synthetic corpus on the spot (sentences of words drawn from the real uncased BERT vocabulary,
blank lines between documents: the text-file format `bertlib pretrain --corpus` reads), then runs
`bertlib.train.pretraining.pretrain(PretrainSettings(...))`, the function the `bertlib pretrain` command calls: the same
data pipeline (NSP pairs, dynamic masking in tf.data, or in numpy where TensorFlow is not installed), the same
compiled `BertPretrainer` (AdamW of A.2,
`jit_compile` as the library picks it: XLA on an accelerator, always on JAX) and the same `fit` loop and
callbacks. Its progress records give each logged interval's wall time; the first interval holds the
compilation and is left out, and the step time is the median of the others (seconds / steps of each).

FLOPs of one step (forward + backward) are `bench/step_time.py`'s count of the work the loss needs (chapter
05's 6N rule applied weight by weight, plus 12 n H per query row and layer for attention; the embedding tables
are looked up, not multiplied; the last block works only at the rows the heads read), with NSP's share added:
the [CLS] row of the last block, the pooler and the 2-way classifier. The course's coarser estimate
(`bertlib_course.compute.training_flops_per_token`: 6 x every parameter + attention) is printed beside it;
it counts the embedding tables as if multiplied, so it gives a higher MFU. MFU = achieved FLOP/s / peak:

- on a GPU, the vendor's published dense (no sparsity) BF16 tensor peak, looked up by the name `nvidia-smi`
  gives (`PEAK_TFLOPS`; the H200's is 989 TFLOP/s), or `--peak-tflops`;
- on a CPU, no datasheet figure applies: the best of a few 1024^3 matmuls in the run's compute dtype,
  measured in this process (as `bench/step_time.py` does), or `--peak-tflops`.

    python bench/pretrain_mfu.py --preset base --batch-size 256 --steps 60 --log-every 10   # a GPU
    python bench/pretrain_mfu.py --preset tiny --batch-size 8 --seq-length 64 --steps 6 --log-every 2  # CPU

`--backend` picks Keras' backend (default: tensorflow when it is installed, else jax). Without TensorFlow (the
JAX-only machine of a lent GPU, say), `pretrain` feeds `fit` from `bertlib.text.data.pretraining_batches`, numpy
batches built in this process; the JSON says which input ran. Last line: `mfu: X` (a fraction).

Levers (issue 58), each off by default, i.e. today's `bertlib pretrain`: `--steps-per-execution K`, `--prefetch N`,
`--random-bits rbg` (JAX) and `--attention fused` (with `--dropout 0` only: see `parse_args`). `--variants 'base;
--prefetch 2; ...'` runs one `pretrain` per variant in this process (the compiled step is shared where it is the
same program), prints a `variant NAME: ...` line for each, and takes the headline from the best variant that keeps
A.2's dropout and the command line's batch shape. The two levers that only change how the host drives the device
(steps a call, prefetching) give the same numbers; the others change the random bits or the recipe, and are
measured, not assumed.

    python bench/pretrain_mfu.py --variants 'base; --steps-per-execution 10 --prefetch 2 --random-bits rbg'
"""

import argparse
import contextlib
import json
import os
import queue
import re
import shlex
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
from _record import headline  # noqa: E402  (bench/_record.py: the run's record)

# Dense BF16 tensor-core peaks without sparsity, TFLOP/s, from the vendors' datasheets (the "with sparsity"
# figures are twice these). Matched in this order as whole words in the name `nvidia-smi` prints.
PEAK_TFLOPS = (("H200 NVL", 835), ("H200", 989), ("H100 NVL", 835), ("H100 PCIe", 756), ("H100", 989),
               ("A100", 312), ("L40S", 362), ("L4", 121))


def peak_for(name):
    """(TFLOP/s, table key) of the first `PEAK_TFLOPS` entry found in the GPU name, or (None, None)."""
    for key, tflops in PEAK_TFLOPS:
        if re.search(rf"(?<!\w){re.escape(key)}(?!\w)", name):
            return tflops, key
    return None, None


def gpu_name():
    try:
        done = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"], capture_output=True,
                              text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    names = done.stdout.strip().splitlines()
    return names[0].strip() if done.returncode == 0 and names else None


def write_corpus(path, tokenizer, instances, seq_length, seed=0):
    """A text corpus of about `instances` NSP pairs at `seq_length`: words of the vocabulary, 6-12 sentences
    of 8-20 words per document, a blank line between documents. Returns the path."""
    import numpy as np

    rng = np.random.default_rng(seed)
    words = [token for token in tokenizer.vocabulary if token.isalpha() and token.isascii() and len(token) > 2]
    documents = []
    tokens = 0
    while tokens < 1.3 * instances * seq_length:  # a margin: short pairs and the pairs' [CLS]/[SEP]
        sentences = [" ".join(rng.choice(words, rng.integers(8, 21))) + " ." for _ in range(rng.integers(6, 13))]
        tokens += sum(sentence.count(" ") + 1 for sentence in sentences)
        documents.append("\n".join(sentences))
    path.write_text("\n\n".join(documents) + "\n", encoding="utf-8")
    return path


def step_flops(config, batch, seq_length, predictions, next_sentence):
    """Training FLOPs of one step: `step_time.step_flops` plus, with NSP, the [CLS] row, pooler and classifier."""
    import step_time

    hidden, intermediate = config.hidden_dim, config.intermediate_dim
    flops = step_time.step_flops(config.num_layers, hidden, intermediate, config.vocabulary_size, batch,
                                 seq_length, predictions)
    if next_sentence:
        row = 6 * (2 * hidden * hidden + 2 * hidden * intermediate) + 12 * seq_length * hidden
        flops += batch * (row + 6 * (hidden * hidden + 2 * hidden))
    return flops


def measured_peak(dtype, size=1024, repeats=5):
    """Best FLOP/s of a `size`^3 matmul in `dtype` on the backend's default device, timed as `step_time.py` times
    its peak (`step_time.matmul_flops`)."""
    import step_time

    return step_time.matmul_flops(size, size, size, dtype, repeats)


def masking_seconds(tokenizer, args, batches=20):
    """Seconds the numpy masker takes for one batch of this run's shape (median of `batches`): the input's own
    cost, which numpy batches (no TensorFlow) put in the training loop's thread."""
    import numpy as np

    from bertlib.text.masking import MaskedLMMasker

    masker = MaskedLMMasker.from_tokenizer(tokenizer, max_predictions=args.max_predictions)
    token_ids = np.random.default_rng(0).integers(999, tokenizer.vocabulary_size, (args.batch_size, args.seq_length))
    seconds = []
    for number in range(batches):
        started = time.perf_counter()
        masker(token_ids, seed=(0, number))
        seconds.append(time.perf_counter() - started)
    return statistics.median(seconds)


def on_gpu(backend):
    if backend == "jax":
        import jax

        return jax.devices()[0].platform == "gpu"
    import tensorflow as tf

    return bool(tf.config.list_logical_devices("GPU"))


def peak(args, backend, compute_dtype):
    """(FLOP/s, how it was found)."""
    if args.peak_tflops:
        return args.peak_tflops * 1e12, "--peak-tflops"
    if on_gpu(backend):
        name = gpu_name() or "unknown GPU (nvidia-smi gave no name)"
        tflops, key = peak_for(name)
        if tflops is None:
            raise SystemExit(f"pretrain_mfu.py: no published peak for GPU {name!r} in PEAK_TFLOPS "
                             f"{[key for key, _ in PEAK_TFLOPS]}; pass --peak-tflops.")
        return tflops * 1e12, f"{name}: published dense BF16 peak of the {key}"
    return measured_peak(compute_dtype), f"CPU: best {compute_dtype} 1024^3 matmul measured here"


# ------------------------------------------------------------------------------------------------------ levers
# Each lever is off by default (today's `bertlib pretrain`) and switched on by an option, so that one run on a lent
# accelerator can A/B them (`--variants`). A lever that pays there moves into bertlib; until then it lives here.


@contextlib.contextmanager
def random_bits(impl):
    """Dropout's random bits from JAX's `impl` generator ("rbg", "unsafe_rbg") instead of its default, threefry.

    Threefry computes its bits with 20 rounds of integer arithmetic per 64 bits, which a GPU pays for every dropout
    mask; rbg uses XLA's RngBitGenerator (Philox on GPUs), a fraction of the work. Setting `jax_default_prng_impl`
    does not work with Keras: its SeedGenerator state is threefry's 2-word key, and an rbg key has 4 words (JAX
    refuses the draw). So here Keras' JAX `dropout` and `uniform` (what `keras.random.dropout` and
    `keras.random.uniform`, the draws of a dropout layer, call) turn the 2-word seed into an rbg key. The masks are
    other random bits with the same law, not the same numbers as threefry's.
    """
    import jax
    import jax.numpy as jnp
    from keras.src.backend.jax import random as keras_jax_random

    def key(seed):
        words = keras_jax_random.jax_draw_seed(seed)  # Keras' (2,) uint32 seed, advanced once a call
        return jax.random.wrap_key_data(jnp.concatenate([words, words ^ jnp.uint32(0x9E3779B9)]), impl=impl)

    def uniform(shape, minval=0.0, maxval=1.0, dtype=None, seed=None):
        import keras

        return jax.random.uniform(key(seed), shape=shape, dtype=dtype or keras.config.floatx(), minval=minval,
                                  maxval=maxval)

    def dropout(inputs, rate, noise_shape=None, seed=None):
        if rate in (0.0, 1.0) or noise_shape is not None:
            return original["dropout"](inputs, rate, noise_shape=noise_shape, seed=seed)
        keep = jax.random.bernoulli(key(seed), p=1.0 - rate, shape=inputs.shape)
        return jax.lax.select(keep, inputs / (1.0 - rate), jnp.zeros_like(inputs))

    original = {"uniform": keras_jax_random.uniform, "dropout": keras_jax_random.dropout}
    keras_jax_random.uniform, keras_jax_random.dropout = uniform, dropout
    try:
        yield
    finally:
        keras_jax_random.uniform, keras_jax_random.dropout = original["uniform"], original["dropout"]


def prefetched(batches, depth):
    """The batches of the iterable `batches`, in order, made by a background thread up to `depth` ahead.

    Without it, `fit` on numpy batches (`bertlib.text.data.pretraining_batches`, the input where TensorFlow is not
    installed) masks each batch in the training loop's thread, after the step's result was read back, while the
    device waits (3.6 ms a 256 x 128 batch on the H200 host; the step was 75 ms). Keras' JAX loop then copies each
    batch to the device one step ahead. An error in the thread is raised here, at the batch it stopped.
    """
    ready = queue.Queue(maxsize=depth)
    stop = threading.Event()
    end = object()

    def produce():
        try:
            for item in batches:
                while not stop.is_set():
                    try:
                        ready.put((item, None), timeout=0.1)
                        break
                    except queue.Full:
                        continue
                if stop.is_set():
                    return
            ready.put((end, None))
        except BaseException as error:  # handed to the consumer, raised in its thread
            ready.put((end, error))

    threading.Thread(target=produce, name="prefetched-batches", daemon=True).start()
    try:
        while True:
            item, error = ready.get()
            if error is not None:
                raise error
            if item is end:
                return
            yield item
    finally:
        stop.set()


@contextlib.contextmanager
def prefetching(depth):
    """`pretrain`'s numpy batches (no TensorFlow) through `prefetched`; a tf.data pipeline prefetches already."""
    from bertlib.train import pretraining

    original = pretraining.phase_batches

    def phase_batches(*args, **kwargs):
        batches = original(*args, **kwargs)
        return batches if hasattr(batches, "element_spec") else prefetched(batches, depth)

    pretraining.phase_batches = phase_batches
    try:
        yield
    finally:
        pretraining.phase_batches = original


def levers(args):
    """The levers `args` switch on, as one context around `pretrain`."""
    stack = contextlib.ExitStack()
    if args.random_bits != "threefry":
        stack.enter_context(random_bits(args.random_bits))
    if args.prefetch:
        stack.enter_context(prefetching(args.prefetch))
    return stack


# ----------------------------------------------------------------------------------------------------- the run

RECIPE_DROPOUT = 0.1  # A.2; a variant with another dropout measures a lever, not the recipe


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--backend", choices=("auto", "tensorflow", "jax"), default="auto")
    parser.add_argument("--preset", default="base")
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--seq-length", type=int, default=128)
    parser.add_argument("--max-predictions", type=int, default=20)
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--log-every", type=int, default=10, help="steps per timed interval")
    parser.add_argument("--precision", default="mixed_bfloat16")
    parser.add_argument("--peak-tflops", type=float, help="the chip's peak, TFLOP/s (default: PEAK_TFLOPS by "
                        "GPU name; on a CPU, a matmul measured here)")
    parser.add_argument("--steps-per-execution", type=int, default=1,
                        help="lever: steps per call into the compiled step, so the loss is read back once per call "
                        "(must divide --log-every)")
    parser.add_argument("--random-bits", choices=("threefry", "rbg", "unsafe_rbg"), default="threefry",
                        help="lever (JAX): the generator of dropout's random bits (see random_bits)")
    parser.add_argument("--prefetch", type=int, default=0, help="lever: numpy batches made this many ahead in a "
                        "background thread (see prefetched); 0: in the training loop, as bertlib does")
    parser.add_argument("--attention", choices=("explicit", "fused"), default="explicit",
                        help="lever: BertConfig.attention; 'fused' (keras.ops.dot_product_attention, flash kernels "
                        "on GPUs) runs while training only without dropout, since the fused kernel drops nothing")
    parser.add_argument("--dropout", type=float, default=RECIPE_DROPOUT, help="the model's dropout (A.2: 0.1)")
    parser.add_argument("--variants", default=None,
                        help="';'-separated runs in this process, each a list of the options above that it changes, "
                        "e.g. 'base; --steps-per-execution 10; --random-bits rbg --prefetch 2' ('base': none)")
    parser.add_argument("--json", help="also write the figures here")
    args = parser.parse_args(argv)
    if args.steps < 2 * args.log_every or args.steps % args.log_every:
        parser.error(f"--steps ({args.steps}) must be a multiple of --log-every ({args.log_every}) and at least "
                     "twice it: the first interval (compiling) is not timed.")
    if args.peak_tflops is not None and not args.peak_tflops > 0:
        parser.error(f"--peak-tflops must be positive, got {args.peak_tflops}.")
    if args.steps_per_execution < 1 or args.log_every % args.steps_per_execution:
        parser.error(f"--steps-per-execution ({args.steps_per_execution}) must be a positive divisor of --log-every "
                     f"({args.log_every}).")
    if args.prefetch < 0:
        parser.error(f"--prefetch must be 0 or more, got {args.prefetch}.")
    if args.backend == "auto":
        from bertlib.text.data import has_tensorflow  # imports no Keras: the backend is still to be chosen

        args.backend = "tensorflow" if has_tensorflow() else "jax"
    if args.random_bits != "threefry" and args.backend != "jax":
        parser.error(f"--random-bits {args.random_bits} is a JAX generator; the backend is {args.backend}.")
    return args


def variant_arguments(argv, args):
    """[(name, parsed arguments)] of each `--variants` run: `argv` with the variant's options appended."""
    if args.variants is None:
        return [("base", args)]
    base = [*argv, "--backend", args.backend]  # every variant on the backend this process imported
    variants = []
    for text in args.variants.split(";"):
        options = [] if text.strip() in ("", "base") else shlex.split(text)
        if any(option.startswith(("--variants", "--backend", "--json")) for option in options):
            raise SystemExit(f"pretrain_mfu.py: variant {text.strip()!r} may not set --variants, --backend or --json.")
        variants.append((" ".join(options) or "base", parse_args([*base, *options])))
    return variants


def measure(args, tokenizer, corpus):
    """One `pretrain` run with `args`' levers: its figures (step time, tokens/s, MFU, ...)."""
    import dataclasses

    import keras

    from bertlib.text import data
    from bertlib.train import pretraining

    run = pretraining.PretrainSettings(
        corpus=(str(corpus),), preset=args.preset, steps=args.steps, batch_size=args.batch_size,
        seq_length=args.seq_length, max_predictions=args.max_predictions, learning_rate=1e-4,
        warmup_steps=args.steps // 10, log_every=args.log_every, checkpoint_every=args.steps,
        precision=args.precision, dropout=args.dropout, steps_per_execution=args.steps_per_execution)
    config = dataclasses.replace(run.model_config(tokenizer), attention=args.attention)
    records = []
    keras.backend.clear_session()  # a variant before this one leaves nothing behind
    with levers(args):
        result = pretraining.pretrain(run, tokenizer=tokenizer, config=config, on_progress=records.append)
    timed = records[1:]
    step_seconds = statistics.median(record["seconds"] / args.log_every for record in timed)
    flops = step_flops(config, args.batch_size, args.seq_length, args.max_predictions, run.next_sentence)
    from bertlib_course import compute

    course_flops = (args.batch_size * args.seq_length
                    * compute.training_flops_per_token(config, args.seq_length, config.num_params()))
    compute_dtype = keras.dtype_policies.get(result["policy"]).compute_dtype
    peak_flops, peak_source = peak(args, args.backend, compute_dtype)
    achieved = flops / step_seconds
    return {"backend": args.backend, "preset": args.preset, "parameters": config.num_params(),
            "policy": result["policy"], "jit_compile": result["pretrainer"].jit_compile,
            "input": "tf.data" if data.has_tensorflow() else "numpy (pretraining_batches)",
            "strategy": result["strategy"], "batch_size": args.batch_size, "seq_length": args.seq_length,
            "levers": {"steps_per_execution": args.steps_per_execution, "random_bits": args.random_bits,
                       "prefetch": args.prefetch, "attention": args.attention, "dropout": args.dropout},
            "recipe": args.dropout == RECIPE_DROPOUT,
            "timed_steps": len(timed) * args.log_every, "step_seconds": step_seconds,
            "step_seconds_all": [round(r["seconds"] / args.log_every, 5) for r in records],
            "tokens_per_second": args.batch_size * args.seq_length / step_seconds,
            "step_tflop": flops / 1e12, "achieved_tflops": achieved / 1e12, "peak_tflops": peak_flops / 1e12,
            "peak_source": peak_source, "mfu": achieved / peak_flops,
            "mfu_6n_estimate": course_flops / step_seconds / peak_flops, "final_loss": result["loss"],
            "mask_ms_per_batch": 1000 * masking_seconds(tokenizer, args)}


def describe(name, args, figures):
    return (f"{args.preset} on {args.backend} ({figures['policy']}, jit_compile={figures['jit_compile']}), batch "
            f"{args.batch_size} x {args.seq_length}, {name}: step {figures['step_seconds'] * 1000:.1f} ms (median of "
            f"{len(figures['step_seconds_all']) - 1} intervals of {args.log_every}), "
            f"{figures['tokens_per_second']:,.0f} tokens/s, {figures['achieved_tflops']:.3g} TFLOP/s of "
            f"{figures['peak_tflops']:.4g} ({figures['peak_source']}), MFU {figures['mfu']:.4f}; the 6N estimate "
            f"would say MFU {figures['mfu_6n_estimate']:.3f}; input: {figures['input']}, masking a batch "
            f"{figures['mask_ms_per_batch']:.1f} ms; loss {figures['final_loss']:.3f}")


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    args = parse_args(argv)
    os.environ["KERAS_BACKEND"] = args.backend
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    from bertlib.text import data
    from bertlib.train import host

    variants = variant_arguments(_without_variants(argv), args)
    tokenizer = data.default_tokenizer()
    results = []
    with tempfile.TemporaryDirectory(prefix="pretrain-mfu-") as folder:
        host.configure_compile_cache(Path(folder) / "jax")  # JAX: a variant of the same step loads its program
        corpora = {}
        for name, variant in variants:
            shape = (variant.batch_size, variant.seq_length)
            if shape not in corpora:
                corpora[shape] = write_corpus(Path(folder) / f"corpus-{len(corpora)}.txt", tokenizer,
                                              4 * variant.batch_size, variant.seq_length)
            figures = dict(measure(variant, tokenizer, corpora[shape]), variant=name)
            results.append(figures)
            print(json.dumps(figures), flush=True)
            print(describe(name, variant, figures), flush=True)
            print(f"variant {name}: step_ms {figures['step_seconds'] * 1000:.2f} mfu {figures['mfu']:.4f} "
                  f"tokens_per_second {figures['tokens_per_second']:.0f}", flush=True)
    # The headline: the best variant of the command line's batch shape that keeps the recipe's dropout (another
    # dropout measures a lever only; another shape, such as the 512-token phase, is another workload).
    comparable = [figures for figures in results if figures["recipe"]
                  and (figures["batch_size"], figures["seq_length"]) == (args.batch_size, args.seq_length)]
    best = max(comparable or results, key=lambda figures: figures["mfu"])
    kept = ("variant", "seq_length", "batch_size", "levers", "step_seconds", "tokens_per_second", "mfu", "final_loss")
    summary = dict(best, variants=[{key: figures[key] for key in kept} for figures in results]) \
        if len(results) > 1 else best
    if args.json:
        Path(args.json).write_text(json.dumps(summary, indent=1) + "\n", encoding="utf-8")
    print(f"step_ms: {best['step_seconds'] * 1000:.2f}")
    print(f"tokens_per_second: {best['tokens_per_second']:.0f}")
    headline("mfu", best["mfu"], unit="", digits=4,
             details={"preset": args.preset, "policy": best["policy"], "step_ms": round(best["step_seconds"] * 1000, 2),
                      "tokens_per_second": round(best["tokens_per_second"]), "variant": best["variant"],
                      "variants": {figures["variant"]: round(figures["mfu"], 4) for figures in results}})


def _without_variants(argv):
    """`argv` less its `--variants` and `--json` options (a variant's runs get the other options)."""
    kept, skip = [], False
    for option in argv:
        if skip:
            skip = False
        elif option in ("--variants", "--json"):
            skip = True
        elif not option.startswith(("--variants=", "--json=")):
            kept.append(option)
    return kept


if __name__ == "__main__":
    main()
