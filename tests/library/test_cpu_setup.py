"""CPU set-up: thread pools sized to the cores the process may use, and bfloat16 where the CPU has it.

Speed is not asserted here (bench/threads.py and bench/step_time.py are the record); these tests check the
decisions against mocked hardware: affinity masks, cgroup quotas, CPU flags and probe results.
"""

import os

import keras
import numpy as np
import pytest

from bertlib.train import host, precision, pretraining


def write_cgroup(tmp_path, proc_line, files):
    """A fake /proc/self/cgroup holding `proc_line`, and cgroup files {relative path: text} under a root."""
    root = tmp_path / "sys_fs_cgroup"
    for relative, text in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    proc = tmp_path / "proc_self_cgroup"
    proc.write_text(proc_line + "\n")
    return str(proc), str(root)


def test_cgroup_v2_quota_is_read_in_cores(tmp_path):
    proc, root = write_cgroup(tmp_path, "0::/user.slice/job", {"user.slice/job/cpu.max": "150000 100000\n"})
    assert host.cgroup_cpu_limit(proc, root) == 1.5


def test_cgroup_v2_without_a_limit(tmp_path):
    proc, root = write_cgroup(tmp_path, "0::/job", {"job/cpu.max": "max 100000\n", "cpu.max": "max 100000\n"})
    assert host.cgroup_cpu_limit(proc, root) is None


def test_cgroup_limit_of_a_parent_applies(tmp_path):
    # the process's own cgroup has no limit, the slice above it allows 2 cores
    proc, root = write_cgroup(tmp_path, "0::/slice/job", {"slice/job/cpu.max": "max 100000\n",
                                                          "slice/cpu.max": "200000 100000\n"})
    assert host.cgroup_cpu_limit(proc, root) == 2.0


def test_cgroup_v1_cfs_quota(tmp_path):
    proc, root = write_cgroup(tmp_path, "4:cpu,cpuacct:/docker/abc\n3:memory:/docker/abc", {
        "cpu,cpuacct/docker/abc/cpu.cfs_quota_us": "300000\n",
        "cpu,cpuacct/docker/abc/cpu.cfs_period_us": "100000\n"})
    assert host.cgroup_cpu_limit(proc, root) == 3.0
    proc, root = write_cgroup(tmp_path / "unlimited", "4:cpu:/", {"cpu/cpu.cfs_quota_us": "-1\n",
                                                                 "cpu/cpu.cfs_period_us": "100000\n"})
    assert host.cgroup_cpu_limit(proc, root) is None


@pytest.mark.parametrize("affinity, quota, expected", [
    (range(8), None, 8),        # nothing limits: every CPU of the mask
    (range(8), 1.5, 1),         # a container's --cpus=1.5 on an 8-core host: one full core
    (range(8), 0.5, 1),         # at least one thread
    ({2, 5}, 4.0, 2),           # taskset to 2 cores under a 4-core quota
])
def test_usable_cpus_follow_affinity_and_quota(monkeypatch, affinity, quota, expected):
    monkeypatch.setattr(os, "cpu_count", lambda: 64)  # the host's count must not leak in
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(affinity))
    monkeypatch.setattr(host, "cgroup_cpu_limit", lambda: quota)
    assert host.usable_cpus() == expected


def test_configure_cpu_sets_the_pools_from_usable_cpus(monkeypatch):
    monkeypatch.setattr(host, "_CONFIGURED", {})
    monkeypatch.setattr(host, "usable_cpus", lambda: 3)
    for name in ("TF_NUM_INTRAOP_THREADS", "TF_NUM_INTEROP_THREADS", "OMP_NUM_THREADS"):
        monkeypatch.delenv(name, raising=False)
    result = host.configure_cpu()
    assert (os.environ["TF_NUM_INTRAOP_THREADS"], os.environ["OMP_NUM_THREADS"],
            os.environ["TF_NUM_INTEROP_THREADS"]) == ("3", "3", "3")
    assert (result["intra_op"], result["inter_op"]) == (3, 3)


def test_configure_cpu_keeps_what_the_user_set(monkeypatch):
    monkeypatch.setattr(host, "_CONFIGURED", {})
    monkeypatch.setattr(host, "usable_cpus", lambda: 3)
    monkeypatch.setenv("TF_NUM_INTRAOP_THREADS", "5")
    monkeypatch.setenv("TF_NUM_INTEROP_THREADS", "2")
    result = host.configure_cpu()
    assert (result["intra_op"], result["inter_op"]) == (5, 2)


def test_cpu_flags_are_read_from_cpuinfo(tmp_path):
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("processor\t: 0\nmodel name\t: Some CPU\nflags\t\t: fpu avx2 avx512f avx512_bf16 amx_bf16\n")
    assert {"avx512_bf16", "amx_bf16", "avx2"} <= host.cpu_flags(str(cpuinfo))
    assert host.cpu_flags(str(tmp_path / "missing")) == set()


@pytest.fixture
def on_cpu(monkeypatch):
    import tensorflow as tf

    if keras.backend.backend() != "tensorflow" or tf.config.list_logical_devices("GPU"):
        pytest.skip("checks the CPU branch of the TensorFlow backend")


def test_auto_precision_on_cpus(on_cpu):
    def probe_never_called():
        raise AssertionError("no bfloat16 units: the probe must not run")

    assert precision.precision_for(flags={"avx2", "fma"}, probe=probe_never_called) == "float32"
    assert precision.precision_for(flags={"avx512f", "avx512_bf16"}, probe=lambda: 1.8) == "mixed_bfloat16"
    assert precision.precision_for(flags={"amx_bf16", "amx_tile"}, probe=lambda: 3.5) == "mixed_bfloat16"
    # units present but bfloat16 not faster here (e.g. a hypervisor that hides them): stay in float32
    assert precision.precision_for(flags={"avx512_bf16"}, probe=lambda: 1.05) == "float32"
    assert precision.precision_for(flags={"avx512_bf16"}, probe=lambda: 0.6) == "float32"


def test_bfloat16_probe_measures_the_float32_to_bfloat16_time_ratio(monkeypatch):
    """The probe's matmuls are made to take known times: float32 60 ms, bfloat16 20 ms, so the ratio is 3.
    The warm-up round is made fast in bfloat16 (1 ms) and one float32 round slow (150 ms): the probe must drop
    the warm-up and keep each precision's fastest round, or the ratio comes out far from 3."""
    import time

    real_matmul = keras.ops.matmul
    calls = {"float32": 0, "bfloat16": 0}

    def timed_matmul(a, b):
        dtype = keras.backend.standardize_dtype(a.dtype)
        calls[dtype] += 1
        result = real_matmul(a, b)
        if calls[dtype] == 1:  # the warm-up round
            time.sleep(0.001 if dtype == "bfloat16" else 0.06)
        elif dtype == "float32" and calls[dtype] == 3:  # a busy moment on a shared machine
            time.sleep(0.15)
        else:
            time.sleep(0.06 if dtype == "float32" else 0.02)
        return result

    monkeypatch.setattr(keras.ops, "matmul", timed_matmul)
    speedup = host.bfloat16_matmul_speedup(size=8, rounds=5)
    assert calls == {"float32": 6, "bfloat16": 6}  # one warm-up round, then five
    assert 2.5 < speedup < 3.2, speedup  # 60 / 20, give or take the sleeps' overshoot on a loaded machine


@pytest.mark.slow
def test_bfloat16_pretraining_matches_float32():
    """150 steps of the tiny preset in mixed bfloat16 reach float32's masked-LM loss within 2% (same seed,
    same data). About 2 minutes on 2 idle cores without native bfloat16 (Zen 3: 57 s and 73 s, losses 6.3873 and
    6.3879; at 300 steps 6.1513 for both, in twice the time: CI's budget holds the shorter run)."""
    losses = {}
    for policy in ("float32", "mixed_bfloat16"):
        result = pretraining.pretrain(preset="tiny", steps=150, batch_size=16, seq_length=64, log_every=50,
                                   checkpoint_every=100, warmup_steps=15, next_sentence=False,
                                   precision=policy, verbose=False)
        assert result["policy"] == policy
        losses[policy] = result["mlm_loss"]
    start = np.log(30522)  # a uniform guess over the vocabulary: both runs must have learned well below it
    assert losses["float32"] < 0.7 * start and np.isfinite(losses["mixed_bfloat16"])
    assert abs(losses["mixed_bfloat16"] - losses["float32"]) <= 0.02 * losses["float32"], losses


def test_training_pipelines_switch_off_the_autotuner_on_cpus(on_cpu):
    # With tf.data's autotuner on, a tiny model's fit on 2 cores alternated between both cores and one
    # (bench/threads.py); bertlib's pipelines carry options that switch it off where there is no accelerator.
    from bertlib.text import data
    from bertlib.text.masking import MaskedLMMasker

    assert data.input_options().autotune.enabled is False
    rng = np.random.default_rng(0)
    arrays = {"token_ids": rng.integers(5, 100, (8, 16)).astype("int32"),
              "segment_ids": np.zeros((8, 16), "int32"), "padding_mask": np.ones((8, 16), "int32"),
              "next_sentence_labels": np.zeros(8, "int32")}
    masker = MaskedLMMasker(100, 4, [0, 1, 2, 3], max_predictions=3)
    dataset = data.pretraining_dataset(arrays, 4, masker, seed=0)
    assert dataset.options().autotune.enabled is False
    batch = next(iter(dataset.map(lambda features: features)))  # options survive later transformations
    assert batch["token_ids"].shape == (4, 16)
