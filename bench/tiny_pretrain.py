"""A pretraining step of the course's shared tiny model, as `bertlib_course.evidence.tiny_pretrained` trains it.

Chapters 03, 04 and 07 pretrain this model (2 layers, H=64, 2 heads, a 2,000-piece WordPiece vocabulary trained
on the embedded Python documentation, batch 32 x 64 tokens, 10 masked-LM slots, MLM + NSP) through
`bertlib.train.pretraining.pretrain`, the library's one training loop, with 50 steps a call (one on PyTorch, whose
Keras runs one step a call, as `tiny_pretrained` does). This times that loop: one run of `--steps` steps, its
first logged interval (tracing, and compiling where XLA is on) apart from the steady intervals after it.
`--dropout` is the model's dropout; `--xla` forces XLA on or off instead of what `pretrain` picks (`auto`: on
TensorFlow on a CPU, XLA only without dropout; JAX always compiles).

    python bench/tiny_pretrain.py [--steps 500] [--dropout 0] [--xla auto|on|off]

Last line: `tiny_pretrain_step_ms: X` (the median steady interval, per step).
"""

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from _record import headline  # bench/_record.py: the run's record

from bertlib.train import host  # noqa: E402

THREADS = host.configure_cpu()  # before the backend starts its pools


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=500, help="steps of the run (a multiple of 50)")
    parser.add_argument("--dropout", type=float, default=0.0, help="the model's dropout (the course's: 0)")
    parser.add_argument("--xla", choices=("auto", "on", "off"), default="auto")
    args = parser.parse_args()
    if args.steps % 50 or args.steps < 100:
        parser.error(f"--steps must be a multiple of 50, at least 100; got {args.steps}")

    import keras

    from bertlib.model.config import BertConfig
    from bertlib.text import corpora, tokenizer, vocabulary
    from bertlib.train import pretraining

    if args.xla != "auto":
        pretraining._use_xla = lambda placement, dropout: args.xla == "on"
    sentences = [sentence for document in corpora.python_docs() for sentence in document]
    words = tokenizer.WordPieceTokenizer(vocabulary.train_wordpiece_vocab(sentences, 2000))
    config = BertConfig(num_layers=2, num_heads=2, hidden_dim=64, intermediate_dim=256,
                        vocabulary_size=words.vocabulary_size, dropout=args.dropout, max_sequence_length=128)
    run = pretraining.PretrainSettings(
        corpus="python-docs", steps=args.steps, batch_size=32, seq_length=64, max_predictions=10,
        learning_rate=2e-3, warmup_steps=args.steps // 10, next_sentence=True, dropout=args.dropout, seed=1,
        log_every=50, checkpoint_every=args.steps,
        steps_per_execution=1 if keras.backend.backend() == "torch" else 50,
        checkpoint_dir=str(Path(tempfile.mkdtemp(prefix="bertlib-bench-")) / "run"))
    started = time.perf_counter()
    result = pretraining.pretrain(run, tokenizer=words, config=config, verbose=False)
    seconds = time.perf_counter() - started
    intervals = [record["seconds"] for record in result["history"]]
    steady = statistics.median(intervals[1:]) / 50
    print(f"backend {keras.backend.backend()}, dropout {args.dropout}, xla {args.xla} (resolved "
          f"{result['pretrainer'].jit_compile}), threads {THREADS}, load average {os.getloadavg()}")
    print(f"{args.steps} steps in {seconds:.1f} s; first interval (tracing, compiling) {intervals[0]:.1f} s; "
          f"steady intervals {min(intervals[1:]):.2f}-{max(intervals[1:]):.2f} s per 50 steps; "
          f"final MLM accuracy {result['mlm_accuracy']:.3f}")
    headline("tiny_pretrain_step_ms", steady * 1000, unit="ms", digits=1,
             details={"dropout": args.dropout, "xla": str(result["pretrainer"].jit_compile)})


if __name__ == "__main__":
    main()
