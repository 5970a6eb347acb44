"""Where one training step's time goes, grouped by what the ops do: bertlib against keras-hub.

Builds the two models of `step_time.py`, traces a few training steps of each with the TensorFlow profiler and
sums the ops' self-time into groups (encoder matmuls, the MLM head's decoder, the loss, GELU, dropout,
LayerNorm, the optimizer, everything else). Self-times of ops that ran side by side on the two cores add up,
so the groups are shares of the work, not of the wall time.

    python bench/step_profile.py [--steps 5]

Reads the trace with the profiler's own converter (`framework_op_stats`), a TensorFlow-internal module;
if a TensorFlow version moves it, the script says so. Last line: `mlm_head_and_loss_share: X` (bertlib).
"""

import argparse
import collections
import glob
import json
import os
import tempfile

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras  # noqa: E402
import tensorflow as tf  # noqa: E402
from step_time import batch, bertlib_model, keras_hub_model, time_steps  # noqa: E402

GROUPS = ("encoder matmuls", "mlm head", "loss", "gelu", "dropout", "layernorm", "optimizer", "other")


def group(op_type, name):
    name = name.lower()
    if "mlm_head" in name:
        return "mlm head"
    if "loss" in name:
        return "loss"
    if "adam" in name:
        return "optimizer"
    if "dropout" in name or op_type == "StatelessRandomUniformV2":
        return "dropout"
    if "gelu" in name or op_type in ("Tanh", "TanhGrad", "Erf"):
        return "gelu"
    if "norm" in name:
        return "layernorm"
    if "matmul" in op_type.lower() or "einsum" in op_type.lower():
        return "encoder matmuls"
    return "other"


def profile(step, data, steps, logdir):
    time_steps(step, data, 3)  # trace and warm up outside the profile
    tf.profiler.experimental.start(logdir)
    time_steps(step, data, steps)
    tf.profiler.experimental.stop()
    try:
        from tensorflow.python.profiler.internal import _pywrap_profiler_plugin
    except ImportError as error:
        raise SystemExit(f"this TensorFlow has no profiler converter ({error}); use TensorBoard's profile "
                         "plugin on a trace instead") from error
    paths = glob.glob(os.path.join(logdir, "**", "*.xplane.pb"), recursive=True)
    table, ok = _pywrap_profiler_plugin.xspace_to_tools_data(paths, "framework_op_stats", {})
    if not ok:
        raise SystemExit(f"the profiler converter failed: {table[:200]!r}")
    rows = json.loads(table)[0]["rows"]
    totals = collections.Counter()
    for row in rows:
        values = [cell["v"] for cell in row["c"]]
        op_type, name, self_time_us = values[2], values[3], values[7]
        if op_type != "IDLE":
            totals[group(op_type, name)] += self_time_us
    return totals


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=5)
    args = parser.parse_args()
    keras.utils.set_random_seed(0)
    data = batch()
    shares = {}
    with tempfile.TemporaryDirectory() as logdir:
        for name, (_, step) in {"bertlib": bertlib_model("auto", "gelu_approximate"),
                                "keras_hub": keras_hub_model("auto")}.items():
            totals = profile(step, data, args.steps, os.path.join(logdir, name))
            shares[name] = {key: totals[key] / sum(totals.values()) for key in GROUPS}
    print(f"{'group':18s} {'bertlib':>8s} {'keras_hub':>10s}  (share of summed op self-time)")
    for key in GROUPS:
        print(f"{key:18s} {shares['bertlib'][key]:8.1%} {shares['keras_hub'][key]:10.1%}")
    head = shares["bertlib"]["mlm head"] + shares["bertlib"]["loss"]
    print(f"mlm_head_and_loss_share: {head:.3f}")


if __name__ == "__main__":
    main()
