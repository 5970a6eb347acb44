"""Execute notebooks and save them with their outputs, clean metadata and a record of the run.

    python tools/run_notebook.py --full notebooks/03_masked_lm.ipynb [more.ipynb ...] [--output-dir DIR]
    python tools/run_notebook.py --full --backend jax --output-dir build/full-jax notebooks/*.ipynb

The stored notebooks carry the outputs of a full run (`--full`, what a learner gets from Run All; `make full`
runs the whole course this way). Without `--full` the notebook runs in fast mode (BERTLIB_FAST=1, what CI
runs). Each saved notebook records how its outputs were made in its metadata:
`"bertlib": {"run": {"mode": "full" | "fast", "date": ..., "seconds": ..., "commit": ..., "code_sha256": ...}}`,
which tests/course/test_notebook_evidence.py checks (the fingerprint of the code cells must be today's, so an edited
cell cannot keep the outputs of the code it replaced). Metadata is otherwise cleaned: no execution timings, no widget state,
a plain python3 kernelspec. Prints each notebook's wall time and its slowest cells; fails (and saves nothing
in place) if a cell raises. With --output-dir the executed copy goes there instead, also when a cell failed.

`--backend` runs the kernel on that Keras backend (KERAS_BACKEND); the record says which. The stored outputs are
TensorFlow's, so a run on JAX or PyTorch needs --output-dir and never writes over them.
"""

import argparse
import json
import os
import re
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import nbformat
from nbclient import NotebookClient

from coursekit.exercises import code_fingerprint

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run as a script: the checkout, for `tools`
from tools.repo_paths import shared_data_dir  # noqa: E402

KEEP_NOTEBOOK_METADATA = {"kernelspec", "language_info", "colab", "accelerator", "bertlib"}
# TensorFlow's C++ start-up lines (absl, oneDNN, CUDA probing) are printed before any setting can hide them.
NOISE = re.compile(r"^(WARNING: All log messages before absl|[IWE]\d{4} |To enable the following instructions|"
                   r"Could not find cuda drivers)")


def strip_noise(outputs):
    kept = []
    for output in outputs:
        if output.get("output_type") == "stream" and output.get("name") == "stderr":
            lines = [line for line in output["text"].splitlines(keepends=True) if not NOISE.match(line)]
            if not "".join(lines).strip():
                continue
            output["text"] = "".join(lines)
        kept.append(output)
    return kept


def clean(notebook):
    notebook.metadata = {key: value for key, value in notebook.metadata.items() if key in KEEP_NOTEBOOK_METADATA}
    notebook.metadata["kernelspec"] = {"display_name": "Python 3", "language": "python", "name": "python3"}
    notebook.metadata.get("language_info", {}).pop("version", None)
    for cell in notebook.cells:
        if cell.cell_type == "code":
            cell.outputs = strip_noise(cell.outputs)
        cell.metadata.pop("execution", None)
        cell.metadata.pop("ExecuteTime", None)
        cell.metadata.pop("collapsed", None)
        cell.metadata.pop("scrolled", None)
    return notebook


def commit_of(path):
    """The commit the notebook ran at, with "+changes" when the working tree differed from it."""
    folder = Path(path).resolve().parent
    try:
        head = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], cwd=folder, capture_output=True,
                              text=True, check=True).stdout.strip()
        changed = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no", "--", ":/bertlib", ":/course",
                                  str(Path(path).resolve())], cwd=folder, capture_output=True, text=True,
                                 check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head + ("+changes" if changed else "")


BACKENDS = ("tensorflow", "jax", "torch")
STORED_BACKEND = "tensorflow"  # the backend of the outputs stored in the repository


def run_record(fast, seconds, commit, backend=STORED_BACKEND, code=None, lang="en"):
    return {"mode": "fast" if fast else "full", "date": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "seconds": round(seconds, 1), "commit": commit, "load_average": round(os.getloadavg()[0], 2),
            "backend": backend, "code_sha256": code, "lang": lang}


def run(path, fast=True, timeout=900, output_dir=None, timings=None, backend=STORED_BACKEND):
    if backend not in BACKENDS:
        raise ValueError(f"Unknown backend {backend!r}; expected one of {list(BACKENDS)}.")
    if backend != STORED_BACKEND and not output_dir:
        raise ValueError(f"{path}: a {backend} run needs --output-dir: the stored outputs are {STORED_BACKEND}'s "
                         "and are never overwritten by another backend's run.")
    notebook = nbformat.read(path, as_version=4)
    # The kernel's environment only: this process (a test, `make full`) keeps its own.
    kernel_environment = {**os.environ, "BERTLIB_FAST": "1" if fast else "0", "KERAS_BACKEND": backend}
    kernel_environment.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    if shared_data_dir() is not None:  # CI's datasets, as `make` passes them (a BERTLIB_DATA set, even empty, wins)
        kernel_environment.setdefault("BERTLIB_DATA", str(shared_data_dir()))
    client = NotebookClient(notebook, timeout=timeout, kernel_name="python3", record_timing=True,
                            resources={"metadata": {"path": str(Path(path).parent)}})
    target = Path(output_dir) / Path(path).name if output_dir else Path(path)
    commit = commit_of(path)  # before the run: the code that made the outputs
    start = time.perf_counter()
    try:
        client.execute(env=kernel_environment)
    finally:
        elapsed = time.perf_counter() - start
        report_slowest_cells(notebook)
        if timings:
            with open(timings, "a", encoding="utf-8") as log:
                log.write(json.dumps({"notebook": Path(path).name, "backend": backend, "seconds": round(elapsed, 1),
                                      "load_average": [round(x, 2) for x in os.getloadavg()],
                                      "cells": {index: round(seconds, 1) for seconds, index in cell_timings(notebook)}})
                          + "\n")
        metadata = {key: value for key, value in notebook.metadata.get("bertlib", {}).items() if key != "run"}
        notebook.metadata["bertlib"] = {**metadata, "run": run_record(fast, elapsed, commit, backend,
                                                                      code_fingerprint(notebook),
                                                                      metadata.get("lang", "en"))}
        if output_dir:
            target.parent.mkdir(parents=True, exist_ok=True)
            nbformat.write(notebook, target)
    errors = [cell for cell in notebook.cells if cell.cell_type == "code"
              and any(output.get("output_type") == "error" for output in cell.get("outputs", []))]
    if errors:
        raise RuntimeError(f"{path}: {len(errors)} cell(s) stored an error output")
    nbformat.write(clean(notebook), target)
    return elapsed


def cell_timings(notebook):
    """(seconds, cell index) of every executed code cell, from nbclient's timing record."""
    timings = []
    for index, cell in enumerate(notebook.cells):
        execution = cell.get("metadata", {}).get("execution", {})
        started, finished = execution.get("iopub.execute_input"), execution.get("shell.execute_reply")
        if started and finished:
            seconds = (datetime.fromisoformat(finished.replace("Z", "+00:00"))
                       - datetime.fromisoformat(started.replace("Z", "+00:00"))).total_seconds()
            timings.append((seconds, index))
    return timings


def report_slowest_cells(notebook, count=5):
    for seconds, index in sorted(cell_timings(notebook), reverse=True)[:count]:
        print(f"  cell {index}: {seconds:.1f} s", flush=True)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("paths", nargs="+")
    parser.add_argument("--full", action="store_true", help="full mode (what learners run), not BERTLIB_FAST=1")
    parser.add_argument("--output-dir", help="write the executed notebooks here instead of in place")
    parser.add_argument("--clean-only", action="store_true", help="only clean metadata and start-up noise")
    parser.add_argument("--timeout", type=int, default=None,
                        help="seconds one cell may run (default 900, in full mode 3600: chapter 03's masking grid "
                             "takes 5 minutes on a quiet 2-core machine and passed 15 at load 4-5)")
    parser.add_argument("--timings", help="append each notebook's wall time and every cell's seconds here (JSON lines)")
    parser.add_argument("--backend", choices=BACKENDS, default=STORED_BACKEND,
                        help="the Keras backend of the kernel (default tensorflow; others need --output-dir)")
    args = parser.parse_args()
    if args.backend != STORED_BACKEND and not args.output_dir and not args.clean_only:
        parser.error(f"--backend {args.backend} needs --output-dir: the stored outputs are {STORED_BACKEND}'s.")
    if args.clean_only:
        for path in args.paths:
            nbformat.write(clean(nbformat.read(path, as_version=4)), path)
        return
    timeout = args.timeout or (3600 if args.full else 900)
    for path in args.paths:
        seconds = run(path, fast=not args.full, timeout=timeout, output_dir=args.output_dir,
                      timings=args.timings, backend=args.backend)
        print(f"{path}: {seconds:.1f} s ({args.backend})", flush=True)


if __name__ == "__main__":
    sys.exit(main())
