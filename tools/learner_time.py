"""What Run All cost a learner, read from a full run's timings: the budgets of issue 37 and no blind wait.

    python tools/learner_time.py build/full-jax/timings.jsonl [--notebooks build/full-jax]

Reads the JSON lines `tools/run_notebook.py --timings` appends (one per notebook: its backend, wall seconds and every
cell's seconds; a notebook run twice counts with its last line) and the executed notebooks beside them (or in
`--notebooks`). Prints each chapter's time and its longest cell, the whole course against its budget (30 minutes on
TensorFlow and JAX, 45 on PyTorch) and every cell over 180 s. Then checks the rule a learner sees: every cell that
ran `PROGRESS_FROM_S` seconds or more shows progress, that is, one of its outputs is the course's progress display
with a bar (`bertlib_course.progress` over a known total: HTML with a `<progress>` element, the final state kept in the
stored output). A display without a total shows no time left, so it does not count.

Exit status 1 when a cell of 20 s or more shows no progress, or when the timings or a notebook are missing or do
not match; a run over its time budget is reported, not failed, because the time depends on the machine (the
budgets are for a 2-core laptop, quiet, with an empty model cache). `make full`, `make full-jax` and
`make full-torch` run it after the chapters. Last line: `whole_course_minutes: X`.
"""

import argparse
import json
import sys
from pathlib import Path

import nbformat

PROGRESS_FROM_S = 20  # bertlib_course.progress: "for every cell that runs 20 seconds or more"
CELL_BUDGET_S = 180
COURSE_BUDGET_MIN = {"tensorflow": 30, "jax": 30, "torch": 45}


def read_timings(path):
    """{notebook file name: its last record} from a timings file, in the order the notebooks first ran."""
    path = Path(path)
    if not path.is_file():
        raise SystemExit(f"{path}: no timings file (make full-<backend> writes one; tools/run_notebook.py --timings)")
    records = {}
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
            name, seconds, cells = record["notebook"], float(record["seconds"]), record["cells"]
        except (ValueError, KeyError, TypeError) as error:
            raise SystemExit(f"{path}, line {number}: not a timings record ({error}): {line[:120]!r}") from None
        records[name] = {"backend": record.get("backend", "tensorflow"), "seconds": seconds,
                         "cells": {int(index): float(value) for index, value in cells.items()}}
    if not records:
        raise SystemExit(f"{path}: no timings in it")
    return records


def shows_progress(cell):
    """True when one of the cell's outputs is the course's progress display (its HTML bar). nbformat.read has
    joined the stored lists of lines into strings."""
    return any("<progress" in output.get("data", {}).get("text/html", "") for output in cell.get("outputs", []))


def blind_waits(records, folder):
    """[(notebook, cell index, seconds, first source line)] for every cell of PROGRESS_FROM_S or more without
    progress. A notebook or cell the timings name but the folder lacks is an error, not a pass."""
    found = []
    for name, record in records.items():
        path = Path(folder) / name
        if not path.is_file():
            raise SystemExit(f"{path}: the timings name this notebook, but it is not there")
        cells = nbformat.read(path, as_version=4).cells
        for index, seconds in sorted(record["cells"].items()):
            if seconds < PROGRESS_FROM_S:
                continue
            if index >= len(cells) or cells[index].cell_type != "code":
                raise SystemExit(f"{path}: the timings name code cell {index}, which the notebook does not have")
            if not shows_progress(cells[index]):
                lines = cells[index].source.strip().splitlines()
                found.append((name, index, seconds, lines[0] if lines else ""))
    return found


def report(records):
    """Lines for the table and the budgets, and the whole course in minutes."""
    backends = sorted({record["backend"] for record in records.values()})
    lines = [f"{'chapter':<40} {'seconds':>8}  longest cell"]
    over = []
    for name, record in records.items():
        index, longest = max(record["cells"].items(), key=lambda item: item[1], default=(None, 0.0))
        lines.append(f"{name:<40} {record['seconds']:>8.1f}  cell {index}: {longest:.1f} s")
        over += [(name, cell, seconds) for cell, seconds in record["cells"].items() if seconds > CELL_BUDGET_S]
    minutes = sum(record["seconds"] for record in records.values()) / 60
    budget = max(COURSE_BUDGET_MIN.get(backend, 30) for backend in backends)
    verdict = "within" if minutes <= budget else "OVER"
    lines.append(f"whole course ({', '.join(backends)}, {len(records)} notebooks): {minutes:.1f} min, {verdict} "
                 f"the budget of {budget} min")
    lines.append(f"cells over {CELL_BUDGET_S} s: " + (", ".join(f"{name} cell {cell} ({seconds:.1f} s)"
                                                            for name, cell, seconds in over) or "none"))
    return lines, minutes


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("timings", help="the JSON lines of tools/run_notebook.py --timings")
    parser.add_argument("--notebooks", help="the executed notebooks (default: the timings file's folder)")
    args = parser.parse_args(argv)
    records = read_timings(args.timings)
    lines, minutes = report(records)
    print("\n".join(lines))
    waits = blind_waits(records, args.notebooks or Path(args.timings).parent)
    for name, index, seconds, first_line in waits:
        print(f"BLIND WAIT: {name} cell {index} ran {seconds:.1f} s and shows no progress ({first_line[:70]})")
    if not waits:
        print(f"every cell of {PROGRESS_FROM_S} s or more shows progress")
    print(f"whole_course_minutes: {minutes:.1f}")
    return 1 if waits else 0


if __name__ == "__main__":
    sys.exit(main())
