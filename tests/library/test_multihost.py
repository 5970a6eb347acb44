"""Several processes, one run (JAX): two processes on localhost pretrain as one process with two devices, share one
checkpoint folder, stop together when one dies, resume together, and refuse bad set-ups in one line each.

The two processes have one CPU device each and exchange gradients through gloo, as two hosts of a pod exchange them
over the network; the reference is one process with two simulated devices (XLA_FLAGS), the same global mesh.
"""

import json
import os
import socket
import subprocess
import sys
import threading
import time

import pytest

from bertlib.io import files
from bertlib.train import multihost
from tests.library.test_distribute import _tiny_corpus  # the same tiny corpus and vocabulary
from tools.repo_paths import REPO_ROOT as REPO

# ---------------------------------------------------------------------------------------------- the parts, alone


def test_keras_variables_are_read_and_bad_ones_named():
    read = multihost.read_variables
    assert read({}) == (None, None, None)
    assert read({"KERAS_DISTRIBUTION_JOB_ADDRESSES": "10.0.0.1:1234,10.0.0.2:1234",
                 "KERAS_DISTRIBUTION_NUM_PROCESSES": "2", "KERAS_DISTRIBUTION_PROCESS_ID": "1"}) == ("10.0.0.1:1234", 2, 1)
    assert read({"KERAS_DISTRIBUTION_NUM_PROCESSES": "4"}) == (None, 4, None)  # a TPU pod: JAX finds the rest
    bad = [({"KERAS_DISTRIBUTION_NUM_PROCESSES": "2", "KERAS_DISTRIBUTION_PROCESS_ID": "2"},
            r"PROCESS_ID=2 is out of range: the run has KERAS_DISTRIBUTION_NUM_PROCESSES=2 processes, numbered 0 to 1"),
           ({"KERAS_DISTRIBUTION_NUM_PROCESSES": "two"}, r"NUM_PROCESSES='two' is not a whole number"),
           ({"KERAS_DISTRIBUTION_JOB_ADDRESSES": "a:1,b:1,c:1", "KERAS_DISTRIBUTION_NUM_PROCESSES": "2",
             "KERAS_DISTRIBUTION_PROCESS_ID": "0"}, "lists 3 addresses but KERAS_DISTRIBUTION_NUM_PROCESSES is 2"),
           ({"KERAS_DISTRIBUTION_JOB_ADDRESSES": "10.0.0.1", "KERAS_DISTRIBUTION_NUM_PROCESSES": "2",
             "KERAS_DISTRIBUTION_PROCESS_ID": "0"}, "'10.0.0.1' is not host:port"),
           ({"KERAS_DISTRIBUTION_JOB_ADDRESSES": "10.0.0.1:1234"}, "NUM_PROCESSES and KERAS_DISTRIBUTION_PROCESS_ID "
                                                                  "must be too")]
    for environ, message in bad:
        with pytest.raises(ValueError, match=message):
            read(environ)


class FakeStore:
    """The coordinator's key-value store, in memory, for `Processes` objects in threads of this process."""

    def __init__(self):
        self.values, self.changed = {}, threading.Condition()

    def key_value_set(self, key, value, allow_overwrite=False):
        with self.changed:
            assert allow_overwrite or key not in self.values, key
            self.values[key] = value
            self.changed.notify_all()

    def blocking_key_value_get(self, key, timeout_ms):
        with self.changed:
            assert self.changed.wait_for(lambda: key in self.values, timeout_ms / 1000), key
            return self.values[key]


def _in_two_processes(call):
    """`call(processes)` for process 0 and 1 of a fake run, side by side: what each returned or raised."""
    store, outcomes = FakeStore(), {}

    def one(index):
        try:
            outcomes[index] = call(multihost.Processes(2, index, store, "127.0.0.1:1"))
        except Exception as error:  # noqa: BLE001 (the test compares what each process raised)
            outcomes[index] = error

    threads = [threading.Thread(target=one, args=(index,)) for index in (0, 1)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    return outcomes[0], outcomes[1]


def test_processes_refuse_together_naming_the_one_that_differs():
    assert _in_two_processes(lambda processes: processes.share("x", processes.index * 10)) == ([0, 10], [0, 10])
    first, second = _in_two_processes(lambda processes: processes.check_same(
        "settings or data", {"steps": 12, "seed": 1 + processes.index}))
    assert type(first) is type(second) is multihost.RunRefused and str(first) == str(second)
    assert str(first).startswith("The processes were started with different settings or data: seed is 1 in process 0 "
                                 "and 2 in process 1 of 2.")
    first, second = _in_two_processes(lambda processes: processes.agree(
        "checkpoint folder", "--checkpoint-dir /data cannot be written" if processes.index else None))
    assert str(first) == str(second) == ("--checkpoint-dir /data cannot be written (process 1 of 2; every process "
                                         "stops)")
    assert _in_two_processes(lambda processes: processes.agree("checkpoint folder", None)) == (None, None)


def test_corpus_identity_tells_two_copies_of_a_corpus_apart(tmp_path):
    corpus, _ = _tiny_corpus(tmp_path)
    before = multihost.corpus_identity([str(corpus), "python-docs"])
    assert before == multihost.corpus_identity([str(corpus), "python-docs"])
    corpus.write_text(corpus.read_text().replace("tokens", "tokenz"))  # same size, other text
    assert multihost.corpus_identity([str(corpus)])[str(corpus)] != before[str(corpus)]
    (tmp_path / "shards").mkdir()
    (tmp_path / "shards" / "a-00000-of-00001.tfrecord").write_bytes(b"1234")
    assert multihost.corpus_identity([f"tfrecords:{tmp_path / 'shards'}"]) == {
        str(tmp_path / "shards"): [("a-00000-of-00001.tfrecord", 4)]}


def test_the_lock_names_the_run_it_is_held_for_and_refuses_another(tmp_path):
    with files.exclusive_lock(tmp_path, "--checkpoint-dir", "bertlib pretrain", run="run h-1-2 of 2 processes"):
        assert files.lock_holder(tmp_path).endswith(", for run h-1-2 of 2 processes")
        with pytest.raises(files.FolderInUse, match="in use by another run .*run h-1-2 of 2 processes"):
            with files.exclusive_lock(tmp_path, "--checkpoint-dir", "bertlib pretrain"):
                pass
    assert files.lock_holder(tmp_path / "nowhere") == ""


def test_other_backends_refuse_the_variables(monkeypatch):
    monkeypatch.setenv("KERAS_DISTRIBUTION_NUM_PROCESSES", "2")
    with pytest.raises(RuntimeError, match="runs on the JAX backend .*not tensorflow.*keras-team/keras#20585"):
        multihost.connect("bertlib pretrain")  # this test process runs TensorFlow
    from bertlib.finetune import finetuning

    with pytest.raises(RuntimeError, match="runs on the JAX backend .*not tensorflow"):
        finetuning.finetune("sst2", None, "tiny", epochs=1)


# --------------------------------------------------------------------------------------- two real processes


def _free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _environment(tmp_path, **variables):
    environment = dict(os.environ, KERAS_BACKEND="jax", TF_CPP_MIN_LOG_LEVEL="3", PYTHONPATH=str(REPO),
                       JAX_COMPILATION_CACHE_DIR=str(tmp_path / "jax-cache"),  # a rerun loads its compiled step
                       JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS="0")
    for name in (*multihost.VARIABLES, "XLA_FLAGS"):
        environment.pop(name, None)
    environment.update({name: str(value) for name, value in variables.items()})
    return environment


def _pretrain_args(tmp_path, folder, steps=40):
    corpus, vocab = _tiny_corpus(tmp_path)
    return ["pretrain", "--corpus", str(corpus), "--vocab", str(vocab), "--steps", str(steps), "--batch-size", "16",
            "--seq-length", "32", "--max-predictions", "5", "--learning-rate", "1e-3", "--warmup-steps", "3",
            "--log-every", "4", "--checkpoint-every", "4", "--seed", "1", "--checkpoint-dir", str(folder)]


# `bertlib ARGS` as `python -m bertlib.cli ARGS` runs it, recording the rows each masking call builds and each
# `train_on_batch` gets (the part of every global batch this process reads, masks and feeds) in
# $COUNT_ROWS_TO-<process id>.json when the process ends.
COUNTING_ROWS = """
import atexit, json, os, sys
import keras
from bertlib.text import masking
from bertlib.cli import main
rows, mask_numpy, train_on_batch = [], masking.MaskedLMMasker.mask_numpy, keras.Model.train_on_batch
masking.MaskedLMMasker.mask_numpy = lambda self, token_ids, rng: rows.append(len(token_ids)) or mask_numpy(
    self, token_ids, rng)
keras.Model.train_on_batch = lambda self, x, *args, **kwargs: rows.append(len(x["token_ids"])) or train_on_batch(
    self, x, *args, **kwargs)
name = os.environ["COUNT_ROWS_TO"] + "-" + os.environ.get("KERAS_DISTRIBUTION_PROCESS_ID", "one") + ".json"
atexit.register(lambda: open(name, "w").write(json.dumps(rows)))
sys.exit(main())
"""


def _start_two(tmp_path, args, name, extra=((), ()), count_rows=False):
    """Start process 0 and 1 of a run on localhost; `extra[i]` is added to process i's arguments. Their output goes
    to files (tmp_path / f"{name}-{i}.out" and .err); with `count_rows`, each records its masking calls' rows
    (`COUNTING_ROWS`, in tmp_path / f"{name}-rows-{i}.json")."""
    port = _free_port()
    processes = []
    command = ["-c", COUNTING_ROWS] if count_rows else ["-m", "bertlib.cli"]
    for index in (0, 1):
        environment = _environment(tmp_path, KERAS_DISTRIBUTION_JOB_ADDRESSES=f"127.0.0.1:{port}",
                                   KERAS_DISTRIBUTION_NUM_PROCESSES=2, KERAS_DISTRIBUTION_PROCESS_ID=index,
                                   COUNT_ROWS_TO=tmp_path / f"{name}-rows")
        with open(tmp_path / f"{name}-{index}.out", "w") as out, open(tmp_path / f"{name}-{index}.err", "w") as err:
            processes.append(subprocess.Popen([sys.executable, *command, *args, *extra[index]], stdout=out,
                                              stderr=err, env=environment, cwd=REPO))
    return processes


def _finish(tmp_path, processes, name, timeout=400):
    """Wait for the processes; `[(return code, stdout, stderr lines of bertlib), ...]`."""
    results = []
    for index, process in enumerate(processes):
        try:
            process.wait(timeout)
        finally:
            if process.poll() is None:
                process.kill()
        out = (tmp_path / f"{name}-{index}.out").read_text()
        err = [line for line in (tmp_path / f"{name}-{index}.err").read_text().splitlines() if "bertlib" in line]
        results.append((process.returncode, out, err))
    return results


def _summary(out):
    return json.loads(out.strip().splitlines()[-1])


@pytest.mark.slow
def test_two_processes_pretrain_as_one_process_with_two_devices_stop_together_and_resume(tmp_path):
    """The issue's check (#58): the loss equals one process with two devices, one checkpoint series in the shared
    folder, a killed process stops the other within a minute with one line naming it, and a rerun resumes in both
    and ends where an unbroken run ends. Dropout stays on (0.1): the masks are drawn for the global batch. Each of
    the two processes builds and masks only its half of every global batch of 16, the one process all 16 rows."""
    pytest.importorskip("jax")
    reference = subprocess.run(
        [sys.executable, "-c", COUNTING_ROWS, *_pretrain_args(tmp_path, tmp_path / "one")], capture_output=True,
        text=True, cwd=REPO, timeout=400, env=_environment(
            tmp_path, XLA_FLAGS="--xla_force_host_platform_device_count=2", COUNT_ROWS_TO=tmp_path / "one-rows"))
    assert reference.returncode == 0, reference.stderr[-3000:]
    one = _summary(reference.stdout)
    assert (one["replicas"], one["processes"]) == (2, 1)
    one_rows = json.loads((tmp_path / "one-rows-one.json").read_text())
    assert len(one_rows) >= 40 and set(one_rows) == {16}, one_rows  # a masking call per batch (and prefetched ones)

    folder = tmp_path / "shared"
    args = _pretrain_args(tmp_path, folder)
    running = _start_two(tmp_path, args, "killed")
    deadline = time.monotonic() + 400
    while not (folder / "latest.json").exists() and time.monotonic() < deadline and running[0].poll() is None:
        time.sleep(0.1)
    assert running[0].poll() is None and running[1].poll() is None, "the run ended before it could be killed"
    killed_at = time.monotonic()
    running[1].kill()
    running[0].wait(120)
    stopped_after = time.monotonic() - killed_at
    (code, _, err), _ = _finish(tmp_path, running, "killed")
    print(f"process 0 stopped {stopped_after:.1f} s after process 1 was killed")
    assert stopped_after < 60 and code == 1
    # named by the watchdog (silent for 15 s) or, sooner, after the step that waited for it failed
    assert err[-1].startswith("bertlib pretrain: process 1 of 2 stopped (no heartbeat "), err
    assert "Traceback" not in (tmp_path / "killed-0.err").read_text()

    with files.exclusive_lock(folder, "--checkpoint-dir", "a test"):  # a second run is refused, in both processes
        for code, _, err in _finish(tmp_path, _start_two(tmp_path, args, "refused"), "refused"):
            assert code == 1 and "is in use by another run (a test, process" in err[-1], err
            assert err[-1].endswith("(process 0 of 2; every process stops)")

    resumed = [_summary(out) for _, out, _ in _finish(tmp_path, _start_two(tmp_path, args, "resumed", count_rows=True),
                                                      "resumed")]
    for index, summary in enumerate(resumed):
        rows = json.loads((tmp_path / f"resumed-rows-{index}.json").read_text())
        print(f"process {index} masked {sum(rows)} rows in {len(rows)} batches after resuming at step "
              f"{summary['resumed_from']}; the one process {sum(one_rows)} in {len(one_rows)}")
        assert len(rows) >= 40 - summary["resumed_from"] and set(rows) == {8}, rows  # its half, never the batch
    for summary in resumed:
        assert summary["resumed_from"] >= 4 and summary["step"] == 40 and summary["processes"] == 2
        for key in ("loss", "mlm_loss", "nsp_loss"):
            assert summary[key] == pytest.approx(one[key], rel=1e-4), key
    assert resumed[0]["loss"] == resumed[1]["loss"]
    assert sorted(path.name for path in folder.glob("ckpt-*.npz")) == ["ckpt-00000036.npz", "ckpt-00000040.npz"]
    assert json.loads((folder / "latest.json").read_text())["step"] == 40
    assert (folder / "backbone.keras").is_file() and (folder / "pretrainer.keras").is_file()
    assert files.lock_holder(folder).endswith("of 2 processes")


@pytest.mark.slow
def test_two_processes_stream_each_its_share_of_the_shards_as_one_process_reads_them(tmp_path):
    """Streamed from TFRecords, each of two processes reads its own reader's shards (one reader per process, the
    default), and the run's numbers are those of one process with two devices reading with two readers
    (`--stream-readers 2`): the readers, not the processes, decide the batches."""
    pytest.importorskip("jax")
    from bertlib.text import corpora, data
    from bertlib.text.tokenizer import WordPieceTokenizer

    args = _pretrain_args(tmp_path, tmp_path / "unused", steps=12)
    corpus, vocab = args[args.index("--corpus") + 1], args[args.index("--vocab") + 1]
    arrays = data.build_pretraining_arrays(corpora.text_files([corpus]), WordPieceTokenizer.from_vocab_file(vocab),
                                           max_seq_length=32, seed=1)
    data.write_tfrecords(arrays, tmp_path / "shards", num_shards=4)
    args[args.index("--corpus") + 1] = f"tfrecords:{tmp_path / 'shards'}"
    args += ["--stream"]
    folder = args.index("--checkpoint-dir") + 1
    reference = subprocess.run(
        [sys.executable, "-m", "bertlib.cli", *args[:folder], str(tmp_path / "one"), *args[folder + 1:],
         "--stream-readers", "2"], capture_output=True, text=True, cwd=REPO, timeout=400,
        env=_environment(tmp_path, XLA_FLAGS="--xla_force_host_platform_device_count=2"))
    assert reference.returncode == 0, reference.stderr[-3000:]
    one = _summary(reference.stdout)
    args[folder] = str(tmp_path / "two")
    results = _finish(tmp_path, _start_two(tmp_path, args, "stream"), "stream")
    for code, out, err in results:
        assert code == 0, err
        two = _summary(out)
        assert two["processes"] == 2 and two["step"] == 12
        for key in ("loss", "mlm_loss", "nsp_loss"):
            assert two[key] == pytest.approx(one[key], rel=1e-4), key
    assert json.loads((tmp_path / "two" / "latest.json").read_text())["settings"]["stream_readers"] == 2


@pytest.mark.slow
def test_bad_set_ups_are_told_in_one_line_before_any_training(tmp_path):
    """A coordinator nobody runs, and two processes started with different settings: each process ends with one
    line naming the problem, before any data is built or step compiled."""
    pytest.importorskip("jax")
    args = _pretrain_args(tmp_path, tmp_path / "run", steps=8)
    started = time.monotonic()
    lonely = subprocess.run(
        [sys.executable, "-m", "bertlib.cli", *args], capture_output=True, text=True, cwd=REPO, timeout=120,
        env=_environment(tmp_path, KERAS_DISTRIBUTION_JOB_ADDRESSES=f"127.0.0.1:{_free_port()}",
                         KERAS_DISTRIBUTION_NUM_PROCESSES=2, KERAS_DISTRIBUTION_PROCESS_ID=1,
                         BERTLIB_CONNECT_TIMEOUT=3))
    assert lonely.returncode == 1 and time.monotonic() - started < 60
    assert lonely.stderr.strip().splitlines()[-1].startswith(
        "bertlib pretrain: process 1 of 2 could not reach the coordinator 127.0.0.1:"), lonely.stderr[-2000:]

    results = _finish(tmp_path, _start_two(tmp_path, args, "settings", extra=((), ("--seed", "2"))), "settings")
    for code, _, err in results:
        assert code == 1 and err[-1] == ("bertlib pretrain: The processes were started with different settings or "
                                         "data: seed is 1 in process 0 and 2 in process 1 of 2. Start every process "
                                         "with the same command, on the same data."), err
    assert not list((tmp_path / "run").glob("ckpt-*"))


def test_each_process_keeps_the_rows_its_devices_hold_of_every_global_batch():
    """`local_rows` for process 1 of 2 whose device holds rows 8-15 of a batch of 16 (what JAX's data layout says):
    the same rows out of a tf.data dataset and out of numpy batches, every column alike."""
    import numpy as np
    import tensorflow as tf

    from bertlib.train import distribute

    class Layout:
        backend_layout = type("Sharding", (), {"addressable_devices_indices_map": lambda self, shape: {
            "cpu:1": (slice(8, 16),)}})()

    class TwoProcesses:
        def get_data_layout(self, shape):
            assert shape == (16,)
            return Layout()

    placement = distribute.Placement("jax-data-parallel", 2, "jax", ["CPU", "CPU"], distribution=TwoProcesses(),
                                     processes=2, process_index=1)
    batches = [({"token_ids": np.arange(16 * 3).reshape(16, 3) + 100 * step}, np.arange(16) + 100 * step)
               for step in range(2)]
    from_numpy = list(distribute.local_rows(iter(batches), placement, 16))
    dataset = tf.data.Dataset.from_generator(lambda: iter(batches), output_signature=(
        {"token_ids": tf.TensorSpec((16, 3), tf.int64)}, tf.TensorSpec((16,), tf.int64)))
    from_dataset = list(distribute.local_rows(dataset, placement, 16).as_numpy_iterator())
    for step, ((features, labels), (data_features, data_labels)) in enumerate(zip(from_numpy, from_dataset)):
        np.testing.assert_array_equal(features["token_ids"], batches[step][0]["token_ids"][8:])
        np.testing.assert_array_equal(labels, np.arange(8, 16) + 100 * step)
        np.testing.assert_array_equal(data_features["token_ids"], features["token_ids"])
        np.testing.assert_array_equal(data_labels, labels)
    one = distribute.Placement("one-device", 1, "jax", ["CPU"])
    assert distribute.local_rows(dataset, one, 16) is dataset


@pytest.mark.slow
def test_two_processes_finetune_as_one_process_with_two_devices(tmp_path):
    """`bertlib finetune` over two processes (#58): each trains on its half of every batch, and the training loss
    and dev accuracy equal one process with two devices; process 0 alone writes the outputs, and every process
    refuses a folder with an earlier run's outputs before any training, in one line."""
    pytest.importorskip("jax")
    from tests.library.test_saved_files import _glue_folder

    glue = _glue_folder(tmp_path / "glue")  # SST-2: 32 training sentences, 8 dev

    def args(folder):
        return ["finetune", "--task", "sst2", "--data-dir", str(glue), "--init", "tiny", "--epochs", "2",
                "--batch-size", "8", "--learning-rate", "1e-3", "--max-seq-length", "16", "--seed", "3",
                "--output-dir", str(folder)]

    reference = subprocess.run(
        [sys.executable, "-c", COUNTING_ROWS, *args(tmp_path / "one"), "--strategy", "auto"], capture_output=True,
        text=True, cwd=REPO, timeout=300, env=_environment(
            tmp_path, XLA_FLAGS="--xla_force_host_platform_device_count=2", COUNT_ROWS_TO=tmp_path / "one-rows"))
    assert reference.returncode == 0, reference.stderr[-3000:]
    one = _summary(reference.stdout)
    assert json.loads((tmp_path / "one-rows-one.json").read_text()) == [8] * 8  # 2 epochs of 4 batches of 8

    results = _finish(tmp_path, _start_two(tmp_path, args(tmp_path / "two"), "finetune", count_rows=True), "finetune",
                      timeout=300)
    for index, (code, out, err) in enumerate(results):
        assert code == 0, err
        two = _summary(out)
        assert two["train_examples"] == one["train_examples"] == 32
        assert two["last_epoch_train_loss"] == pytest.approx(one["last_epoch_train_loss"], rel=1e-4)
        assert two["accuracy"] == one["accuracy"]
        assert json.loads((tmp_path / f"finetune-rows-{index}.json").read_text()) == [4] * 8  # its half of each
    written = json.loads((tmp_path / "two" / "metrics.json").read_text())
    assert written["accuracy"] == one["accuracy"] and (tmp_path / "two" / "model.keras").is_file()
    assert ((tmp_path / "two" / "dev_predictions.tsv").read_text()
            == (tmp_path / "one" / "dev_predictions.tsv").read_text())  # the same 8 predictions
    assert sorted(path.name for path in (tmp_path / "two").iterdir()) == sorted(
        path.name for path in (tmp_path / "one").iterdir())  # written once, by process 0

    for code, _, err in _finish(tmp_path, _start_two(tmp_path, args(tmp_path / "two"), "again"), "again", timeout=120):
        assert code == 2 and "--output-dir" in err[-1] and err[-1].endswith("(process 0 of 2; every process stops)")
