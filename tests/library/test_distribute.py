"""Strategies: the TPU paths with a mocked resolver, batch splitting, and 2 replicas == 1 device (A.2)."""

import json
import math
import os
import subprocess
import sys
import textwrap

import pytest
import tensorflow as tf

from bertlib.train import distribute, host
from tools.repo_paths import REPO_ROOT as REPO

CORPUS_WORDS = ("tokens attend to the left and right context so masked words are predicted from both sides "
                "of the sentence while pairs of sentences teach the model whether one follows the other")


class FakeResolver:
    def __init__(self, tpu=None, **kwargs):
        if tpu == "missing-tpu":
            raise ValueError("Could not lookup TPU metadata")
        self.tpu = tpu


class TPUStrategy:  # the name is what `distribute.is_tpu` looks at
    def __init__(self, resolver):
        self.resolver = resolver
        self.num_replicas_in_sync = 8


@pytest.fixture
def mocked_tpu(monkeypatch):
    """Replace the TPU machinery of TensorFlow and record what `get_strategy` asks of it."""
    calls = []
    monkeypatch.setattr(tf.distribute.cluster_resolver, "TPUClusterResolver", FakeResolver)
    monkeypatch.setattr(tf.config, "experimental_connect_to_cluster",
                        lambda resolver: calls.append(("connect", resolver.tpu)))
    monkeypatch.setattr(tf.tpu.experimental, "initialize_tpu_system",
                        lambda resolver: calls.append(("initialize", resolver.tpu)))
    monkeypatch.setattr(tf.distribute, "TPUStrategy", TPUStrategy)
    for name in ("COLAB_TPU_ADDR", "TPU_NAME", "TF_CONFIG"):
        monkeypatch.delenv(name, raising=False)
    return calls


def test_colab_tpu_is_found_from_its_environment_variable(mocked_tpu, monkeypatch):
    monkeypatch.setenv("COLAB_TPU_ADDR", "10.0.0.2:8470")
    strategy = distribute.get_strategy("auto")
    assert isinstance(strategy, TPUStrategy) and strategy.resolver.tpu == "grpc://10.0.0.2:8470"
    assert mocked_tpu == [("connect", "grpc://10.0.0.2:8470"), ("initialize", "grpc://10.0.0.2:8470")]
    assert distribute.is_tpu(strategy)
    assert distribute.per_replica_batch_size(256, strategy) == 32  # the paper's 256 over 8 cores


def test_tpu_vm_is_local_and_needs_no_connection(mocked_tpu):
    strategy = distribute.get_strategy("tpu", tpu="local")
    assert strategy.resolver.tpu == "local"
    assert mocked_tpu == [("initialize", "local")]


def test_pod_by_name_and_tpu_name_variable(mocked_tpu, monkeypatch):
    assert distribute.get_strategy("tpu", tpu="bert-pod-v3-32").resolver.tpu == "bert-pod-v3-32"
    monkeypatch.setenv("TPU_NAME", "my-tpu")
    assert distribute.get_strategy("tpu").resolver.tpu == "my-tpu"


def test_tpu_errors_say_what_to_do(mocked_tpu):
    with pytest.raises(RuntimeError, match="COLAB_TPU_ADDR and TPU_NAME are unset.*tpu='local'"):
        distribute.get_strategy("tpu")
    with pytest.raises(RuntimeError, match="Could not find the TPU 'missing-tpu'"):
        distribute.get_strategy("tpu", tpu="missing-tpu")
    assert mocked_tpu == []


def test_auto_on_this_machine_without_accelerators(mocked_tpu):
    if tf.config.list_physical_devices("GPU") or tf.config.list_physical_devices("TPU"):
        pytest.skip("this machine has an accelerator")
    strategy = distribute.get_strategy("auto")
    # One device: TensorFlow's default strategy (what `tf.distribute.get_strategy()` gives outside any scope).
    assert strategy is tf.distribute.get_strategy() and not tf.distribute.has_strategy()
    assert strategy.num_replicas_in_sync == 1
    with strategy.scope():  # its scope is a no-op, so `fit` gets a plain tf.data iterator
        assert not tf.distribute.has_strategy()
    assert mocked_tpu == []
    with pytest.raises(RuntimeError, match="'gpus' needs at least one GPU"):
        distribute.get_strategy("gpus")


def test_strategy_errors(mocked_tpu, monkeypatch):
    with pytest.raises(ValueError, match=r"Unknown strategy 'tpus'; expected one of \['auto', 'tpu'"):
        distribute.get_strategy("tpus")
    with pytest.raises(ValueError, match="Unknown strategy 'multiworker'"):  # Keras 3 cannot train with it
        distribute.get_strategy("multiworker")
    monkeypatch.setenv("TF_CONFIG", json.dumps({"cluster": {"worker": ["a:1", "b:2"]},
                                                "task": {"type": "worker", "index": 0}}))
    for kind in ("auto", "cpu"):  # never a multi-worker strategy: one line naming the limit and the JAX path
        with pytest.raises(RuntimeError, match=r"TF_CONFIG is set, but Keras 3 cannot train .*keras-team/keras#20585"
                                               r".*KERAS_BACKEND=jax with KERAS_DISTRIBUTION_JOB_ADDRESSES"):
            distribute.get_strategy(kind)
    with pytest.raises(RuntimeError, match="MultiWorkerMirroredStrategy was given"):
        distribute._tensorflow_placement(tf.distribute.MultiWorkerMirroredStrategy.__new__(  # one made elsewhere
            tf.distribute.MultiWorkerMirroredStrategy))
    monkeypatch.delenv("TF_CONFIG")
    if len(tf.config.list_logical_devices("CPU")) < 2:
        with pytest.raises(RuntimeError, match=r"split_cpu\(2\)"):
            distribute.get_strategy("mirrored-cpu")


def test_per_replica_batch_size():
    assert distribute.per_replica_batch_size(256, 16) == 16  # BERT_BASE: 16 chips (A.2)
    assert distribute.per_replica_batch_size(256, 64) == 4  # BERT_LARGE: 64 chips
    with pytest.raises(ValueError, match=r"global batch size 100 does not split over 8 replicas.*e\.g\. 96"):
        distribute.per_replica_batch_size(100, 8)


def test_tpu_needs_static_shapes():
    rows = tf.data.Dataset.from_tensor_slices({"token_ids": tf.zeros((10, 16), tf.int32)})
    distribute.check_static_shapes(rows.batch(4, drop_remainder=True))
    with pytest.raises(ValueError, match="'token_ids' has shape \\(None, 16\\).*drop_remainder=True"):
        distribute.check_static_shapes(rows.batch(4))


def test_precision_by_device(mocked_tpu):
    from bertlib.train import precision

    assert precision.precision_for(TPUStrategy(None)) == "mixed_bfloat16"
    if not tf.config.list_logical_devices("GPU"):  # a CPU without bfloat16 units
        assert precision.precision_for(tf.distribute.OneDeviceStrategy("/cpu:0"), flags={"avx2"}) == "float32"


@pytest.mark.slow
def test_two_replicas_train_like_one_device(tmp_path):
    """The same global batch on 2 mirrored CPU replicas and on one device gives the same losses.

    Dropout is 0 so both runs are deterministic. They are not bitwise equal: each replica takes the mean
    masked-LM loss over *its own* prediction slots and Keras averages the replicas, while one device divides
    by all slots of the batch. The halves of a batch hold different numbers of slots (rows differ in length),
    so slots are weighed a little differently and the weights drift apart step by step. Measured: 0.02% on
    the mean loss of steps 1-5, 0.25% by steps 16-20 (0.03% and 0.75% with the full 30,522-token
    vocabulary); we allow 0.2% on the first interval and 2% after. Accuracies are not compared: NSP logits
    sit near the decision boundary this early, so a 0.1% change in the weights flips a few predictions.
    """
    corpus = tmp_path / "corpus.txt"
    words = CORPUS_WORDS.split()
    lines = []
    for document in range(30):
        for sentence in range(8):
            start = document * 7 + sentence * 3
            lines.append(" ".join(words[(start + k) % len(words)] for k in range(9)) + ".")
        lines.append("")
    corpus.write_text("\n".join(lines))
    vocab = tmp_path / "vocab.txt"  # the corpus' words only: a 40-token model instead of 30,522
    vocab.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", ".", *sorted(set(words))]))
    script = textwrap.dedent(f"""
        import json
        from bertlib.train import distribute, pretraining
        distribute.split_cpu(2)  # before TensorFlow initializes its devices
        runs = {{}}
        for kind in ("cpu", "mirrored-cpu"):
            result = pretraining.pretrain(corpus={str(corpus)!r}, vocab={str(vocab)!r}, steps=20, batch_size=8,
                                       seq_length=32, max_predictions=5, learning_rate=1e-3, warmup_steps=4,
                                       log_every=5, checkpoint_every=10, strategy=kind, dropout=0.0, seed=1,
                                       verbose=False)
            runs[kind] = {{"replicas": result["replicas"], "history": result["history"]}}
        print(json.dumps(runs))
    """)
    environment = dict(os.environ, KERAS_BACKEND="tensorflow", TF_CPP_MIN_LOG_LEVEL="3", PYTHONPATH=str(REPO))
    completed = subprocess.run([sys.executable, "-c", script], check=False, capture_output=True, text=True,
                               env=environment, cwd=REPO, timeout=400)
    assert completed.returncode == 0, completed.stderr[-3000:]
    runs = json.loads(completed.stdout.strip().splitlines()[-1])
    assert runs["cpu"]["replicas"] == 1 and runs["mirrored-cpu"]["replicas"] == 2
    one, two = runs["cpu"]["history"], runs["mirrored-cpu"]["history"]
    assert [record["step"] for record in one] == [record["step"] for record in two] == [5, 10, 15, 20]
    for interval, (single, mirrored) in enumerate(zip(one, two)):
        tolerance = 0.002 if interval == 0 else 0.02
        assert mirrored["mlm_loss"] == pytest.approx(single["mlm_loss"], rel=tolerance)
        assert mirrored["nsp_loss"] == pytest.approx(single["nsp_loss"], rel=tolerance)
    assert two[-1]["mlm_loss"] < two[0]["mlm_loss"] - 0.1  # and it trains


# ------------------------------------------------------------------- distributed(): one call on every backend


def test_distributed_on_one_tensorflow_device(mocked_tpu):
    if tf.config.list_physical_devices("GPU") or tf.config.list_physical_devices("TPU"):
        pytest.skip("this machine has an accelerator")
    with distribute.distributed() as placement:
        assert (placement.name, placement.num_replicas, placement.backend) == ("one-device", 1, "tensorflow")
        assert placement.strategy is tf.distribute.get_strategy() and placement.devices == ("CPU",)
        assert placement.distribution is None and not distribute.is_tpu(placement)
        assert placement.opened == "tf.distribute default (one device)"
    assert distribute.per_replica_batch_size(8, placement) == 8


def test_distributed_opens_the_tpu_strategy_scope(mocked_tpu, monkeypatch):
    scopes = []

    class Scope:
        def __enter__(self):
            scopes.append("enter")

        def __exit__(self, *exc):
            scopes.append("exit")

    monkeypatch.setattr(TPUStrategy, "scope", lambda self: Scope(), raising=False)
    monkeypatch.setenv("COLAB_TPU_ADDR", "10.0.0.2:8470")
    placement = distribute.distributed("auto")
    assert (placement.name, placement.num_replicas, placement.devices) == ("tpu", 8, ("TPU",) * 8)
    assert isinstance(placement.strategy, TPUStrategy) and distribute.is_tpu(placement)
    assert placement.opened == "tf.distribute TPUStrategy"
    with placement as entered:
        assert entered is placement and scopes == ["enter"]
        with placement:  # a later cell may open it again, even inside
            assert scopes == ["enter", "enter"]
    assert scopes == ["enter", "enter", "exit", "exit"]
    assert distribute.per_replica_batch_size(256, placement) == 32


def test_distributed_mirrors_two_cpu_replicas_in_a_fresh_process():
    script = textwrap.dedent("""
        import tensorflow as tf
        from bertlib.train import distribute
        distribute.split_cpu(2)
        with distribute.distributed("mirrored-cpu") as placement:
            inside = tf.distribute.get_strategy() is placement.strategy
        print(placement.name, placement.num_replicas, ",".join(placement.devices), inside,
              tf.distribute.has_strategy(), placement.opened)
    """)
    assert _run_script(script, "tensorflow")[-1] == "mirrored 2 CPU,CPU True False tf.distribute MirroredStrategy"


def _run_script(script, backend, devices=None, timeout=400, env=(), argv=()):
    """Run `script` in a fresh process on `backend`; `env` sets variables (a None value unsets one)."""
    environment = dict(os.environ, KERAS_BACKEND=backend, TF_CPP_MIN_LOG_LEVEL="3", PYTHONPATH=str(REPO))
    environment.pop("XLA_FLAGS", None)
    for name, value in dict(env).items():
        if value is None:
            environment.pop(name, None)
        else:
            environment[name] = value
    if devices:
        environment["XLA_FLAGS"] = f"--xla_force_host_platform_device_count={devices}"
    completed = subprocess.run([sys.executable, "-c", script, *argv], check=False, capture_output=True, text=True,
                               env=environment, cwd=REPO, timeout=timeout)
    assert completed.returncode == 0, completed.stderr[-3000:]
    return completed.stdout.strip().splitlines()


def test_distributed_on_eight_simulated_jax_devices():
    """A TPU v2-8's shape on a CPU: DataParallel over 8 devices inside the `with`, the old setting after."""
    pytest.importorskip("jax")
    script = textwrap.dedent("""
        import keras
        from bertlib.train import distribute
        before = keras.distribution.distribution()
        with distribute.distributed() as placement:
            inside = keras.distribution.distribution()
            with placement:
                nested = keras.distribution.distribution()
            after_nested = keras.distribution.distribution()
            layer = keras.layers.Dense(4)
            layer.build((None, 3))
            mesh = dict(layer.kernel.value.sharding.mesh.shape)
        print(placement.name, placement.num_replicas, set(placement.devices), type(inside).__name__,
              nested is inside, after_nested is inside, before, keras.distribution.distribution(), mesh)
        print(placement.opened)
        one = distribute.distributed("cpu")
        print(one.name, one.num_replicas, one.distribution, one.opened)
        for kind, tpu in (("tpu", None), ("multiworker", None), ("auto", "my-pod")):
            try:
                distribute.distributed(kind, tpu)
            except (RuntimeError, ValueError) as error:
                print(str(error).split(",")[0].split(".")[0])
    """)
    lines = _run_script(script, "jax", devices=8)
    assert lines[-6] == ("jax-data-parallel 8 {'CPU'} DataParallel True True None None {'batch': 8}")
    assert lines[-5] == "keras.distribution.DataParallel"
    assert lines[-4] == "one-device 1 None None"
    assert lines[-3].startswith("strategy 'tpu' needs a TPU")
    assert lines[-2] == "Unknown strategy 'multiworker'; expected one of ['auto'"
    assert lines[-1].startswith("On the JAX backend the TPU is the one JAX sees")


def test_distributed_on_one_jax_device_sets_no_distribution():
    pytest.importorskip("jax")
    script = textwrap.dedent("""
        import keras
        from bertlib.train import distribute
        with distribute.distributed() as placement:
            print(placement.name, placement.num_replicas, keras.distribution.distribution())
        try:
            distribute.distributed("mirrored-cpu")
        except RuntimeError as error:
            print(error)
    """)
    lines = _run_script(script, "jax")
    assert lines[-2] == "one-device 1 None"
    assert "xla_force_host_platform_device_count" in lines[-1]


def test_distributed_on_torch_is_one_device():
    pytest.importorskip("torch")
    script = textwrap.dedent("""
        from bertlib.train import distribute
        with distribute.distributed() as placement:
            print(placement.name, placement.num_replicas, placement.strategy, placement.distribution,
                  placement.opened)
        try:
            distribute.distributed("tpu")
        except RuntimeError as error:
            print(error)
    """)
    lines = _run_script(script, "torch")
    assert lines[-2] == "torch 1 None None None"
    assert lines[-1].startswith("strategy 'tpu' is not available on the PyTorch backend")


def test_distributed_refuses_an_unknown_kind():
    with pytest.raises(ValueError, match=r"Unknown strategy 'tpus'"):
        distribute.distributed("tpus")


def test_placement_of_what_pretrain_and_finetune_are_given():
    """A kind, a Placement or a ready tf.distribute strategy: each becomes the Placement pretrain and finetune enter."""
    placement = distribute.placement_of("cpu")
    assert (placement.name, placement.num_replicas, placement.backend) == ("one-device", 1, "tensorflow")
    assert distribute.placement_of(placement) is placement
    strategy = tf.distribute.get_strategy()
    assert distribute.placement_of(strategy).strategy is strategy
    with pytest.raises(ValueError, match=r"strategy must be one of \['auto'.*got 3\."):
        distribute.placement_of(3)


def _tiny_corpus(tmp_path):
    """A 30-document corpus of the words above and a vocabulary of those words only (a 40-token model)."""
    corpus = tmp_path / "corpus.txt"
    words = CORPUS_WORDS.split()
    lines = []
    for document in range(30):
        for sentence in range(8):
            start = document * 7 + sentence * 3
            lines.append(" ".join(words[(start + k) % len(words)] for k in range(9)) + ".")
        lines.append("")
    corpus.write_text("\n".join(lines))
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", ".", *sorted(set(words))]))
    return corpus, vocab


@pytest.mark.slow
def test_pretrain_on_eight_simulated_jax_devices_matches_one_device(tmp_path):
    """A Colab TPU v2-8's shape: `bertlib pretrain` over 8 replicas gives one device's losses.

    On JAX, DataParallel shards the same global batch over the devices and computes the same global loss (not a
    mean of per-replica means as TensorFlow's MirroredStrategy does), so only float rounding differs.
    """
    pytest.importorskip("jax")
    corpus, vocab = _tiny_corpus(tmp_path)
    runs = {}
    for devices in (1, 8):
        environment = dict(os.environ, KERAS_BACKEND="jax", TF_CPP_MIN_LOG_LEVEL="3", PYTHONPATH=str(REPO),
                           XLA_FLAGS=f"--xla_force_host_platform_device_count={devices}")
        completed = subprocess.run(
            [sys.executable, "-m", "bertlib.cli", "pretrain", "--corpus", str(corpus), "--vocab", str(vocab),
             "--steps", "12", "--batch-size", "16", "--seq-length", "32", "--max-predictions", "5",
             "--learning-rate", "1e-3", "--warmup-steps", "3", "--log-every", "4", "--checkpoint-every", "12",
             "--dropout", "0", "--seed", "1"],
            capture_output=True, text=True, env=environment, cwd=REPO, timeout=600)
        assert completed.returncode == 0, completed.stderr[-3000:]
        runs[devices] = json.loads(completed.stdout.strip().splitlines()[-1])
    assert (runs[1]["replicas"], runs[8]["replicas"]) == (1, 8)
    assert runs[8]["strategy"] == "jax-data-parallel"
    for key in ("loss", "mlm_loss", "nsp_loss"):
        assert runs[8][key] == pytest.approx(runs[1][key], rel=1e-4), key
    assert runs[8]["mlm_loss"] < math.log(40)  # it trained: below a uniform guess over the 40 tokens


@pytest.mark.slow
def test_finetune_places_its_model_with_distributed_on_two_jax_devices(tmp_path):
    """`finetune(strategy=...)` goes through `distributed()` as pretrain does, so JAX's DataParallel works too.

    The same SWAG run (13 rows, so the last batch of 4 is 1 row) on one device and on 2 simulated ones: the 2-device
    model's weights are laid out over a 2-device mesh, the result is one device's up to float rounding, and the
    caller's distribution (none) is back afterwards. (Before, a kind string failed: `str` has no `scope()`.)
    """
    pytest.importorskip("jax")
    rows = ["video-id,fold-ind,startphrase,sent1,sent2,gold-source,ending0,ending1,ending2,ending3,label"]
    rows += [f"v{i},{i},x,The man opens the door.,He,gold,walks in.,eats the door.,sings a door.,flies.,{i % 4}"
             for i in range(13)]
    for name in ("train.csv", "val.csv"):
        (tmp_path / name).write_text("\n".join(rows) + "\n", encoding="utf-8")
    script = textwrap.dedent(f"""
        import json, keras
        from bertlib.finetune import finetuning
        for kind in ("cpu", "mirrored-cpu"):
            result, model = finetuning.finetune("swag", {str(tmp_path)!r}, "tiny", epochs=1, batch_size=4,
                                              max_seq_length=32, learning_rate=1e-3, verbose=0, strategy=kind,
                                              return_model=True)  # XLA ('auto'): 2x faster than eager here
            sharding = model.backbone.trainable_variables[0].value.sharding
            print(json.dumps({{"kind": kind, "loss": result["last_epoch_train_loss"],
                               "accuracy": result["accuracy"], "devices": len(sharding.device_set),
                               "after": str(keras.distribution.distribution())}}))
    """)
    one, two = (json.loads(line) for line in _run_script(script, "jax", devices=2, timeout=900)[-2:])
    assert (one["devices"], two["devices"]) == (1, 2)
    assert one["after"] == two["after"] == "None"
    assert two["loss"] == pytest.approx(one["loss"], rel=1e-3)
    assert two["accuracy"] == one["accuracy"]


def test_jax_compile_cache_loads_programs_that_give_the_same_numbers(tmp_path):
    """`configure_compile_cache` on JAX: the folder under BERTLIB_CACHE, a second model of the same architecture
    loads the first one's training step from disk instead of compiling it, and a loaded program trains to the
    same weights, bit for bit, as a run with JAX's cache turned off. JAX's own settings win over ours, and a
    folder that cannot be made means no cache."""
    pytest.importorskip("jax")
    script = textwrap.dedent("""
        import hashlib, sys, jax, keras, numpy as np
        from bertlib.train import host
        events = []
        jax.monitoring.register_event_listener(lambda name, **kw: events.append(name.rsplit("/", 1)[-1]))
        print(host.configure_compile_cache())
        rng = np.random.default_rng(0)
        x, y = rng.normal(size=(32, 12)).astype("float32"), rng.integers(0, 3, 32).astype("int32")
        for model_number in range(1, int(sys.argv[1]) + 1 if sys.argv[1:] else 1):  # argv: how many models
            keras.utils.set_random_seed(0)
            model = keras.Sequential([keras.Input((12,)), keras.layers.Dense(64, activation="gelu"),
                                      keras.layers.Dropout(0.1), keras.layers.LayerNormalization(),
                                      keras.layers.Dense(3)])
            model.compile(optimizer=keras.optimizers.AdamW(1e-2),
                          loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
            events.clear()
            model.train_on_batch(x, y)
            first_step = (events.count("cache_hits"), events.count("cache_misses"))
            for _ in range(3):
                model.train_on_batch(x, y)
            weights = hashlib.sha256(b"".join(np.asarray(w).tobytes() for w in model.get_weights())).hexdigest()
            print(model_number, *first_step, weights[:16])
    """)
    ours = {"BERTLIB_CACHE": str(tmp_path / "cache"), "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0",
            "JAX_COMPILATION_CACHE_DIR": None, "JAX_ENABLE_COMPILATION_CACHE": None}
    cached = _run_script(script, "jax", env=ours, argv=["2"])
    uncached = _run_script(script, "jax", env={**ours, "JAX_ENABLE_COMPILATION_CACHE": "false"}, argv=["1"])
    assert cached[-3] == str(tmp_path / "cache" / "jax") and any((tmp_path / "cache" / "jax").iterdir())
    first, second = (line.split() for line in cached[-2:])
    assert int(first[2]) > 0                        # model 1 compiled its step (a miss) ...
    assert int(second[1]) > 0 and second[2] == "0"  # ... model 2 loaded it, compiling nothing
    assert uncached[-2] == "None"
    assert first[3] == second[3] == uncached[-1].split()[3]  # the same weights, bit for bit, with and without
    assert _run_script(script, "jax", env={**ours, "JAX_COMPILATION_CACHE_DIR": str(tmp_path / "own")}) == [
        str(tmp_path / "own")]
    (tmp_path / "a-file").write_text("")  # a cache folder that cannot be made: no cache, not a warning per compile
    assert _run_script(script, "jax", env={**ours, "BERTLIB_CACHE": str(tmp_path / "a-file")}) == ["None"]


def test_compile_cache_is_a_jax_setting():
    assert host.configure_compile_cache() is None  # this process runs TensorFlow
