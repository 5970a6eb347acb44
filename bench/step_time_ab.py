"""Old code against new, in one run, alternating between two source trees: the training step, or pretrain's loop.

A change to the library must not slow training (issue 23: within 3%). Timings taken hours apart on a shared
machine differ by more than that, so this runs the same measurement in the old tree and in the new one in
turn, ABBA (old, new, new, old, ...), one process each:

- `--bench step`: `bench/step_time.py`'s float32 step (L4/H256, batch 32, seq 128), bertlib's and keras-hub's
  in alternating rounds. Per pair of processes: bertlib's step over keras-hub's in the same process, new over
  old (keras-hub's code is the same in both trees, so the ratio cancels the load of that moment).
- `--bench loop`: `bertlib.train.pretraining.pretrain`'s steady-state tokens per second (tiny preset, 200 steps, batch
  16, seq 128, a checkpoint every 100 steps): what the loop around the step (callbacks, logging, checkpoints)
  costs. Per pair: old tokens/s over new, so above 1 means the new loop is slower too.

    python bench/step_time_ab.py --old /tmp/bertlib-before [--new .] [--bench step] [--pairs 4]

`--old` is a checkout of the earlier code (`git worktree add /tmp/bertlib-before COMMIT`, or
`git archive COMMIT | tar -x -C DIR`); each tree runs with its own `bertlib` (and, for `step`, its own
`bench/step_time.py`). Last line: `bertlib_f32_step_new_over_old: X` (or `pretrain_loop_new_over_old: X`), the
median over the pairs of the new code's time over the old code's (below 1.03 passes the issue's bar).
"""

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
from pathlib import Path

from _record import headline  # bench/_record.py: the run's record

LINE = re.compile(r"^(bertlib|keras_hub) f32\s+median\s+([\d.]+) ms", re.MULTILINE)
LOOP = """
import json, tempfile
from bertlib.train import pretraining
with tempfile.TemporaryDirectory() as folder:
    result = pretraining.pretrain(preset="tiny", corpus="python-docs", steps=200, batch_size=16, seq_length=128,
                               log_every=25, checkpoint_every=100, checkpoint_dir=folder, warmup_steps=20,
                               verbose=False)
print(json.dumps({"tokens_per_second": result["tokens_per_second"]}))
"""


def run(tree, command):
    environment = dict(os.environ, PYTHONPATH=str(tree), KERAS_BACKEND="tensorflow", TF_CPP_MIN_LOG_LEVEL="3",
                       BERTLIB_BENCH_RECORDS=os.devnull)  # only this script's own headline is a record
    completed = subprocess.run([sys.executable, *command], capture_output=True, text=True, env=environment, cwd=tree,
                               check=False)
    if completed.returncode:
        raise RuntimeError(f"{command} in {tree} failed:\n{completed.stdout[-2000:]}\n{completed.stderr[-2000:]}")
    return completed.stdout


def step_times(tree, rounds, steps):
    """(bertlib ms, keras-hub ms): one `step_time.py` process in `tree`, float32 only."""
    stdout = run(tree, [str(Path(tree) / "bench" / "step_time.py"), "--rounds", str(rounds), "--steps", str(steps),
                        "--precisions", "float32"])
    found = dict((library, float(ms)) for library, ms in LINE.findall(stdout))
    return found["bertlib"], found["keras_hub"]


def loop_time(tree):
    """(seconds per token of pretrain's steady state, 1.0): one short `pretrain` in `tree`."""
    tokens_per_second = json.loads(run(tree, ["-c", LOOP]).strip().splitlines()[-1])["tokens_per_second"]
    return 1.0 / tokens_per_second, 1.0


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--old", required=True, help="source tree of the earlier code")
    parser.add_argument("--new", default=str(Path(__file__).resolve().parent.parent), help="default: this tree")
    parser.add_argument("--bench", choices=("step", "loop"), default="step")
    parser.add_argument("--pairs", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=3, help="rounds per process (step_time.py --rounds)")
    parser.add_argument("--steps", type=int, default=10, help="steps per round (step_time.py --steps)")
    args = parser.parse_args()
    trees = {"old": Path(args.old).resolve(), "new": Path(args.new).resolve()}
    print(f"old {trees['old']}, new {trees['new']}, load average {os.getloadavg()}", flush=True)
    results = {"old": [], "new": []}
    for pair in range(args.pairs):
        for name in ("old", "new") if pair % 2 == 0 else ("new", "old"):
            if args.bench == "step":
                mine, reference = step_times(trees[name], args.rounds, args.steps)
                print(f"pair {pair} {name}: bertlib {mine:.1f} ms, keras-hub {reference:.1f} ms, ratio "
                      f"{mine / reference:.3f}; load {os.getloadavg()[0]:.1f}", flush=True)
            else:
                mine, reference = loop_time(trees[name])
                print(f"pair {pair} {name}: pretrain {1 / mine:,.0f} tokens/s; load {os.getloadavg()[0]:.1f}",
                      flush=True)
            results[name].append((mine, reference))
    raw = [new[0] / old[0] for old, new in zip(results["old"], results["new"])]
    relative = [(new[0] / new[1]) / (old[0] / old[1]) for old, new in zip(results["old"], results["new"])]
    print(f"time new/old per pair: {', '.join(f'{value:.3f}' for value in raw)} (median {statistics.median(raw):.3f})")
    if args.bench == "step":
        print(f"bertlib/keras-hub new over old per pair: {', '.join(f'{value:.3f}' for value in relative)}")
    print(f"load average at the end: {os.getloadavg()}")
    name = {"step": "bertlib_f32_step", "loop": "pretrain_loop"}[args.bench]
    headline(f"{name}_new_over_old", statistics.median(relative), unit="x", digits=3,
             details={"pairs": args.pairs, "time_new_over_old": round(statistics.median(raw), 3)})


if __name__ == "__main__":
    main()
