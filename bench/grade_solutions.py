"""How long `coursekit grade` takes on the eight solution notebooks (fast mode, --jobs 2), and what it scores.

Each notebook runs in its own kernel (since issue 22 in a bubblewrap sandbox, with the instructor's checks in the
runner); the figure is the wall time of the whole command. `--repo` grades with another checkout's code (e.g. a
worktree of the commit before the sandbox) against this checkout's solutions, for a before/after in one session.

Run: .venv/bin/python bench/grade_solutions.py [--jobs 2] [--repo PATH]
Last line: `grade_solutions_seconds: N`.
"""

import argparse
import csv
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _record import headline  # bench/_record.py: the run's record

REPO = Path(__file__).resolve().parent.parent


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--repo", type=Path, default=REPO, help="the checkout whose grader runs (default: this one)")
    args = parser.parse_args()
    solutions = sorted((REPO / "solutions").glob("0*.ipynb"))
    with tempfile.TemporaryDirectory(prefix="grade-bench-") as folder:
        out = Path(folder) / "grades.csv"
        environment = {**os.environ, "PYTHONPATH": str(args.repo.resolve())}
        started = time.perf_counter()
        completed = subprocess.run([sys.executable, "-m", "bertlib.cli", "grade", *map(str, solutions), "--out",
                                    str(out), "--solutions", str(REPO / "solutions"), "--jobs", str(args.jobs)],
                                   env=environment, capture_output=True, text=True)
        seconds = time.perf_counter() - started
        print(completed.stdout.strip()[-500:], completed.stderr.strip()[-500:], sep="\n")
        with open(out, newline="", encoding="utf-8") as file:
            rows = list(csv.DictReader(file))
    for row in rows:
        if row["status"] != "passed":
            print(f"{Path(row['notebook']).name} {row['exercise']}: {row['status']}: {row['message'][:160]}")
    print(f"{len(solutions)} notebooks, {sum(int(row['score']) for row in rows)} of "
          f"{sum(int(row['max_score']) for row in rows)} points, exit {completed.returncode}")
    score = f"{sum(int(row['score']) for row in rows)} of {sum(int(row['max_score']) for row in rows)}"
    headline("grade_solutions_seconds", seconds, unit="s", digits=0, details={"score": score})


if __name__ == "__main__":
    main()
