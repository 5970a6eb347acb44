"""One training step of a chapter-sized model on each Keras backend, and PyTorch's OpenMP wait policy.

    python bench/backend_step.py [--steps 30]

Each measurement runs in a fresh process (Keras picks its backend at import; OpenMP reads its settings when
PyTorch loads it): a 2-layer pretrainer (H=64, the masked-LM toy of chapter 03), batch 64 of 16 tokens,
`train_on_batch`, the mean of `--steps` steps after one warm-up step. PyTorch runs twice: with OpenMP's
default wait policy (threads spin while they wait for work) and with OMP_WAIT_POLICY=PASSIVE, which
`bertlib.train.host.configure_cpu()` (and so `course.setup()`) sets. Last line: how many times faster the
passive PyTorch step is.
"""

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

from _record import headline  # bench/_record.py: the run's record

ROOT = Path(__file__).resolve().parent.parent

STEP = """
import json, sys, time
import numpy as np, keras
from bertlib import BertBackbone, BertConfig, BertPretrainer
config = BertConfig(num_layers=2, num_heads=2, hidden_dim=64, intermediate_dim=256, vocabulary_size=45,
                    max_sequence_length=16, dropout=0.0)
model = BertPretrainer(BertBackbone(config), next_sentence=False)
model.compile(optimizer=keras.optimizers.Adam(1e-3))
rng = np.random.default_rng(0)
x = {"token_ids": rng.integers(5, 45, (64, 16)).astype("int32"), "segment_ids": np.zeros((64, 16), "int32"),
     "padding_mask": np.ones((64, 16), "int32"), "mask_positions": rng.integers(0, 16, (64, 2)).astype("int32")}
y, w = {"mlm_logits": rng.integers(5, 45, (64, 2)).astype("int32")}, {"mlm_logits": np.ones((64, 2), "float32")}
model.train_on_batch(x, y, w)
start = time.perf_counter()
for _ in range(int(sys.argv[1])):
    model.train_on_batch(x, y, w)
print(json.dumps({"ms": (time.perf_counter() - start) / int(sys.argv[1]) * 1e3}))
"""


def step_ms(backend, steps, **environment):
    env = {name: value for name, value in os.environ.items() if name != "OMP_WAIT_POLICY"}  # OpenMP's default
    env.update(KERAS_BACKEND=backend, TF_CPP_MIN_LOG_LEVEL="3", PYTHONPATH=str(ROOT), **environment)
    completed = subprocess.run([sys.executable, "-c", STEP, str(steps)], env=env, capture_output=True, text=True,
                               check=True, timeout=1800)
    return json.loads(completed.stdout.strip().splitlines()[-1])["ms"]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=30)
    args = parser.parse_args()
    print(f"load average at start: {os.getloadavg()[0]:.1f}")
    results = {}
    for name, backend, environment in (("tensorflow", "tensorflow", {}), ("jax", "jax", {}),
                                       ("torch, OpenMP threads spin (default)", "torch", {}),
                                       ("torch, OMP_WAIT_POLICY=PASSIVE", "torch", {"OMP_WAIT_POLICY": "PASSIVE"})):
        results[name] = step_ms(backend, args.steps, **environment)
        print(f"{name:40s} {results[name]:8.1f} ms/step", flush=True)
    print(f"load average at end: {os.getloadavg()[0]:.1f}")
    speedup = results["torch, OpenMP threads spin (default)"] / results["torch, OMP_WAIT_POLICY=PASSIVE"]
    details = dict(zip(("tensorflow_ms", "jax_ms", "torch_spinning_ms", "torch_passive_ms"),
                       (round(ms, 1) for ms in results.values())))
    headline("torch_passive_speedup", speedup, unit="x", digits=1, details=details,
             backend_name="tensorflow, jax, torch")


if __name__ == "__main__":
    main()
