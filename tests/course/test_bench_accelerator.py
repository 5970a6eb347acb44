"""bench/accelerator.sh, the one prepared run for a lent accelerator (issue 37, item 5), and its helper
bench/pretrain_mfu.py: the smoke mode end to end on the CPU, a failing part reported without stopping the rest,
and the table of published peaks."""

import hashlib
import importlib.util
import json
import os
import re
import subprocess

import nbformat
import pytest

from tools.repo_paths import REPO_ROOT as ROOT

SCRIPT = ROOT / "bench" / "accelerator.sh"
PARTS = ("ch00-tensorflow", "ch00-jax", "step-time", "pretrain")


def load_helper():
    spec = importlib.util.spec_from_file_location("pretrain_mfu", ROOT / "bench" / "pretrain_mfu.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run_script(out, *args, timeout=60, **env):
    environment = {**os.environ, "OUT": str(out), **env}
    return subprocess.run(["bash", str(SCRIPT), *args], capture_output=True, text=True, timeout=timeout,
                          env=environment, cwd=ROOT)


@pytest.mark.parametrize("name, tflops", [("NVIDIA H200", 989), ("NVIDIA H200 NVL", 835),
                                          ("NVIDIA H100 80GB HBM3", 989), ("NVIDIA H100 PCIe", 756),
                                          ("NVIDIA A100-SXM4-80GB", 312), ("NVIDIA L40S", 362), ("NVIDIA L4", 121),
                                          ("NVIDIA L40", None), ("NVIDIA A10", None), ("Tesla T4", None)])
def test_published_peak_by_gpu_name(name, tflops):
    # A name the table does not hold gets no figure (and the helper asks for --peak-tflops), never a neighbour's.
    assert load_helper().peak_for(name)[0] == tflops


def test_helper_refuses_steps_it_cannot_time():
    helper = load_helper()
    for argv in (["--steps", "10", "--log-every", "10"], ["--steps", "25", "--log-every", "10"],
                 ["--peak-tflops", "0"]):
        with pytest.raises(SystemExit):
            helper.parse_args(argv)


def test_unknown_argument_is_refused(tmp_path):
    done = run_script(tmp_path, "--fast")
    assert done.returncode == 2 and "unknown argument '--fast'" in done.stderr


def test_a_failing_part_is_reported_and_the_rest_still_run(tmp_path):
    # With a Python that imports nothing, the chapter's backends are not installed (said at once, not run) and
    # the two benches fail: each part gets its line and the run goes on to the end.
    done = run_script(tmp_path, "--smoke", PYTHON="false")
    summary = (tmp_path / "summary.txt").read_text()
    assert done.returncode == 1, done.stdout + done.stderr
    for backend in ("tensorflow", "jax"):
        assert re.search(rf"^part ch00-{backend}: NOT RUN \({backend} is not installed for false\) in 0.0 s$",
                         summary, re.M), summary
    for name in ("step-time", "pretrain"):
        assert re.search(rf"^part {name}: FAILED \(exit 1", summary, re.M), summary
    assert "some parts failed" in summary


@pytest.mark.slow
def test_smoke_runs_every_part_and_reports_mfu(tmp_path):
    stored = ROOT / "notebooks" / "00_big_picture.ipynb"
    before = hashlib.sha256(stored.read_bytes()).hexdigest()
    done = run_script(tmp_path, "--smoke", timeout=1300)
    summary = (tmp_path / "summary.txt").read_text()
    assert done.returncode == 0, summary + done.stderr[-3000:]
    for name in PARTS:
        assert re.search(rf"^part {name}: ok in [0-9.]+ s$", summary, re.M), summary
        assert (tmp_path / f"{name}.log").stat().st_size > 0
    mfu = float(re.search(r"^pretrain mfu: ([0-9.]+)$", summary, re.M).group(1))
    figures = json.loads((tmp_path / "pretrain.json").read_text())
    assert 0 < mfu <= 1 and mfu == pytest.approx(figures["mfu"], abs=1e-4)
    # The figures hang together: tokens/s from the step time, MFU from the step's FLOPs and the peak.
    assert figures["tokens_per_second"] == pytest.approx(8 * 64 / figures["step_seconds"])
    assert figures["mfu"] == pytest.approx(figures["step_tflop"] / figures["step_seconds"] / figures["peak_tflops"])
    assert figures["preset"] == "tiny" and figures["policy"] == "mixed_bfloat16" and figures["timed_steps"] == 4
    # The stand-in chapter ran on each backend into the output folder, in fast mode, and printed that backend's
    # name; the stored chapter 00 is untouched.
    for backend in ("tensorflow", "jax"):
        executed = nbformat.read(tmp_path / backend / "smoke_chapter.ipynb", as_version=4)
        assert executed.cells[-1].outputs[0]["text"].strip() == backend
        record = executed.metadata["bertlib"]["run"]
        assert (record["backend"], record["mode"]) == (backend, "fast")
    assert hashlib.sha256(stored.read_bytes()).hexdigest() == before
