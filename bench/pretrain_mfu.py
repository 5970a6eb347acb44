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
"""

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

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
    parser.add_argument("--json", help="also write the figures here")
    args = parser.parse_args(argv)
    if args.steps < 2 * args.log_every or args.steps % args.log_every:
        parser.error(f"--steps ({args.steps}) must be a multiple of --log-every ({args.log_every}) and at least "
                     "twice it: the first interval (compiling) is not timed.")
    if args.peak_tflops is not None and not args.peak_tflops > 0:
        parser.error(f"--peak-tflops must be positive, got {args.peak_tflops}.")
    if args.backend == "auto":
        from bertlib.text.data import has_tensorflow  # imports no Keras: the backend is still to be chosen

        args.backend = "tensorflow" if has_tensorflow() else "jax"
    return args


def main(argv=None):
    args = parse_args(argv)
    os.environ["KERAS_BACKEND"] = args.backend
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import keras

    from bertlib.text import data
    from bertlib.train import pretraining

    tokenizer = data.default_tokenizer()
    with tempfile.TemporaryDirectory(prefix="pretrain-mfu-") as folder:
        corpus = write_corpus(Path(folder) / "corpus.txt", tokenizer, 4 * args.batch_size, args.seq_length)
        run = pretraining.PretrainSettings(
            corpus=(str(corpus),), preset=args.preset, steps=args.steps, batch_size=args.batch_size,
            seq_length=args.seq_length, max_predictions=args.max_predictions, learning_rate=1e-4,
            warmup_steps=args.steps // 10, log_every=args.log_every, checkpoint_every=args.steps,
            precision=args.precision)
        config = run.model_config(tokenizer)
        records = []
        result = pretraining.pretrain(run, tokenizer=tokenizer, on_progress=records.append)
    timed = records[1:]
    step_seconds = statistics.median(record["seconds"] / args.log_every for record in timed)
    flops = step_flops(config, args.batch_size, args.seq_length, args.max_predictions, run.next_sentence)
    from bertlib_course import compute

    course_flops = (args.batch_size * args.seq_length
                    * compute.training_flops_per_token(config, args.seq_length, config.num_params()))
    compute_dtype = keras.dtype_policies.get(result["policy"]).compute_dtype
    peak_flops, peak_source = peak(args, args.backend, compute_dtype)
    achieved = flops / step_seconds
    figures = {"backend": args.backend, "preset": args.preset, "parameters": config.num_params(),
               "policy": result["policy"], "jit_compile": result["pretrainer"].jit_compile,
               "input": "tf.data" if data.has_tensorflow() else "numpy (pretraining_batches)",
               "strategy": result["strategy"], "batch_size": args.batch_size, "seq_length": args.seq_length,
               "timed_steps": len(timed) * args.log_every, "step_seconds": step_seconds,
               "step_seconds_all": [round(r["seconds"] / args.log_every, 5) for r in records],
               "tokens_per_second": args.batch_size * args.seq_length / step_seconds,
               "step_tflop": flops / 1e12, "achieved_tflops": achieved / 1e12, "peak_tflops": peak_flops / 1e12,
               "peak_source": peak_source, "mfu": achieved / peak_flops,
               "mfu_6n_estimate": course_flops / step_seconds / peak_flops, "final_loss": result["loss"],
               "mask_ms_per_batch": 1000 * masking_seconds(tokenizer, args)}
    print(json.dumps(figures), flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=1) + "\n", encoding="utf-8")
    print(f"{args.preset} on {args.backend} ({result['policy']}, jit_compile={figures['jit_compile']}), batch "
          f"{args.batch_size} x {args.seq_length}: step {step_seconds * 1000:.1f} ms (median of "
          f"{len(timed)} intervals of {args.log_every}), {figures['tokens_per_second']:,.0f} tokens/s, "
          f"{achieved / 1e12:.3g} TFLOP/s of {peak_flops / 1e12:.4g} ({peak_source}); the 6N estimate would "
          f"say MFU {figures['mfu_6n_estimate']:.3f}; input: {figures['input']}, masking a batch "
          f"{figures['mask_ms_per_batch']:.1f} ms")
    print(f"step_ms: {step_seconds * 1000:.2f}")
    print(f"tokens_per_second: {figures['tokens_per_second']:.0f}")
    print(f"mfu: {figures['mfu']:.4f}")


if __name__ == "__main__":
    main()
