"""One training step of the course's tiny pretrainer: what the chapters pay per step (issue 37, item 3).

The chapters train tiny models: 2 layers, hidden 64, 2 heads, FFN 256, a 45-token vocabulary, batch 64 x 16
tokens, 2 masked-LM predictions per sequence, `BertPretrainer(next_sentence=False)` compiled with
`schedule.make_optimizer(2e-3, 120, 1200)` and the default `compile()` (its loss and accuracy metric). At that
size a step is almost all per-op overhead, not arithmetic, so this times exactly what a chapter's `fit` runs.

The numpy batches are made once (random ids, sorted distinct mask positions, weights 1), before any timing.
Each round runs `--steps` steps through `fit` on those arrays (one epoch of `--steps` batches, as a chapter's
`fit` runs its epochs) and the figure is the median over `--rounds` rounds of the time per step; a first
`fit` traces (and on JAX compiles) the step outside the rounds. The backend is KERAS_BACKEND's
(TensorFlow by default); CPU threads are set by `bertlib.train.host.configure_cpu()`, as the course does.

    KERAS_BACKEND=jax python bench/tiny_step.py [--rounds 7] [--steps 100] [--jit-compile auto]
        [--dropout 0.1] [--steps-per-execution 1] [--torch-threads N]

`--dropout 0` and `--steps-per-execution N` time the two cuts chapters 03 and 08 use for their toy grids
(TensorFlow draws a dropout mask in about 0.7 ms at this size; N steps a call into the compiled step).
`--torch-threads 1` times PyTorch's step on one CPU thread, as `bertlib_course.toys.one_cpu_thread()` runs the
chapters' toy models there (the default: the threads `configure_cpu` gives PyTorch, the usable cores).

Last line: `tiny_step_ms: X`.
"""

import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from bertlib.train import host  # noqa: E402

THREADS = host.configure_cpu()  # before the backend starts its pools

import keras  # noqa: E402
import numpy as np  # noqa: E402
from _record import headline  # noqa: E402  (bench/_record.py: the run's record)

SIZE = dict(num_layers=2, num_heads=2, hidden_dim=64, intermediate_dim=256, vocabulary_size=45,
            max_sequence_length=16)
BATCH, SEQ, PREDICTIONS = 64, 16, 2


def arrays(steps, seed=0):
    """`steps` batches of chapter-03-like inputs as one set of numpy arrays (x, y, sample_weight)."""
    rng = np.random.default_rng(seed)
    rows = steps * BATCH
    token_ids = rng.integers(5, SIZE["vocabulary_size"], (rows, SEQ)).astype("int32")
    positions = np.sort(np.argsort(rng.random((rows, SEQ - 2)), axis=1)[:, :PREDICTIONS] + 1, axis=1)
    x = {"token_ids": token_ids, "segment_ids": np.zeros((rows, SEQ), "int32"),
         "padding_mask": np.ones((rows, SEQ), "int32"), "mask_positions": positions.astype("int32")}
    y = {"mlm_logits": np.take_along_axis(token_ids, positions, axis=1).astype("int32")}
    return x, y, {"mlm_logits": np.ones((rows, PREDICTIONS), "float32")}


def build(jit_compile, dropout=0.1, steps_per_execution=1):
    from bertlib import BertBackbone, BertConfig, BertPretrainer
    from bertlib.train import schedule

    keras.utils.set_random_seed(0)
    model = BertPretrainer(BertBackbone(BertConfig(**SIZE, dropout=dropout)), next_sentence=False)
    model.compile(optimizer=schedule.make_optimizer(2e-3, 120, 1200), jit_compile=jit_compile,
                  steps_per_execution=steps_per_execution)
    return model


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--steps", type=int, default=100, help="steps per round (one fit epoch)")
    parser.add_argument("--jit-compile", default="auto", help="auto, true or false")
    parser.add_argument("--dropout", type=float, default=0.1, help="the model's dropout rate (the default's 0.1)")
    parser.add_argument("--steps-per-execution", type=int, default=1, help="steps per call into the compiled step")
    parser.add_argument("--torch-threads", type=int, default=None,
                        help="PyTorch's CPU threads for the timed steps (PyTorch only; default: configure_cpu's)")
    args = parser.parse_args()
    jit = {"auto": "auto", "true": True, "false": False}[args.jit_compile.lower()]
    torch_threads = None
    if args.torch_threads is not None:
        if keras.backend.backend() != "torch" or args.torch_threads < 1:
            parser.error(f"--torch-threads needs KERAS_BACKEND=torch and a count of at least 1, got backend "
                         f"{keras.backend.backend()!r} and {args.torch_threads}")
        import torch

        torch.set_num_threads(args.torch_threads)
        torch_threads = torch.get_num_threads()
    x, y, w = arrays(args.steps)
    model = build(jit, args.dropout, args.steps_per_execution)
    fit = dict(batch_size=BATCH, epochs=1, verbose=0, shuffle=False)
    history = model.fit(x, y, sample_weight=w, **fit)  # trace / compile outside the rounds
    print(f"backend {keras.backend.backend()}, jit_compile {args.jit_compile} (resolved {model.jit_compile}), "
          f"dropout {args.dropout}, steps_per_execution {args.steps_per_execution}, "
          f"threads {THREADS}, PyTorch's threads {torch_threads or 'as configured'}, load average {os.getloadavg()}; "
          f"history keys {sorted(history.history)}")
    times, cpu = [], []
    for index in range(args.rounds):
        started, cpu_started = time.perf_counter(), time.process_time()
        model.fit(x, y, sample_weight=w, **fit)
        times.append((time.perf_counter() - started) / args.steps)
        cpu.append((time.process_time() - cpu_started) / args.steps)
        print(f"round {index}: {times[-1] * 1000:.2f} ms/step (CPU time {cpu[-1] * 1000:.2f} ms/step); "
              f"load {os.getloadavg()[0]:.1f}", flush=True)
    print(f"fastest {min(times) * 1000:.2f}, slowest {max(times) * 1000:.2f} ms/step; median CPU time "
          f"{statistics.median(cpu) * 1000:.2f} ms/step (all threads: steadier than wall time on a busy machine)")
    headline("tiny_step_ms", statistics.median(times) * 1000, unit="ms", digits=2,
             details={"cpu_ms": round(statistics.median(cpu) * 1000, 2)})


if __name__ == "__main__":
    main()
