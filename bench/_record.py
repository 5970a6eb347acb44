"""One record per bench run: the headline a script prints last, also appended to bench/records.jsonl.

A record is one JSON line: the script, its headline figure, value and unit, the run's other figures (`details`),
its arguments, the host (CPU model, usable cores, the vector-unit flags, an accelerator), the Keras backend and
versions, the commit and the date. `tools/results.py render` writes bench/RESULTS.md from the latest record per
(script, figure, host kind, backend); the history is the file itself and git. `BERTLIB_BENCH_RECORDS=FILE`
writes elsewhere (a lent machine's `$OUT`, a test's folder).

    from _record import headline          # bench/ is the script's folder, so this import works from anywhere
    headline("speedup_vs_keras_hub", 1.172, unit="x", digits=3, details={"mfu": 0.60})
    # prints `speedup_vs_keras_hub: 1.172` and appends the record
"""

import datetime
import importlib.metadata
import json
import os
import platform
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RECORDS = ROOT / "bench" / "records.jsonl"
# The flags that decide a CPU bench's speed, strongest first: the host kind names the first one present.
VECTOR_FLAGS = (("amx_bf16", "AMX-BF16"), ("avx512_bf16", "AVX-512 BF16"), ("avx512f", "AVX-512"),
                ("avx2", "AVX2"), ("asimd", "Arm NEON"))
BACKEND_PACKAGES = {"tensorflow": "tensorflow", "jax": "jax", "torch": "torch"}


def records_path():
    return Path(os.environ.get("BERTLIB_BENCH_RECORDS") or RECORDS)


def cpu_model(cpuinfo="/proc/cpuinfo"):
    try:
        text = Path(cpuinfo).read_text()
    except OSError:
        return platform.processor() or platform.machine()
    for line in text.splitlines():
        name, _, value = line.partition(":")
        if name.strip() in ("model name", "Model", "cpu model"):
            return value.strip()
    return platform.machine()


def accelerator():
    """The GPU's name from nvidia-smi (the first, with a count when several), else None."""
    if shutil.which("nvidia-smi") is None:
        return None
    try:
        names = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"], capture_output=True,
                               text=True, timeout=30, check=True).stdout.split("\n")
    except (OSError, subprocess.SubprocessError):
        return None
    names = [name.strip() for name in names if name.strip()]
    if not names:
        return None
    return names[0] if len(names) == 1 else f"{len(names)} x {names[0]}"


def host():
    """The machine as a record holds it; `kind` is what RESULTS groups by ("2-core AVX-512 BF16", "NVIDIA H200")."""
    from bertlib.train.host import cpu_flags, usable_cpus  # stdlib-only module: no Keras, no backend

    flags = cpu_flags()
    cores = usable_cpus()
    gpu = accelerator()
    vector = next((label for flag, label in VECTOR_FLAGS if flag in flags), platform.machine())
    return {"kind": gpu or f"{cores}-core {vector}", "cpu": cpu_model(), "cores": cores,
            "flags": sorted(flag for flag, _ in VECTOR_FLAGS if flag in flags), "accelerator": gpu}


def backend():
    """Keras' backend if Keras is loaded, else the one KERAS_BACKEND names (None: the script loads no Keras)."""
    if "keras" in sys.modules:
        return sys.modules["keras"].config.backend()
    return os.environ.get("KERAS_BACKEND")


def versions(backend_name):
    found = {}
    for package in ("keras", BACKEND_PACKAGES.get(backend_name)):
        if package:
            try:
                found[package] = importlib.metadata.version(package)
            except importlib.metadata.PackageNotFoundError:
                pass
    return found


def commit():
    """(commit, dirty): the checkout's HEAD and whether tracked files differ from it; (None, None) outside git."""
    try:
        head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short=12", "HEAD"], capture_output=True,
                              text=True, timeout=30, check=True).stdout.strip()
        status = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=no"],
                                capture_output=True, text=True, timeout=60, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return None, None
    return head, bool(status.strip())


def make_record(figure, value, *, unit, script=None, details=None, note=None, backend_name=None):
    """The record of one run, without writing it."""
    if not isinstance(value, (int, float)) or isinstance(value, bool) or value != value:
        raise ValueError(f"a bench record's value must be a finite number; got {value!r} for {figure}")
    script = script or Path(sys.argv[0]).name
    backend_name = backend() if backend_name is None else (backend_name or None)  # "": loads no Keras
    head, dirty = commit()
    return {"script": script, "figure": figure, "value": value, "unit": unit, "details": details or {},
            "args": sys.argv[1:], "host": host(), "backend": backend_name, "versions": versions(backend_name),
            "commit": head, "dirty": dirty,
            "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "imported": False, "note": note or ""}


def append(record, path=None):
    """Adds one line to the records file: a single write in append mode, so runs side by side never interleave."""
    path = Path(path or records_path())
    path.parent.mkdir(parents=True, exist_ok=True)
    line = json.dumps(record, ensure_ascii=False, sort_keys=True) + "\n"
    with open(path, "a", encoding="utf-8") as file:
        file.write(line)
    return path


def headline(figure, value, *, unit, digits=None, shown=None, details=None, note=None, backend_name=None):
    """Records the run and prints its headline, `figure: value`, as the script's last line.

    `digits` formats the value (`f"{value:.{digits}f}"`); `shown` replaces the printed text (`"121/121"`).
    """
    record = make_record(figure, value, unit=unit, details=details, note=note, backend_name=backend_name)
    append(record)
    text = shown if shown is not None else (f"{value:.{digits}f}" if digits is not None else f"{value}")
    print(f"{figure}: {text}", flush=True)
    return record
