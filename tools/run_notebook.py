"""Execute notebooks in fast mode and save them with their outputs and clean metadata.

    python tools/run_notebook.py notebooks/03_masked_lm.ipynb [more.ipynb ...] [--full] [--output-dir DIR]

Notebooks are stored with the outputs of a fast-mode run (BERTLIB_FAST=1) so readers see the plots on
GitHub. Metadata is cleaned: no execution timings, no widget state, a plain python3 kernelspec.
Prints each notebook's wall time and its slowest cells; fails (and saves nothing in place) if a cell raises.
With --output-dir the executed copy goes there instead, also when a cell failed, so a full-mode run
(`--full --output-dir full_runs`) can be read afterwards without touching the stored fast-mode outputs.
"""

import argparse
import os
import re
import sys
import time
from datetime import datetime
from pathlib import Path

import nbformat
from nbclient import NotebookClient

KEEP_NOTEBOOK_METADATA = {"kernelspec", "language_info", "colab", "accelerator"}
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


def run(path, fast=True, timeout=900, output_dir=None):
    notebook = nbformat.read(path, as_version=4)
    os.environ["BERTLIB_FAST"] = "1" if fast else "0"
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    client = NotebookClient(notebook, timeout=timeout, kernel_name="python3", record_timing=True,
                            resources={"metadata": {"path": str(Path(path).parent)}})
    target = Path(output_dir) / Path(path).name if output_dir else Path(path)
    start = time.perf_counter()
    try:
        client.execute()
    finally:
        elapsed = time.perf_counter() - start
        report_slowest_cells(notebook)
        if output_dir:
            target.parent.mkdir(parents=True, exist_ok=True)
            nbformat.write(notebook, target)
    errors = [cell for cell in notebook.cells if cell.cell_type == "code"
              and any(output.get("output_type") == "error" for output in cell.get("outputs", []))]
    if errors:
        raise RuntimeError(f"{path}: {len(errors)} cell(s) stored an error output")
    nbformat.write(clean(notebook), target)
    return elapsed


def report_slowest_cells(notebook, count=3):
    timings = []
    for index, cell in enumerate(notebook.cells):
        execution = cell.get("metadata", {}).get("execution", {})
        started, finished = execution.get("iopub.execute_input"), execution.get("shell.execute_reply")
        if started and finished:
            seconds = (datetime.fromisoformat(finished.replace("Z", "+00:00"))
                       - datetime.fromisoformat(started.replace("Z", "+00:00"))).total_seconds()
            timings.append((seconds, index))
    for seconds, index in sorted(timings, reverse=True)[:count]:
        print(f"  cell {index}: {seconds:.1f} s", flush=True)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("paths", nargs="+")
    parser.add_argument("--full", action="store_true", help="full mode (what learners run), not BERTLIB_FAST=1")
    parser.add_argument("--output-dir", help="write the executed notebooks here instead of in place")
    parser.add_argument("--clean-only", action="store_true", help="only clean metadata and start-up noise")
    args = parser.parse_args()
    if args.clean_only:
        for path in args.paths:
            nbformat.write(clean(nbformat.read(path, as_version=4)), path)
        return
    for path in args.paths:
        print(f"{path}: {run(path, fast=not args.full, output_dir=args.output_dir):.1f} s", flush=True)


if __name__ == "__main__":
    sys.exit(main())
