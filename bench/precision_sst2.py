"""Does fine-tuning suffer in mixed bfloat16? all-MiniLM-L6-v2 on SST-2, float32 then mixed_bfloat16.

The same recipe as `finetune_sst2.py` (mean pooling, AdamW with warmup, learning rate 1e-4, sequence 64,
one epoch on a random training subset, dev on all 872 sentences), run twice with the same seed and data,
once per Keras dtype policy. The aim: bfloat16's dev accuracy within 0.5 points of float32's.

    python bench/precision_sst2.py [--train-examples 20000]

Last line: `bf16_minus_float32_dev_accuracy_points: X`.
"""

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from _record import headline  # bench/_record.py: the run's record

from bertlib.finetune import finetuning
from bertlib.io import downloads
from bertlib.train import host
from bertlib_course import paths  # noqa: E402


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--train-examples", type=int, default=20000)
    parser.add_argument("--max-seq-length", type=int, default=64)
    parser.add_argument("--learning-rate", type=float, default=1e-4)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    host.configure_cpu()
    import keras

    glue_dir = downloads.locate("sst2")  # the SST-2 folder of $BERTLIB_DATA or the cache; no download
    if glue_dir is None:
        raise SystemExit("SST-2 is not on this machine: set BERTLIB_DATA to a folder holding glue/SST-2 "
                         "(`make bench` sets ../shared/data); the bench needs the real SST-2 files.")
    print(f"load average {os.getloadavg()}")
    accuracy = {}
    for policy in ("float32", "mixed_bfloat16"):
        keras.config.set_dtype_policy(policy)
        started = time.perf_counter()
        result = finetuning.finetune("sst2", glue_dir, paths.minilm_dir(), epochs=1, batch_size=32,
                                   learning_rate=args.learning_rate, max_seq_length=args.max_seq_length,
                                   max_train_examples=args.train_examples, seed=args.seed, pooling="mean",
                                   verbose=0)
        keras.config.set_dtype_policy("float32")
        accuracy[policy] = result["accuracy"]
        print(f"{policy}: dev accuracy {result['accuracy']:.4f}, {time.perf_counter() - started:.0f} s wall, "
              f"load average {os.getloadavg()}", flush=True)
    headline("bf16_minus_float32_dev_accuracy_points", 100 * (accuracy["mixed_bfloat16"] - accuracy["float32"]),
             unit="points", digits=2, details={**accuracy, "train_examples": args.train_examples})


if __name__ == "__main__":
    main()
