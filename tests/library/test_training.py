"""Pretraining: the paper's optimizer and schedule (A.2), checkpoint/resume, the CLI contract, NaN stop."""

import dataclasses
import json
import math
import os
import re
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import keras
import numpy as np
import pytest

from bertlib.io.files import atomic_write
from bertlib.model import BertBackbone, BertPretrainer
from bertlib.model.config import BertConfig
from bertlib.train import callbacks, distribute, phases, pretraining, schedule, settings

REPO = Path(__file__).resolve().parents[2]

# A small run: short sequences, small batch, few slots, so a step takes a few milliseconds on a CPU.
SMALL_RUN = {"preset": "tiny", "batch_size": 8, "seq_length": 32, "max_predictions": 5, "learning_rate": 1e-3,
             "warmup_steps": 4, "log_every": 5, "checkpoint_every": 10, "seed": 3}
CORPUS_WORDS = ("the model reads every token of a sentence and predicts the hidden words from both sides "
                "while the next sentence task asks whether two spans follow each other in the same document "
                "so that training learns relations between sentences as well as words in context")


def original_schedule(step, peak, warmup_steps, total_steps):
    """The released BERT `optimization.py` for one step: polynomial decay (power 1), then warmup."""
    decayed = peak * (1.0 - min(step, total_steps) / total_steps)
    if warmup_steps and step < warmup_steps:
        return peak * step / warmup_steps
    return decayed


def write_corpus_and_vocabulary(folder, words, documents=40, seed=0):
    """A text corpus in the `bertlib data` format (one sentence per line, blank lines between documents) and a
    vocab.txt of just its words, so that the test models have a 60-token vocabulary instead of 30,522."""
    rng = np.random.default_rng(seed)
    texts = ["\n".join(" ".join(rng.choice(words, size=rng.integers(6, 12))) + "." for _ in range(8))
             for _ in range(documents)]
    corpus, vocab = Path(folder) / "corpus.txt", Path(folder) / "vocab.txt"
    corpus.write_text("\n\n".join(texts) + "\n")
    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "."]
    vocab.write_text("\n".join(specials + sorted(set(words))) + "\n")
    return corpus, vocab


@pytest.fixture(scope="module")
def small_run(tmp_path_factory):
    corpus, vocab = write_corpus_and_vocabulary(tmp_path_factory.mktemp("corpus"), CORPUS_WORDS.split())
    return {**SMALL_RUN, "corpus": str(corpus), "vocab": str(vocab)}


def test_schedule_matches_the_original_formula():
    rate = schedule.warmup_linear_decay(1e-3, warmup_steps=10, total_steps=100)
    steps = np.arange(0, 121)
    got = np.array([float(rate(step)) for step in steps])
    expected = np.array([original_schedule(step, 1e-3, 10, 100) for step in steps])
    np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-12)
    assert got[10] == pytest.approx(1e-3 * 0.9)  # the original drops to the decay line after warmup
    assert got[100] == 0.0 and got[120] == 0.0

    paper = schedule.warmup_linear_decay(1e-4, 10_000, 1_000_000)
    for step in (0, 5_000, 9_999, 10_000, 500_000, 999_999):
        assert float(paper(step)) == pytest.approx(original_schedule(step, 1e-4, 10_000, 1_000_000), rel=1e-5)

    restored = keras.optimizers.schedules.deserialize(keras.optimizers.schedules.serialize(paper))
    assert float(restored(123_456)) == float(paper(123_456))


def test_schedule_rejects_bad_values():
    with pytest.raises(ValueError, match="warmup_steps .*10000.* total_steps .*300"):
        schedule.warmup_linear_decay(1e-4, 10_000, 300)
    with pytest.raises(ValueError, match="peak"):
        schedule.warmup_linear_decay(0.0, 0, 10)


def test_optimizer_hyperparameters_are_the_papers():
    optimizer = schedule.make_optimizer()
    assert (optimizer.beta_1, optimizer.beta_2, optimizer.epsilon) == (0.9, 0.999, 1e-6)
    assert optimizer.weight_decay == 0.01 and optimizer.global_clipnorm == 1.0
    rate = optimizer._learning_rate
    assert (rate.peak, rate.warmup_steps, rate.total_steps) == (1e-4, 10_000, 1_000_000)


def test_weight_decay_skips_layer_norms_and_biases_of_a_real_backbone():
    """One step with zero gradients: Adam moves nothing, so only decoupled weight decay changes a weight."""
    keras.utils.set_random_seed(0)
    pretrainer = BertPretrainer(BertBackbone(BertConfig.preset("tiny", vocabulary_size=64)))
    variables = pretrainer.trainable_variables
    for variable in variables:  # non-zero everywhere, so that a decayed bias would visibly shrink
        variable.assign(np.random.default_rng(1).uniform(0.5, 1.5, variable.shape).astype("float32"))
    before = {variable.path: variable.numpy().copy() for variable in variables}
    peak, decay = 0.1, 0.01
    optimizer = schedule.make_optimizer(peak, warmup_steps=0, total_steps=10, weight_decay=decay)
    optimizer.apply_gradients([(np.zeros(variable.shape, "float32"), variable) for variable in variables])

    excluded = {path for path in before
                if re.search(r"(layer_norm/(gamma|beta)|/bias|output_bias)$", path)}
    decayed = set(before) - excluded
    for path in excluded:
        np.testing.assert_array_equal(before[path], _value(variables, path), err_msg=path)
    for path in decayed:
        np.testing.assert_allclose(_value(variables, path), before[path] * (1 - peak * decay), rtol=1e-6,
                                   err_msg=path)
    # The exclusions by name: the embedding LayerNorm, both LayerNorms of every block, every Dense bias.
    assert {"embedding/layer_norm/gamma", "embedding/layer_norm/beta",
            "encoder_block_1/attention_layer_norm/gamma",
            "encoder_block_1/output_layer_norm/beta", "encoder_block_0/intermediate/bias", "pooler/bias",
            "mlm_head/output_bias", "nsp_head/classifier/bias"} <= excluded
    assert {"embedding/token_embedding/embeddings", "embedding/position_embedding",
            "encoder_block_0/self_attention/query_key_value/kernel", "pooler/kernel"} <= decayed


def _value(variables, path):
    return next(variable.numpy() for variable in variables if variable.path == path)


def test_atomic_write_keeps_the_old_file_when_writing_fails(tmp_path):
    target = tmp_path / "latest.json"
    atomic_write(target, lambda temporary: Path(temporary).write_bytes(b'{"step": 10}'))

    def broken(temporary):
        Path(temporary).write_bytes(b'{"step": 2')
        raise OSError("disk full")

    with pytest.raises(OSError):
        atomic_write(target, broken)
    assert json.loads(target.read_text()) == {"step": 10}
    assert [path.name for path in tmp_path.iterdir()] == ["latest.json"]


def test_bad_settings_raise_clear_errors(small_run):
    run = {key: small_run[key] for key in ("corpus", "vocab")}
    with pytest.raises(ValueError, match="Unknown strategy 'warp'"):
        pretraining.pretrain(steps=10, strategy="warp", **run)

    four_replicas = distribute.Placement("mirrored", 4, keras.backend.backend(), ["CPU"] * 4)  # none built
    with pytest.raises(ValueError, match="global batch size 30 does not split over 4 replicas"):
        pretraining.pretrain(steps=10, batch_size=30, strategy=four_replicas, **run)
    with pytest.raises(ValueError, match="strategy must be one of .* got <object"):
        pretraining.pretrain(steps=10, strategy=object(), **run)
    with pytest.raises(ValueError, match=r"steps_per_execution \(4\) must divide .*\[90, 100\]"):
        pretraining.pretrain(steps=100, long_fraction=0.1, log_every=8, checkpoint_every=8,
                          steps_per_execution=4, **run)
    with pytest.raises(ValueError, match="long_fraction"):
        pretraining.pretrain(steps=30, long_fraction=1.5, **run)
    with pytest.raises(FileNotFoundError, match="no/such/file.txt"):
        pretraining.pretrain(corpus="no/such/file.txt", vocab=run["vocab"], steps=10, strategy="cpu")


def test_phase_plan_is_the_papers_curriculum():
    assert phases.phase_plan(1_000_000, 0.1, 128, 512) == [(128, 0, 900_000), (512, 900_000, 1_000_000)]
    assert phases.phase_plan(300, 0.0, 128, 512) == [(128, 0, 300)]


@pytest.mark.slow
def test_pretrain_learns_and_runs_the_long_phase(small_run, tmp_path):
    """A short masked-LM-only run with the 128 -> 512 curriculum, here 32 -> 64: the long phase trains
    positions 32..63."""
    records = []
    result = pretraining.pretrain(steps=40, long_fraction=0.25, long_seq_length=64, checkpoint_dir=str(tmp_path),
                               strategy="cpu", on_progress=records.append, next_sentence=False,
                               **{**small_run, "learning_rate": 2e-3})
    vocabulary_size = len(Path(small_run["vocab"]).read_text().split())
    assert result["pretrainer"].backbone.config.vocabulary_size == vocabulary_size
    assert result["nsp_accuracy"] is None and "nsp_logits" not in result["pretrainer"].output_names
    assert [record["seq_length"] for record in records] == [32] * 6 + [64] * 2
    assert [record["step"] for record in records] == [5, 10, 15, 20, 25, 30, 35, 40]
    assert result["step"] == 40
    assert result["mlm_loss"] < records[0]["mlm_loss"] - 0.1  # random words: little to learn beyond unigrams
    trained = result["pretrainer"].backbone.embedding.position_embedding.numpy()
    keras.utils.set_random_seed(SMALL_RUN["seed"])  # pretrain() seeds the same way before building
    initial = BertBackbone(result["pretrainer"].backbone.config).embedding.position_embedding.numpy()
    # Rows never used (64 and up) only shrink by weight decay: one common factor for all of them. Rows
    # 32..63 are used only in the long phase, and they learned something beyond that factor.
    factor = np.median(trained[64:] / initial[64:])
    np.testing.assert_allclose(trained[64:], initial[64:] * factor, rtol=1e-4, atol=1e-7)
    assert factor < 1.0
    assert np.abs(trained[32:64] - initial[32:64] * factor).max() > 1e-3
    assert (tmp_path / "backbone.keras").is_file() and (tmp_path / "pretrainer.keras").is_file()
    backbone = keras.saving.load_model(tmp_path / "backbone.keras")
    np.testing.assert_array_equal(backbone.embedding.position_embedding.numpy(), trained)
    assert any((tmp_path / "logs").iterdir())  # TensorBoard event file


def test_several_steps_a_call_train_the_same_weights_and_log_the_same_records(small_run):
    """`steps_per_execution` changes how often Python calls the compiled step, not what it computes: the same
    20 steps end at the same weights and log the same losses (the course's tiny models use 5-50 a call)."""
    if keras.backend.backend() == "torch":
        pytest.skip("Keras on PyTorch runs one step a call")
    runs = []
    for per_call in (1, 5):
        records = []
        result = pretraining.pretrain(steps=20, strategy="cpu", on_progress=records.append,
                                      steps_per_execution=per_call, **small_run)
        runs.append((result["pretrainer"].get_weights(), [(r["step"], r["loss"]) for r in records]))
    (one, one_records), (five, five_records) = runs
    assert [step for step, _ in five_records] == [5, 10, 15, 20]
    np.testing.assert_allclose([loss for _, loss in five_records], [loss for _, loss in one_records], rtol=1e-6)
    for a, b in zip(one, five):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-7)


def test_a_model_without_dropout_compiles_its_step_with_xla_and_trains_the_same_weights(small_run, monkeypatch):
    """On TensorFlow on a CPU, `pretrain` compiles the step with XLA only for a model without dropout (XLA draws
    dropout's masks slowly there; bench/RESULTS.md); XLA changes the rounding of float32 sums, not the training:
    the same 20 steps end at the same weights as without it."""
    if keras.backend.backend() != "tensorflow":
        pytest.skip("a TensorFlow choice: JAX always compiles, PyTorch never")
    compiled = []
    original = pretraining.build_pretrainer

    def recording(*args, **kwargs):
        pretrainer = original(*args, **kwargs)
        compiled.append(pretrainer.jit_compile)
        return pretrainer

    monkeypatch.setattr(pretraining, "build_pretrainer", recording)
    pretraining.pretrain(steps=10, strategy="cpu", **small_run)  # dropout 0.1 (the default): no XLA
    with_xla = pretraining.pretrain(steps=20, strategy="cpu", dropout=0.0, **small_run)
    monkeypatch.setattr(pretraining, "_use_xla", lambda placement, dropout: False)
    without_xla = pretraining.pretrain(steps=20, strategy="cpu", dropout=0.0, **small_run)
    assert compiled == [False, True, False]
    for a, b in zip(with_xla["pretrainer"].get_weights(), without_xla["pretrainer"].get_weights()):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)
    assert with_xla["loss"] == pytest.approx(without_xla["loss"], rel=1e-4)


def test_nan_loss_stops_the_run_with_a_clear_message(small_run, capsys):
    from bertlib import cli

    # A NaN weight decay is now refused before training (test_hostile_inputs); an absurd learning rate still
    # blows the weights up within a few steps, and the run must stop there with the advice, not train on NaN.
    exit_code = cli.main(_arguments(small_run, steps=20) + ["--strategy=cpu", "--learning-rate=1e30"])
    assert exit_code == 1
    error = capsys.readouterr().err
    assert re.search(r"loss became nan at step \d+ .*lower --learning-rate", error), error


def _arguments(run, steps):
    options = [f"--{key.replace('_', '-')}={value}" for key, value in run.items()]
    return ["pretrain", f"--steps={steps}", *options]


def _environment():
    return dict(os.environ, KERAS_BACKEND="tensorflow", TF_CPP_MIN_LOG_LEVEL="3", PYTHONPATH=str(REPO))


@pytest.mark.slow
def test_cli_killed_after_a_checkpoint_resumes_where_it_stopped(small_run, tmp_path):
    command = [sys.executable, "-m", "bertlib.cli", *_arguments(small_run, steps=30), "--strategy=cpu",
               f"--checkpoint-dir={tmp_path / 'run'}"]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                               env=_environment(), cwd=REPO)
    killed_after = None
    for line in process.stdout:
        match = re.match(r"saved checkpoint at step (\d+)", line)
        if match:
            killed_after = int(match.group(1))
            os.kill(process.pid, signal.SIGKILL)
            break
    process.wait(timeout=60)
    assert killed_after == 10, "the run ended before writing its first checkpoint"
    assert process.returncode == -signal.SIGKILL
    saved = json.loads((tmp_path / "run" / "latest.json").read_text())
    assert saved["step"] >= killed_after  # the kill may land after a later checkpoint, never before this one

    resumed = subprocess.run(command, check=False, capture_output=True, text=True, env=_environment(),
                             cwd=REPO, timeout=300)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    lines = resumed.stdout.strip().splitlines()
    assert f"resumed from step {saved['step']}" in lines
    summary = json.loads(lines[-1])  # the last line is one JSON object
    assert summary["step"] == 30 and summary["resumed_from"] == saved["step"]
    for key in ("mlm_loss", "mlm_accuracy", "nsp_accuracy", "tokens_per_second", "seconds", "checkpoint"):
        assert summary[key] is not None, key

    # The same run never interrupted (in this process): same metrics, same weights and optimizer state.
    uninterrupted = pretraining.pretrain(steps=30, strategy="cpu", verbose=False,
                                      checkpoint_dir=str(tmp_path / "reference"), **small_run)
    for key in ("loss", "mlm_loss", "mlm_accuracy", "nsp_loss", "nsp_accuracy"):
        assert summary[key] == pytest.approx(uninterrupted[key], rel=1e-4, abs=1e-6), key
    # Keyed by path: the keys do not depend on what else a process built (this one built other models first).
    with np.load(summary["checkpoint"]) as stored, np.load(uninterrupted["checkpoint"]) as reference:
        iterations = "optimizer/adam_w/iteration"  # the optimizer's step counter, which drives the schedule
        assert int(stored[iterations]) == int(reference[iterations]) == 30
        assert sorted(stored.files) == sorted(reference.files)
        for key in reference.files:
            if key != "state":  # the record differs: where it was resumed, how long the intervals took
                np.testing.assert_array_equal(stored[key], reference[key], err_msg=key)  # bit for bit



class Crash(Exception):
    pass


@pytest.mark.slow
def test_streamed_tfrecords_resume_after_a_crash_like_an_unbroken_run(small_run, tmp_path):
    from bertlib.text import corpora, data
    from bertlib.text.tokenizer import WordPieceTokenizer

    tokenizer = WordPieceTokenizer.from_vocab_file(small_run["vocab"])
    arrays = data.build_pretraining_arrays(corpora.text_files([small_run["corpus"]]), tokenizer,
                                           max_seq_length=small_run["seq_length"], seed=0)
    data.write_tfrecords(arrays, tmp_path / "shards", num_shards=3)
    run = {**small_run, "corpus": f"tfrecords:{tmp_path / 'shards'}", "stream": True, "strategy": "cpu",
           "verbose": False, "steps": 20}

    def crash_after_the_first_checkpoint(record):
        if record["step"] == 15:
            raise Crash

    with pytest.raises(Crash):
        pretraining.pretrain(checkpoint_dir=str(tmp_path / "run"), on_progress=crash_after_the_first_checkpoint, **run)
    assert json.loads((tmp_path / "run" / "latest.json").read_text())["step"] == 10
    resumed = pretraining.pretrain(checkpoint_dir=str(tmp_path / "run"), **run)
    assert resumed["resumed_from"] == 10
    unbroken = pretraining.pretrain(checkpoint_dir=str(tmp_path / "reference"), **run)
    with np.load(resumed["checkpoint"]) as stored, np.load(unbroken["checkpoint"]) as reference:
        for key in reference.files:
            if key != "state":
                np.testing.assert_array_equal(stored[key], reference[key], err_msg=key)
    with pytest.raises(ValueError, match="stream"):  # the same folder, read another way, is another run
        pretraining.pretrain(checkpoint_dir=str(tmp_path / "run"), **{**run, "stream": False, "steps": 30})
    with pytest.raises(ValueError, match="tfrecords"):
        pretraining.pretrain(**{**run, "corpus": small_run["corpus"]})
    # One process reads with one reader unless told (recorded, so a resume reads the same), and another count of
    # readers deals the shards differently: another run. More readers than shards is refused before any step.
    assert json.loads((tmp_path / "run" / "latest.json").read_text())["settings"]["stream_readers"] == 1
    with pytest.raises(ValueError, match="stream_readers"):
        pretraining.pretrain(checkpoint_dir=str(tmp_path / "run"), **{**run, "stream_readers": 2, "steps": 30})
    with pytest.raises(ValueError, match=r"3 shard\(s\) cannot be dealt to 4 readers"):
        pretraining.pretrain(checkpoint_dir=str(tmp_path / "four"), **{**run, "stream_readers": 4})
    assert not list((tmp_path / "four").glob("ckpt-*"))
    with pytest.raises(ValueError, match="stream_readers=2 needs stream=True"):
        pretraining.PretrainSettings(corpus="python-docs", stream_readers=2)


@pytest.mark.slow
def test_jax_backend_pretrains_with_data_parallel(small_run, tmp_path):
    script = textwrap.dedent(f"""
        import json, keras
        from bertlib.train import pretraining
        result = pretraining.pretrain(steps=10, checkpoint_dir={str(tmp_path)!r}, verbose=False, **{small_run!r})
        print(json.dumps({{"backend": keras.backend.backend(), "step": result["step"],
                          "replicas": result["replicas"], "mlm_loss": result["mlm_loss"],
                          "first_loss": result["history"][0]["mlm_loss"]}}))
    """)
    environment = dict(_environment(), KERAS_BACKEND="jax",
                       XLA_FLAGS="--xla_force_host_platform_device_count=2")  # two JAX CPU devices
    completed = subprocess.run([sys.executable, "-c", script], check=False, capture_output=True, text=True,
                               env=environment,
                               cwd=REPO, timeout=300)
    assert completed.returncode == 0, completed.stderr[-3000:]
    result = json.loads(completed.stdout.strip().splitlines()[-1])
    assert result["backend"] == "jax" and result["step"] == 10 and result["replicas"] == 2
    assert math.isfinite(result["mlm_loss"]) and result["mlm_loss"] < result["first_loss"]
    assert json.loads((tmp_path / "latest.json").read_text())["step"] == 10


@pytest.mark.slow
def test_jax_without_tensorflow_pretrains_and_resumes_after_a_crash_like_an_unbroken_run(small_run, tmp_path):
    """A JAX install without TensorFlow (such as the lent H200's image): `pretrain` feeds `fit`
    numpy batches, writes checkpoints without TensorBoard logs, learns, and a run that crashed after its first
    checkpoint resumes to the same weights and optimizer state, bit for bit, as a run never interrupted. In the
    subprocess TensorFlow cannot be imported (a meta-path blocker), so an import of it anywhere on the way fails."""
    script = textwrap.dedent(f"""
        import importlib.abc, json, sys

        class NoTensorFlow(importlib.abc.MetaPathFinder):
            def find_spec(self, name, path=None, target=None):
                if name.partition(".")[0] in ("tensorflow", "tensorboard", "tf_keras"):
                    raise ModuleNotFoundError(f"No module named {{name!r}} (blocked)", name=name)

        sys.meta_path.insert(0, NoTensorFlow())
        import numpy as np
        from bertlib.train import pretraining

        run = dict({small_run!r}, steps=20, verbose=False)

        def crash_after_the_first_checkpoint(record):
            if record["step"] == 15:
                raise KeyboardInterrupt

        try:
            pretraining.pretrain(checkpoint_dir={str(tmp_path / "run")!r}, on_progress=crash_after_the_first_checkpoint,
                                 **run)
        except KeyboardInterrupt:
            pass
        crashed_at = json.load(open({str(tmp_path / "run" / "latest.json")!r}))["step"]
        resumed = pretraining.pretrain(checkpoint_dir={str(tmp_path / "run")!r}, **run)
        unbroken = pretraining.pretrain(checkpoint_dir={str(tmp_path / "reference")!r}, **run)
        with np.load(resumed["checkpoint"]) as stored, np.load(unbroken["checkpoint"]) as reference:
            different = [key for key in reference.files
                         if key != "state" and not np.array_equal(stored[key], reference[key])]
        import keras
        print(json.dumps({{"backend": keras.backend.backend(), "crashed_at": crashed_at,
                          "resumed_from": resumed["resumed_from"], "step": resumed["step"], "different": different,
                          "first_loss": unbroken["history"][0]["mlm_loss"], "mlm_loss": unbroken["mlm_loss"],
                          "tensorflow_loaded": sorted(name for name in sys.modules if name.startswith("tensorflow"))}}))
    """)
    completed = subprocess.run([sys.executable, "-c", script], check=False, capture_output=True, text=True,
                               env=dict(_environment(), KERAS_BACKEND="jax"), cwd=REPO, timeout=600)
    assert completed.returncode == 0, completed.stderr[-3000:]
    result = json.loads(completed.stdout.strip().splitlines()[-1])
    assert result == {**result, "backend": "jax", "crashed_at": 10, "resumed_from": 10, "step": 20, "different": [],
                      "tensorflow_loaded": []}
    assert math.isfinite(result["mlm_loss"]) and result["mlm_loss"] < result["first_loss"]
    assert (tmp_path / "run" / "backbone.keras").is_file() and not (tmp_path / "run" / "logs").exists()


# Settings objects, the folder lock, advice that loses nothing, checkpoints keyed by path, no global state ------

def test_settings_make_the_command_line_and_the_record():
    import argparse
    import dataclasses

    from bertlib.train import settings

    parser = argparse.ArgumentParser()
    pretraining.add_arguments(parser)
    # Every field is one option with the field's default: the options come from the one definition.
    defaults = vars(parser.parse_args([]))
    fields = {field.name: field.default for field in dataclasses.fields(pretraining.PretrainSettings)}
    assert set(defaults) == set(fields)
    assert pretraining.PretrainSettings() == settings.from_arguments(pretraining.PretrainSettings, parser.parse_args([]))
    parsed = settings.from_arguments(pretraining.PretrainSettings, parser.parse_args(
        ["--batch-size", "8", "--no-nsp", "--corpus", "a.txt", "b.txt", "--long-fraction", "0.1"]))
    assert parsed == pretraining.PretrainSettings(batch_size=8, next_sentence=False, corpus=["a.txt", "b.txt"],
                                               long_fraction=0.1)
    assert parsed.corpus == (str(Path("a.txt").resolve()), str(Path("b.txt").resolve()))  # as recorded
    assert json.loads(json.dumps(settings.record(parsed)))["batch_size"] == 8
    # What a resume must keep is declared on the fields; the sequence lengths are compared as one value.
    assert set(settings.resume_fields(parsed)) == {
        "corpus", "batch_size", "seq_lengths", "learning_rate", "warmup_steps", "weight_decay", "max_predictions",
        "mask_token_rate", "random_token_rate", "next_sentence", "stream", "stream_readers", "seed", "dtype_policy"}
    assert settings.resume_fields(parsed)["seq_lengths"] == [128, 512]
    # A bad value is refused when the object is made, from Python and from the command line alike.
    for options, message in ((["--long-fraction", "1.5"], r"long_fraction must be a number in \[0, 1\), got 1.5"),
                             (["--batch-size", "0"], r"batch_size must be a positive integer, got 0"),
                             (["--mask-token-rate", "0.95"], r"mask_token_rate \+ random_token_rate .* 1.05")):
        with pytest.raises(ValueError, match=message):
            settings.from_arguments(pretraining.PretrainSettings, parser.parse_args(options))
    with pytest.raises(TypeError, match="stepz"):
        pretraining.pretrain(stepz=10)


def test_pretrain_takes_a_settings_object_a_tokenizer_and_a_config(small_run):
    from bertlib.text.tokenizer import WordPieceTokenizer

    tokenizer = WordPieceTokenizer.from_vocab_file(small_run["vocab"])
    config = BertConfig(num_layers=1, num_heads=2, hidden_dim=32, intermediate_dim=64,
                        vocabulary_size=tokenizer.vocabulary_size, max_sequence_length=64)
    run = pretraining.PretrainSettings(**{**small_run, "steps": 10, "strategy": "cpu"})
    result = pretraining.pretrain(run, tokenizer=tokenizer, config=config, verbose=False)
    assert result["pretrainer"].backbone.config == config and result["step"] == 10
    by_name = pretraining.pretrain(tokenizer=tokenizer, config=config, verbose=False, steps=10, strategy="cpu",
                                **small_run)
    # The same run: bit for bit on TensorFlow; PyTorch's CPU kernels do not repeat a sum's order exactly.
    np.testing.assert_allclose([record["loss"] for record in by_name["history"]],
                               [record["loss"] for record in result["history"]],
                               rtol=0 if keras.backend.backend() == "tensorflow" else 1e-2)
    with pytest.raises(ValueError, match="32 token embeddings but the tokenizer"):
        pretraining.pretrain(run, tokenizer=tokenizer, config=dataclasses_replace(config, vocabulary_size=32))


def dataclasses_replace(config, **changes):
    return BertConfig(**{**config.to_dict(), **changes})


def test_pretrain_and_finetune_leave_the_callers_random_state_alone(small_run):
    """Seeding is for the model they build; the caller's own draws must not depend on having called them."""
    import random

    from bertlib.finetune import finetuning

    random.seed(123)
    np.random.seed(123)
    expected = (random.random(), np.random.random())
    random.seed(123)
    np.random.seed(123)
    pretraining.pretrain(steps=5, strategy="cpu", verbose=False, **small_run)
    backbone, _ = finetuning.load_init("tiny", seed=3)
    assert (random.random(), np.random.random()) == expected
    # The seed still fixes the weights, exactly as Keras' own global seeding would.
    keras.utils.set_random_seed(3)
    reference = BertBackbone(BertConfig.preset("tiny", vocabulary_size=backbone.config.vocabulary_size))
    for mine, theirs in zip(backbone.get_weights(), reference.get_weights()):
        np.testing.assert_array_equal(mine, theirs)


def test_a_second_run_on_a_folder_in_use_is_refused(small_run, tmp_path):
    from bertlib.io import files

    folder = tmp_path / "run"
    folder.mkdir()
    with files.exclusive_lock(folder, "--checkpoint-dir", "another bertlib pretrain"):
        with pytest.raises(files.FolderInUse, match=r"--checkpoint-dir .*run is in use by another run "
                                                    r"\(another bertlib pretrain, process \d+"):
            pretraining.pretrain(steps=10, strategy="cpu", verbose=False, checkpoint_dir=folder, **small_run)
    assert not list(folder.glob("ckpt-*")) and not (folder / "latest.json").exists()
    # From the command line: exit 1 with the message; and once the holder is gone, the folder is free again.
    code = """import sys, time\nfrom bertlib.io import files\nwith files.exclusive_lock(sys.argv[1], "--checkpoint-dir",
    "a test"):\n    print("locked", flush=True)\n    time.sleep(60)\n"""
    holder = subprocess.Popen([sys.executable, "-c", code, str(folder)], stdout=subprocess.PIPE, text=True,
                              env=_environment(), cwd=REPO)
    try:
        assert holder.stdout.readline().strip() == "locked"
        completed = subprocess.run([sys.executable, "-m", "bertlib.cli", *_arguments(small_run, steps=10),
                                    "--strategy=cpu", f"--checkpoint-dir={folder}"], capture_output=True,
                                   text=True, env=_environment(), cwd=REPO, timeout=300)
        assert completed.returncode == 1 and "is in use by another run (a test, process" in completed.stderr
    finally:
        holder.kill()
        holder.wait()
    assert pretraining.pretrain(steps=10, strategy="cpu", verbose=False, checkpoint_dir=folder, **small_run)["step"] == 10


def test_damaged_latest_json_advice_loses_nothing(small_run, tmp_path):
    run = {**small_run, "strategy": "cpu", "verbose": False, "checkpoint_every": 5}
    folder = tmp_path / "run"
    pretraining.pretrain(steps=15, checkpoint_dir=folder, **run)
    kept = sorted(path.name for path in folder.glob("ckpt-*.npz"))
    assert kept == ["ckpt-00000010.npz", "ckpt-00000015.npz"]
    (folder / "latest.json").write_text('{"step": 15, "checkp')  # a damaged disk
    with pytest.raises(ValueError, match=r"latest.json cannot be read .*Nothing was trained or deleted.*"
                                         r"move the damaged file aside \(mv .*latest.json .*latest.json.damaged\)"):
        pretraining.pretrain(steps=20, checkpoint_dir=folder, **run)
    assert sorted(path.name for path in folder.glob("ckpt-*.npz")) == kept
    (folder / "latest.json").rename(folder / "latest.json.damaged")  # the advice
    resumed = pretraining.pretrain(steps=20, change_steps=True, checkpoint_dir=folder, **run)
    assert resumed["resumed_from"] == 15 and resumed["step"] == 20  # not step 0: nothing lost
    # A folder whose checkpoints record nothing (bertlib 0.1) is refused, never started over and cleaned up.
    old = tmp_path / "old"
    old.mkdir()
    np.savez(old / "ckpt-00000010.npz", **{"model/00000": np.zeros(2)})
    with pytest.raises(ValueError, match=r"no latest.json, and none of them records its run.*Nothing was trained"):
        pretraining.pretrain(steps=20, checkpoint_dir=old, **run)
    assert [path.name for path in old.glob("ckpt-*")] == ["ckpt-00000010.npz"]


@pytest.mark.parametrize("written", ["format 1", "format 3"])
def test_a_folder_of_another_checkpoint_format_is_refused_and_left_untouched(small_run, tmp_path, written):
    """bertlib 0.1 wrote format 1: no "format" in latest.json, the settings at its top level, the variables by
    position. It is not read (nor a newer bertlib's format): refused before any training, nothing overwritten."""
    from bertlib.io.files import LOCK_NAME

    run = {**small_run, "strategy": "cpu", "verbose": False, "checkpoint_every": 5}
    folder = tmp_path / "run"
    folder.mkdir()
    if written == "format 1":
        np.savez(folder / "ckpt-00000010.npz", **{"model/00000": np.ones(2), "optimizer/00000": np.zeros(1)})
        record = {"step": 10, "checkpoint": "ckpt-00000010.npz", "preset": "tiny", "seq_length": 32}
        expected = r'format 1 \(its record has no "format": bertlib 0\.1\)'
    else:
        pretraining.pretrain(steps=10, checkpoint_dir=folder, **run)
        record = json.loads((folder / "latest.json").read_text())
        assert record["format"] == 2  # what this bertlib writes, and the message expects
        record["format"] = 3
        expected = "format 3"
    (folder / "latest.json").write_text(json.dumps(record))

    def contents():
        return {path.relative_to(folder): path.read_bytes() for path in sorted(folder.rglob("*"))
                if path.is_file() and path.name != LOCK_NAME}

    before = contents()
    with pytest.raises(ValueError, match=rf"{re.escape(str(folder))} holds checkpoints of {expected}, expected "
                                         r"format 2.*Nothing was trained or deleted"):
        pretraining.pretrain(steps=20, checkpoint_dir=folder, **run)
    assert contents() == before


def test_checkpoints_are_keyed_by_path_whatever_the_process_built_before(tmp_path):
    """Keras numbers seed generators and optimizers in creation order: the keys must not depend on that."""
    from bertlib.train.callbacks import CheckpointMismatch

    def pretrainer(next_sentence=True):
        model = BertPretrainer(BertBackbone(BertConfig.preset("tiny", vocabulary_size=64, max_sequence_length=32)),
                               next_sentence=next_sentence)
        model.compile(optimizer=schedule.make_optimizer(1e-3, 1, 10))
        model.optimizer.build(model.trainable_variables)
        return model

    first = pretrainer()
    for variable in first.variables + first.optimizer.variables:  # distinct values everywhere
        variable.assign(np.random.default_rng(len(variable.path)).integers(1, 9, variable.shape).astype(variable.dtype))
    saved = callbacks.save_checkpoint(tmp_path, first, {"step": 10})
    with np.load(saved) as stored:
        assert {"model/encoder_block_0/self_attention/query_key_value/kernel", "model/mlm_head/output_bias",
                "model/encoder_block_1/seed_generator/seed_generator_state",
                "optimizer/adam_w/iteration"} <= set(stored.files)
    keras.layers.Dropout(0.1), schedule.make_optimizer(1e-3, 1, 10)  # bump Keras' creation counters
    second = pretrainer()
    assert [v.path for v in second.variables] != [v.path for v in first.variables]  # other seed generator names
    callbacks.restore_checkpoint(tmp_path, second, {"checkpoint": saved.name})
    for mine, theirs in zip(second.variables + second.optimizer.variables, first.variables + first.optimizer.variables):
        np.testing.assert_array_equal(mine.numpy(), theirs.numpy(), err_msg=mine.path)
    with pytest.raises(CheckpointMismatch, match=r"holds 2 this run does not have \(e.g. nsp_head"):
        callbacks.restore_checkpoint(tmp_path, pretrainer(next_sentence=False), {"checkpoint": saved.name})


def test_resuming_with_other_masking_rates_is_refused(small_run, tmp_path):
    run = {**small_run, "strategy": "cpu", "verbose": False}
    pretraining.pretrain(steps=10, checkpoint_dir=tmp_path, **run)
    with pytest.raises(ValueError, match=r"different run \(mask_token_rate: 0.8 there, 0.5 now\)"):
        pretraining.pretrain(steps=20, checkpoint_dir=tmp_path, mask_token_rate=0.5, **run)


def test_resuming_with_other_steps_is_refused_unless_asked_and_then_says_what_changes(small_run, tmp_path, capsys):
    """`--steps` sets where the learning rate reaches 0 (A.2's linear decay), so resuming with another one changes
    the schedule of the steps already taken: refused in one line that says how (the rates from the released
    code's formula), and with --change-steps (extending a finished run) done and said."""
    from bertlib import cli

    folder = tmp_path / "run"
    pretraining.pretrain(steps=10, strategy="cpu", verbose=False, checkpoint_dir=folder, **small_run)
    finished = (folder / "latest.json").read_bytes()
    peak, warmup = small_run["learning_rate"], small_run["warmup_steps"]
    before, after = original_schedule(10, peak, warmup, 10), original_schedule(10, peak, warmup, 20)
    assert (before, after) == (0.0, pytest.approx(5e-4))
    command = _arguments(small_run, steps=20) + ["--strategy=cpu", f"--checkpoint-dir={folder}"]
    assert cli.main(command) == 1
    error = capsys.readouterr().err.strip()
    assert len(error.splitlines()) == 1 and error == (
        f"bertlib pretrain: {folder} holds a run of --steps 10, now at step 10; resuming it with --steps 20 would "
        f"change its schedule: the learning rate at step 10 would be {after:.3g} instead of {before:.3g} and reach 0 "
        "at step 20 instead of 10. Nothing was trained: resume with --steps 10, or pass --change-steps to train on "
        "with the new schedule.")
    assert (folder / "latest.json").read_bytes() == finished and not list(folder.glob("ckpt-*20.npz"))

    assert cli.main(command + ["--change-steps"]) == 0
    out = capsys.readouterr().out
    assert (f"resuming a run of --steps 10 with --steps 20 (--change-steps): the learning rate at step 10 is "
            f"{after:.3g} instead of 0 and reaches 0 at step 20 instead of 10") in out
    summary = json.loads(out.strip().splitlines()[-1])
    assert summary["resumed_from"] == 10 and summary["step"] == 20
    state = json.loads((folder / "latest.json").read_text())
    assert state["step"] == 20 and state["settings"]["steps"] == 20  # the run is now one of 20 steps
    assert cli.main(_arguments(small_run, steps=20) + ["--strategy=cpu", f"--checkpoint-dir={folder}"]) == 0


def test_the_steps_check_names_the_moved_long_phase():
    # Unit level, with A.2's 90/10 split: a run of 1,000 steps at step 500, resumed with 2,000.
    run = pretraining.PretrainSettings(steps=2000, learning_rate=1e-4, warmup_steps=100, long_fraction=0.1,
                                       checkpoint_dir="runs/base")
    latest = {"step": 500, "settings": {"steps": 1000}}
    rates = [original_schedule(500, 1e-4, 100, total) for total in (1000, 2000)]
    with pytest.raises(ValueError) as refused:
        settings.check_resumed_steps(run, latest)
    assert (f"the learning rate at step 500 would be {rates[1]:.3g} instead of {rates[0]:.3g} and reach 0 at step "
            "2000 instead of 1000, and the 512-token phase would start at step 1800 instead of 900.") \
        in str(refused.value)
    said = []
    settings.check_resumed_steps(dataclasses.replace(run, change_steps=True), latest, said.append)
    assert said == [f"resuming a run of --steps 1000 with --steps 2000 (--change-steps): the learning rate at step "
                    f"500 is {rates[1]:.3g} instead of {rates[0]:.3g} and reaches 0 at step 2000 instead of 1000, and "
                    "the 512-token phase starts at step 1800 instead of 900"]
    for same in (None, {"step": 500, "settings": {"steps": 2000}}):  # a fresh run, the same steps: nothing to say
        settings.check_resumed_steps(run, same, said.append)
    assert len(said) == 1


def test_pretraining_on_a_folder_that_lacks_shards_is_refused_before_training(small_run, tmp_path, capsys):
    """A `bertlib data` stopped midway (here: shard 2 of 3 never renamed into place, its temporary file left
    behind) leaves a folder that `bertlib pretrain` refuses in one line naming the missing shard, before any
    step and any checkpoint, in memory and streamed alike."""
    from bertlib import cli
    from bertlib.text import corpora, data
    from bertlib.text.tokenizer import WordPieceTokenizer

    tokenizer = WordPieceTokenizer.from_vocab_file(small_run["vocab"])
    arrays = data.build_pretraining_arrays(corpora.text_files([small_run["corpus"]]), tokenizer,
                                           max_seq_length=small_run["seq_length"], seed=0)
    shards = data.write_tfrecords(arrays, tmp_path / "shards", num_shards=3)
    shards[1].rename(tmp_path / "shards" / ".pretraining-00001-of-00003.x7k2p9.tfrecord.tmp")
    run = {**small_run, "corpus": f"tfrecords:{tmp_path / 'shards'}"}
    for stream in ([], ["--stream"]):
        command = _arguments(run, steps=10) + ["--strategy=cpu", f"--checkpoint-dir={tmp_path / 'run'}", *stream]
        assert cli.main(command) == 1
        error = capsys.readouterr().err.strip()
        assert len(error.splitlines()) == 1 and "1 of the 3 shards pretraining-*-of-00003.tfrecord are missing " \
            "(pretraining-00001-of-00003.tfrecord)" in error, error
        assert not list((tmp_path / "run").glob("ckpt-*")) and not (tmp_path / "run" / "latest.json").exists()
