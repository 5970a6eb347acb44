"""Fine-tune all-MiniLM-L6-v2 on SST-2 through bertlib and report dev accuracy and CPU time.

Target: dev accuracy >= 0.88 on 2 CPU cores. The recipe is the paper's (a dense head, AdamW with 10% warmup,
appendix A.3) on a random training subset, short sequences and one epoch. The head reads the mean of the
tokens' final states by default (`--pooling mean`): all-MiniLM-L6-v2 was trained as a sentence embedding
through that mean, so its [CLS] pooler is untrained; `--pooling cls` gives the paper's pooled [CLS] head.

With --compare-pretraining it also pretrains a tiny BERT with `bertlib pretrain` (masked LM + NSP on the
embedded Python-docs corpus) and fine-tunes it and the same architecture from random weights identically, to
show what that pretraining buys (§5.1's question at toy scale). The difference is printed as measured.

Usage:
    KERAS_BACKEND=tensorflow .venv/bin/python bench/finetune_sst2.py [--train-examples 20000]
        [--compare-pretraining] [--pretrain-steps 300]
Last line: `sst2_dev_accuracy: X`.
"""

import argparse
import os
import resource
import tempfile
import time

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from _record import headline  # bench/_record.py: the run's record

from bertlib.finetune import finetuning
from bertlib.io import downloads
from bertlib_course import paths


def cpu_seconds():
    """User + system CPU time of this process and its threads (all cores together)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def timed(description, function):
    cpu, wall = cpu_seconds(), time.perf_counter()
    result = function()
    cpu, wall = cpu_seconds() - cpu, time.perf_counter() - wall
    print(f"{description}: {cpu:.0f} s CPU, {wall:.0f} s wall", flush=True)
    return result, cpu


def compare_pretraining(glue_dir, args):
    from bertlib.train.pretraining import pretrain

    with tempfile.TemporaryDirectory() as folder:
        summary, _ = timed("pretrain tiny (python-docs)", lambda: pretrain(
            preset="tiny", corpus="python-docs", steps=args.pretrain_steps, batch_size=32, seq_length=128,
            checkpoint_dir=folder, checkpoint_every=args.pretrain_steps, log_every=args.pretrain_steps // 4,
            seed=args.seed, verbose=False))
        print(f"pretraining: final masked-LM accuracy {summary['mlm_accuracy']:.3f}, "
              f"NSP accuracy {summary['nsp_accuracy']:.3f}", flush=True)
        options = {"epochs": args.tiny_epochs, "batch_size": 32, "learning_rate": args.tiny_learning_rate,
                   "max_seq_length": args.max_seq_length, "max_train_examples": args.train_examples,
                   "seed": args.seed, "verbose": 0}
        pretrained, _ = timed("fine-tune pretrained tiny",
                              lambda: finetuning.finetune("sst2", glue_dir, summary["backbone"], **options))
    scratch, _ = timed("fine-tune tiny from random weights", lambda: finetuning.finetune("sst2", glue_dir, "tiny",
                                                                                       **options))
    difference = pretrained["accuracy"] - scratch["accuracy"]
    print(f"tiny, pretrained {args.pretrain_steps} steps: dev accuracy {pretrained['accuracy']:.4f}", flush=True)
    print(f"tiny, random initialization:       dev accuracy {scratch['accuracy']:.4f}", flush=True)
    print(f"difference (pretrained - random): {difference:+.4f}", flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--train-examples", type=int, default=67_349, help="SST-2 training examples (all: 67,349)")
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--learning-rate", type=float, default=1e-4)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--max-seq-length", type=int, default=64)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--compare-pretraining", action="store_true",
                        help="also compare a tiny model pretrained by `bertlib pretrain` with random init")
    parser.add_argument("--pretrain-steps", type=int, default=300)
    parser.add_argument("--tiny-epochs", type=int, default=2)
    parser.add_argument("--tiny-learning-rate", type=float, default=5e-4)
    parser.add_argument("--skip-minilm", action="store_true", help="only the pretraining comparison")
    parser.add_argument("--pooling", choices=("cls", "mean"), default="mean", help="MiniLM's classifier input")
    args = parser.parse_args()

    glue_dir = downloads.locate("sst2")  # the SST-2 folder of $BERTLIB_DATA or the cache; no download
    if glue_dir is None:
        raise SystemExit("SST-2 is not on this machine: set BERTLIB_DATA to a folder holding glue/SST-2 "
                         "(`make bench` sets ../shared/data); the bench needs the real SST-2 files.")
    if args.compare_pretraining:
        try:
            import bertlib.train.pretraining  # noqa: F401
        except ImportError as error:
            print(f"skipping the pretraining comparison: bertlib.train.pretraining is unavailable ({error})")
        else:
            compare_pretraining(glue_dir, args)
    if args.skip_minilm:
        return
    result, cpu = timed("fine-tune all-MiniLM-L6-v2 (load, featurize, train, evaluate)", lambda: finetuning.finetune(
        "sst2", glue_dir, paths.minilm_dir(), epochs=args.epochs, batch_size=args.batch_size,
        learning_rate=args.learning_rate, max_seq_length=args.max_seq_length,
        max_train_examples=args.train_examples, seed=args.seed, pooling=args.pooling))
    print(f"{args.train_examples} training examples, {args.epochs} epoch(s), batch {args.batch_size}, "
          f"pooling {args.pooling}, "
          f"learning rate {args.learning_rate}, max_seq_length {args.max_seq_length}; training alone "
          f"{result['train_cpu_seconds']:.0f} s CPU; whole run {cpu:.0f} s CPU")
    headline("sst2_dev_accuracy", result["accuracy"], unit="", digits=4,
             details={"train_examples": args.train_examples, "epochs": args.epochs, "cpu_seconds": round(cpu)})


if __name__ == "__main__":
    main()
