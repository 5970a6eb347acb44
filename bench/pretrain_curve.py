"""The learning curve of the default pretraining run (`bertlib pretrain` on the embedded corpus, CPU).

Records masked-LM and NSP accuracy every logging interval in bench/pretrain_curve.json and plots them in
bench/pretrain_curve.png against two baselines that need no model:
  * unigram: always predict the corpus' most frequent masked target (computed from the same masked data);
  * NSP chance: 0.5, since half the B sentences are random (§3.2).
Last line: `mlm_accuracy_over_unigram: X`, the final interval's MLM accuracy divided by the unigram one.

Run: `KERAS_BACKEND=tensorflow python bench/pretrain_curve.py` (extra `--steps`, `--learning-rate`, ...
override `bertlib.train.pretraining.pretrain`'s defaults).
"""

import argparse
import json
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np
from _record import headline  # bench/_record.py: the run's record

HERE = Path(__file__).resolve().parent


def unigram_accuracy(seq_length=128, max_predictions=20, seed=0, batch_size=32):
    """Accuracy of always answering the most frequent masked target over one epoch of the default data."""
    from bertlib.text import corpora, data
    from bertlib.text.masking import MaskedLMMasker

    tokenizer = data.default_tokenizer()
    arrays = data.build_pretraining_arrays(corpora.python_docs(), tokenizer, max_seq_length=seq_length,
                                           seed=seed)
    masker = MaskedLMMasker(tokenizer.vocabulary_size, tokenizer.mask_id, tokenizer.special_token_ids,
                            max_predictions=max_predictions)
    targets = []
    for batch in data.pretraining_dataset(arrays, batch_size, masker, seed=seed, repeat=False):
        weights = batch["mask_weights"].numpy() > 0
        targets.append(batch["mask_ids"].numpy()[weights])
    targets = np.concatenate(targets)
    counts = np.bincount(targets)
    most_frequent = int(counts.argmax())
    return counts[most_frequent] / len(targets), tokenizer.id_to_token(most_frequent), len(targets)


def plot(history, unigram, path, title):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    steps = [record["step"] for record in history]
    figure, (mlm_axis, nsp_axis) = plt.subplots(1, 2, figsize=(11, 4))
    mlm_axis.plot(steps, [record["mlm_accuracy"] for record in history], marker="o", label="masked LM")
    mlm_axis.axhline(unigram, color="gray", linestyle="--", label=f"unigram baseline ({unigram:.3f})")
    mlm_axis.set(xlabel="step", ylabel="accuracy on masked slots", title="Masked LM (§3.1)")
    nsp_axis.plot(steps, [record["nsp_accuracy"] for record in history], marker="o", color="C1",
                  label="next sentence")
    nsp_axis.axhline(0.5, color="gray", linestyle="--", label="chance (0.5)")
    nsp_axis.set(xlabel="step", ylabel="accuracy on sentence pairs", title="Next sentence prediction (§3.2)")
    for axis in (mlm_axis, nsp_axis):
        axis.legend()
        axis.grid(alpha=0.3)
    figure.suptitle(title)
    figure.tight_layout()
    figure.savefig(path, dpi=120)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int)
    parser.add_argument("--learning-rate", type=float)
    parser.add_argument("--warmup-steps", type=int)
    parser.add_argument("--batch-size", type=int)
    parser.add_argument("--out", default=str(HERE / "pretrain_curve"),
                        help="path prefix of the .json and .png")
    args = parser.parse_args(argv)
    overrides = {key: value for key, value in vars(args).items() if key != "out" and value is not None}

    from bertlib.train import pretraining

    unigram, token, count = unigram_accuracy()
    print(f"unigram baseline: always {token!r}, right on {unigram:.4f} of {count} masked targets", flush=True)
    started = time.perf_counter()
    result = pretraining.pretrain(**overrides)
    wall = time.perf_counter() - started
    history = result["history"]
    summary = {"settings": {"preset": "tiny", "corpus": "python-docs", **overrides}, "wall_seconds": wall,
               "unigram_accuracy": unigram, "unigram_token": token, "nsp_chance": 0.5,
               "final": {key: result[key] for key in ("step", "mlm_loss", "mlm_accuracy", "nsp_accuracy",
                                                      "tokens_per_second")},
               "history": history}
    Path(args.out + ".json").write_text(json.dumps(summary, indent=1))
    plot(history, unigram, args.out + ".png",
         f"bertlib pretrain: tiny BERT on python-docs, {result['step']} steps, {wall / 60:.1f} min wall time")
    print(f"wall time: {wall:.0f} s, tokens/s: {result['tokens_per_second']:,.0f}")
    print(f"nsp_accuracy: {result['nsp_accuracy']:.4f} (chance 0.5)")
    print(f"mlm_accuracy: {result['mlm_accuracy']:.4f} (unigram {unigram:.4f})")
    headline("mlm_accuracy_over_unigram", result["mlm_accuracy"] / unigram, unit="x", digits=2,
             details={"mlm_accuracy": round(result["mlm_accuracy"], 4), "unigram": round(unigram, 4),
                      "nsp_accuracy": round(result["nsp_accuracy"], 4), "wall_seconds": round(wall)})
    return 0


if __name__ == "__main__":
    sys.exit(main())
