"""Old code against new, in one run: `bench/step_time.py`'s float32 step, alternating between two source trees.

A change to the library must not slow the training step (issue 23: within 3%). Timings taken hours apart on a
shared machine differ by more than that, so this runs `step_time.py` in the old tree and in the new one in
turn, ABBA (old, new, new, old, ...), each process timing bertlib's step and keras-hub's in alternating rounds.
Two figures per pair of processes: bertlib's median step, new over old; and bertlib's step over keras-hub's in
the same process, new over old (keras-hub's code is the same in both trees, so that ratio cancels the load the
machine had at that moment). The headline is the median of the second over the pairs.

    python bench/step_time_ab.py --old /tmp/bertlib-before [--new .] [--pairs 4] [--rounds 3]

`--old` is a checkout of the earlier code (`git worktree add /tmp/bertlib-before COMMIT`, or
`git archive COMMIT | tar -x -C DIR`); each tree's own `bench/step_time.py` runs with its own `bertlib`.
Last line: `bertlib_f32_step_new_over_old: X` (below 1.03 passes the issue's bar).
"""

import argparse
import os
import re
import statistics
import subprocess
import sys
from pathlib import Path

LINE = re.compile(r"^(bertlib|keras_hub) f32\s+median\s+([\d.]+) ms", re.MULTILINE)


def step_times(tree, rounds, steps):
    """(bertlib ms, keras-hub ms): one `step_time.py` process in `tree`, float32 only."""
    environment = dict(os.environ, PYTHONPATH=str(tree), KERAS_BACKEND="tensorflow", TF_CPP_MIN_LOG_LEVEL="3")
    completed = subprocess.run([sys.executable, str(Path(tree) / "bench" / "step_time.py"), "--rounds", str(rounds),
                                "--steps", str(steps), "--precisions", "float32"], capture_output=True, text=True,
                               env=environment, cwd=tree, check=False)
    found = dict((library, float(ms)) for library, ms in LINE.findall(completed.stdout))
    if completed.returncode or len(found) != 2:
        raise RuntimeError(f"step_time.py in {tree} failed:\n{completed.stdout[-2000:]}\n{completed.stderr[-2000:]}")
    return found["bertlib"], found["keras_hub"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--old", required=True, help="source tree of the earlier code")
    parser.add_argument("--new", default=str(Path(__file__).resolve().parent.parent), help="default: this tree")
    parser.add_argument("--pairs", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=3, help="rounds per process (step_time.py --rounds)")
    parser.add_argument("--steps", type=int, default=10, help="steps per round (step_time.py --steps)")
    args = parser.parse_args()
    trees = {"old": Path(args.old).resolve(), "new": Path(args.new).resolve()}
    print(f"old {trees['old']}, new {trees['new']}, load average {os.getloadavg()}", flush=True)
    results = {"old": [], "new": []}
    for pair in range(args.pairs):
        for name in ("old", "new") if pair % 2 == 0 else ("new", "old"):
            bertlib_ms, keras_hub_ms = step_times(trees[name], args.rounds, args.steps)
            results[name].append((bertlib_ms, keras_hub_ms))
            print(f"pair {pair} {name}: bertlib {bertlib_ms:.1f} ms, keras-hub {keras_hub_ms:.1f} ms, ratio "
                  f"{bertlib_ms / keras_hub_ms:.3f}; load {os.getloadavg()[0]:.1f}", flush=True)
    raw = [new[0] / old[0] for old, new in zip(results["old"], results["new"])]
    relative = [(new[0] / new[1]) / (old[0] / old[1]) for old, new in zip(results["old"], results["new"])]
    print(f"bertlib step new/old per pair: {', '.join(f'{value:.3f}' for value in raw)} (median "
          f"{statistics.median(raw):.3f})")
    print(f"bertlib/keras-hub new over old per pair: {', '.join(f'{value:.3f}' for value in relative)}")
    print(f"load average at the end: {os.getloadavg()}")
    print(f"bertlib_f32_step_new_over_old: {statistics.median(relative):.3f}")


if __name__ == "__main__":
    main()
