"""bench/accelerator.sh, the one prepared run for a lent accelerator (issue 37, item 5), and its helper
bench/pretrain_mfu.py: the smoke mode end to end on the CPU, a failing part reported without stopping the rest,
and the table of published peaks."""

import hashlib
import importlib.util
import json
import os
import re
import subprocess
import sys
import textwrap

import nbformat
import numpy as np
import pytest

from tools.repo_paths import REPO_ROOT as ROOT

SCRIPT = ROOT / "bench" / "accelerator.sh"
PARTS = ("ch00-tensorflow", "ch00-jax", "step-time", "pretrain")


def load_helper():
    if str(ROOT / "bench") not in sys.path:  # as when run as a script: its folder first, for `_record`
        sys.path.insert(0, str(ROOT / "bench"))
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
    # Two variants, one line each; the levers of the second (steps per call, prefetching) keep the numbers.
    names = re.findall(r"^pretrain variant (.+): step_ms [0-9.]+ mfu [0-9.]+ tokens_per_second \d+$", summary, re.M)
    assert names == [variant["variant"] for variant in figures["variants"]] == [
        "base", "--steps-per-execution 2 --prefetch 2"]
    base, levers = figures["variants"]
    assert levers["levers"]["steps_per_execution"] == 2 and levers["final_loss"] == pytest.approx(base["final_loss"],
                                                                                                  rel=1e-5)
    # The stand-in chapter ran on each backend into the output folder, in fast mode, and printed that backend's
    # name; the stored chapter 00 is untouched.
    for backend in ("tensorflow", "jax"):
        executed = nbformat.read(tmp_path / backend / "smoke_chapter.ipynb", as_version=4)
        assert executed.cells[-1].outputs[0]["text"].strip() == backend
        record = executed.metadata["bertlib"]["run"]
        assert (record["backend"], record["mode"]) == (backend, "fast")
    assert hashlib.sha256(stored.read_bytes()).hexdigest() == before


def test_only_runs_the_parts_named_and_refuses_others(tmp_path):
    done = run_script(tmp_path, "--smoke", "--only", "pretrain", PYTHON="false")
    summary = (tmp_path / "summary.txt").read_text()
    assert done.returncode == 1 and re.findall(r"^part (\S+):", summary, re.M) == ["pretrain"], summary
    done = run_script(tmp_path, "--only", "pretrain,ch01")
    assert done.returncode == 2 and "unknown part 'ch01'" in done.stderr


def test_variants_are_the_options_they_change_on_one_backend():
    helper = load_helper()
    argv = ["--backend", "tensorflow", "--preset", "tiny", "--steps", "20", "--log-every", "10"]
    args = helper.parse_args([*argv, "--variants", "base; --steps-per-execution 5 --prefetch 2; --dropout 0"])
    variants = helper.variant_arguments(argv, args)
    assert [name for name, _ in variants] == ["base", "--steps-per-execution 5 --prefetch 2", "--dropout 0"]
    assert [(v.steps_per_execution, v.prefetch, v.dropout, v.preset) for _, v in variants] == [
        (1, 0, 0.1, "tiny"), (5, 2, 0.1, "tiny"), (1, 0, 0.0, "tiny")]
    assert helper._without_variants([*argv, "--variants", "x", "--json=a.json"]) == argv
    for bad in (["--steps-per-execution", "3"], ["--prefetch", "-1"], ["--random-bits", "rbg"]):  # rbg: JAX only
        with pytest.raises(SystemExit):
            helper.parse_args([*argv, *bad])
    with pytest.raises(SystemExit, match="'--backend jax' may not set"):
        helper.variant_arguments(argv, helper.parse_args([*argv, "--variants", "base; --backend jax"]))


def test_prefetched_batches_are_the_batches_in_order_and_errors_reach_the_loop():
    from bertlib.text import data
    from bertlib.text.masking import MaskedLMMasker

    helper = load_helper()
    tokenizer = data.default_tokenizer()
    rng = np.random.default_rng(0)
    count, length = 40, 16
    arrays = {"token_ids": rng.integers(999, 5000, (count, length)).astype(np.int32),
              "segment_ids": np.zeros((count, length), np.int32), "padding_mask": np.ones((count, length), np.int32),
              "next_sentence_labels": rng.integers(0, 2, count).astype(np.int32)}
    masker = MaskedLMMasker.from_tokenizer(tokenizer, max_predictions=3)
    plain = data.pretraining_batches(arrays, 8, masker, seed=1)
    ahead = helper.prefetched(data.pretraining_batches(arrays, 8, masker, seed=1), 2)
    for _ in range(12):  # past two epochs: new orders, new masks
        expected, got = next(plain), next(ahead)
        assert expected.keys() == got.keys() and all(np.array_equal(expected[key], got[key]) for key in expected)
    ahead.close()  # a loop that stops early stops the thread (it would otherwise wait on a full queue)

    def failing():
        yield 1
        raise RuntimeError("batch 2 could not be made")

    batches = helper.prefetched(failing(), 2)
    assert next(batches) == 1
    with pytest.raises(RuntimeError, match="batch 2 could not be made"):
        next(batches)
    assert list(helper.prefetched(iter(range(5)), 1)) == [0, 1, 2, 3, 4]


def test_rbg_random_bits_drop_at_the_rate_and_keep_keras_seeding():
    """On JAX (a subprocess), Keras' Dropout layers under `random_bits("rbg")`: the kept share is 1 - rate
    within 4 standard deviations, the kept values are scaled by 1 / (1 - rate), in float32 and mixed precision;
    two calls of a layer draw new masks, two layers of one seed the same ones, and the masks are not threefry's."""
    script = textwrap.dedent(f"""
        import importlib.util, json, sys
        sys.path.insert(0, {str(ROOT / "bench")!r})
        spec = importlib.util.spec_from_file_location("pretrain_mfu", {str(ROOT / "bench" / "pretrain_mfu.py")!r})
        helper = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(helper)
        import keras, numpy as np
        from keras.layers import Dropout  # the layer bertlib's model drops with

        x = np.ones((64, 4096), "float32")
        def masks(policy, bits):
            def draw():
                first, second = Dropout(0.1, seed=7, dtype=policy), Dropout(0.1, seed=7, dtype=policy)
                return [np.asarray(layer(x, training=True), "float32") for layer in (first, first, second)]
            if bits == "threefry":
                return draw()
            with helper.random_bits(bits):
                return draw()
        result = {{}}
        for policy in ("float32", "mixed_bfloat16"):
            threefry = masks(policy, "threefry")
            for bits in ("rbg", "unsafe_rbg"):
                one, two, same_seed = masks(policy, bits)
                result[policy + " " + bits] = {{
                    "kept": float((one != 0).mean()), "values": sorted(set(np.unique(one).round(4).tolist())),
                    "new_mask_each_call": bool((one != two).any()),
                    "same_seed_same_mask": bool((one == same_seed).all()),
                    "not_threefry": bool((one != threefry[0]).any())}}
        print(json.dumps({{"backend": keras.backend.backend(), **result}}))
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300, cwd=ROOT,
                          env={**os.environ, "KERAS_BACKEND": "jax", "JAX_PLATFORMS": "cpu"})
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result.pop("backend") == "jax" and len(result) == 4
    tolerance = 4 * (0.9 * 0.1 / (64 * 4096)) ** 0.5
    for name, figures in result.items():
        assert abs(figures["kept"] - 0.9) < tolerance, (name, figures)
        assert figures["values"] == [0.0, pytest.approx(1 / 0.9, rel=4e-3)], (name, figures)  # bfloat16: 1.1094
        assert figures["new_mask_each_call"] and figures["same_seed_same_mask"] and figures["not_threefry"], name
