"""Fine-tuning: heads, batching, INIT handling, the grid, and end-to-end runs on real data."""

import dataclasses
import json
import logging
import os
import subprocess
import sys

import keras
import numpy as np
import pytest

from bertlib.finetune import finetuning, tasks
from bertlib.finetune.tasks import _task
from bertlib.finetune.tasks.heads import BertClassifier, BertMultipleChoice, BertSpanExtractor
from bertlib.model import BertBackbone, BertPretrainer
from bertlib.model.config import BertConfig

SMALL = {"vocabulary_size": 64, "max_sequence_length": 32}


def _inputs(rng, shape, lengths):
    token_ids = rng.integers(5, 64, shape).astype("int32")
    padding_mask = (np.arange(shape[-1]) < np.asarray(lengths)[..., None]).astype("int32")
    return {"token_ids": token_ids * padding_mask, "segment_ids": np.zeros(shape, "int32"),
            "padding_mask": padding_mask}


@pytest.mark.parametrize("head", ["classifier", "span", "choice"])
def test_heads_shapes_and_keras_round_trip(tmp_path, head):
    rng = np.random.default_rng(0)
    backbone = BertBackbone(BertConfig.preset("tiny", **SMALL))
    if head == "classifier":
        model, inputs = BertClassifier(backbone, 3), _inputs(rng, (2, 16), [16, 9])
    elif head == "span":
        model, inputs = BertSpanExtractor(backbone), _inputs(rng, (2, 16), [16, 9])
    else:
        model, inputs = BertMultipleChoice(backbone), _inputs(rng, (2, 4, 16), [[16, 5, 9, 3]] * 2)
    outputs = model.predict_on_batch(inputs)
    expected = {"classifier": (2, 3), "span": (2, 16), "choice": (2, 4)}[head]
    shapes = [value.shape for value in outputs.values()] if isinstance(outputs, dict) else [outputs.shape]
    assert all(shape == expected for shape in shapes)
    path = tmp_path / "model.keras"
    model.save(path)
    restored = keras.saving.load_model(path)
    assert type(restored) is type(model) and isinstance(restored.backbone, BertBackbone)
    restored_outputs = restored.predict_on_batch(inputs)
    for name in (outputs if isinstance(outputs, dict) else [None]):
        np.testing.assert_allclose(outputs[name] if name else outputs,
                                   restored_outputs[name] if name else restored_outputs, atol=1e-5)


def test_multiple_choice_scores_each_choice_alone():
    rng = np.random.default_rng(1)
    backbone = BertBackbone(BertConfig.preset("tiny", **SMALL))
    model = BertMultipleChoice(backbone)
    inputs = _inputs(rng, (2, 4, 16), [[16, 5, 9, 3], [2, 8, 16, 7]])
    scores = model.predict_on_batch(inputs)
    classifier = BertClassifier(backbone, 1)
    classifier.get_layer("classifier").set_weights(model.get_layer("choice_scorer").get_weights())
    single = classifier.predict_on_batch({name: value[1] for name, value in inputs.items()})[:, 0]
    np.testing.assert_allclose(scores[1], single, atol=1e-5)


def test_bucketed_batches_cover_every_row_and_predictions_keep_order():
    lengths = np.array([3, 30, 7, 12, 5, 28, 1])
    batches = _task.length_bucketed_batches(lengths, 3, shuffle=True, seed=(0, 1))
    assert batches.shape == (3, 3) and set(batches.reshape(-1)) == set(range(7))
    rng = np.random.default_rng(2)
    model = BertClassifier(BertBackbone(BertConfig.preset("tiny", **SMALL)), 2)
    inputs = _inputs(rng, (7, 32), lengths)
    # Cut to each batch's length, run in length order, put back: the same as running every full row.
    np.testing.assert_allclose(_task.predict(model, inputs, batch_size=3), model.predict_on_batch(inputs),
                               atol=1e-5)


def test_predict_drops_tensorflows_retracing_warning_and_nothing_else():
    # One traced function per length bucket is predict's design; TensorFlow calls five traces in ten calls
    # excessive and warns (chapter 07's stored output showed it). Its detector warns twice a process at most, so
    # the test makes TensorFlow's own warning with a fresh detector, inside predict and after it.
    polymorphic = pytest.importorskip("tensorflow.python.eager.polymorphic_function.polymorphic_function")

    def tensorflow_retracing_warning():
        detector = polymorphic._FrequentTracingDetector()
        for _ in range(polymorphic.FREQUENT_TRACING_WARNING_THRESHOLD):
            detector.called_with_tracing("one_step_on_data", omit_warning=False)

    records = []
    handler = logging.Handler()
    handler.emit = records.append
    logger = logging.getLogger("tensorflow")
    logger.addHandler(handler)
    try:
        model = BertClassifier(BertBackbone(BertConfig.preset("tiny", **SMALL)), 2)
        real = model.predict_on_batch

        def predict_on_batch(batch):
            tensorflow_retracing_warning()
            logger.warning("another warning")
            return real(batch)

        model.predict_on_batch = predict_on_batch
        lengths = np.array([3, 30, 7, 12, 5, 28, 1])
        outputs = _task.predict(model, _inputs(np.random.default_rng(2), (7, 32), lengths), batch_size=3)
        assert outputs.shape == (7, 2)
        assert [record.getMessage() for record in records] == ["another warning"] * 3  # one per batch
        tensorflow_retracing_warning()  # after predict, TensorFlow's warning is shown again
        assert len(records) == 4 and "triggered tf.function retracing" in records[-1].getMessage()
    finally:
        logger.removeHandler(handler)


def test_parse_grid():
    paper = finetuning.parse_grid("")
    assert len(paper) == 18
    assert {run["batch_size"] for run in paper} == {16, 32}
    assert {run["learning_rate"] for run in paper} == {5e-5, 3e-5, 2e-5}
    assert {run["epochs"] for run in paper} == {2, 3, 4}
    subset = finetuning.parse_grid("batch_size=16,32;learning_rate=2e-5;epochs=2,3")
    assert len(subset) == 4 and {run["learning_rate"] for run in subset} == {2e-5}
    assert finetuning.parse_grid("epochs=1", batch_size=8, learning_rate=1e-4) == [
        {"batch_size": 8, "learning_rate": 1e-4, "epochs": 1}]
    with pytest.raises(ValueError, match=r"'dropout=0.1' is not NAME=V1,V2"):
        finetuning.parse_grid("dropout=0.1")
    with pytest.raises(ValueError, match=r"'epochs=two'"):
        finetuning.parse_grid("epochs=two")


def test_init_that_is_not_a_bert_checkpoint(tmp_path):
    with pytest.raises(ValueError, match=r"INIT 'giant' is neither a preset name"):
        finetuning.load_init("giant")
    other = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
    other.save(tmp_path / "other.keras")
    with pytest.raises(ValueError, match=r"other.keras holds a Sequential, not a BERT model"):
        finetuning.load_init(tmp_path / "other.keras")
    (tmp_path / "broken.keras").write_text("not a zip", encoding="utf-8")
    with pytest.raises(ValueError, match=r"broken.keras could not be read as a Keras model"):
        finetuning.load_init(tmp_path / "broken.keras")
    (tmp_path / "folder").mkdir()
    with pytest.raises(ValueError, match=r"folder is a folder but not a Hugging Face BERT checkpoint"):
        finetuning.load_init(tmp_path / "folder")


def test_pretrainer_file_with_its_vocabulary_is_an_init(tmp_path):
    vocabulary = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "good", "bad", "film"]
    (tmp_path / "vocab.txt").write_text("\n".join(vocabulary) + "\n", encoding="utf-8")
    backbone = BertBackbone(BertConfig.preset("tiny", vocabulary_size=len(vocabulary), max_sequence_length=32))
    BertPretrainer(backbone).save(tmp_path / "pretrainer.keras")
    loaded, tokenizer = finetuning.load_init(tmp_path / "pretrainer.keras")
    assert tokenizer.vocabulary == vocabulary
    np.testing.assert_array_equal(loaded.token_embedding.embeddings.numpy(),
                                  backbone.token_embedding.embeddings.numpy())
    (tmp_path / "vocab.txt").write_text("[PAD]\n[UNK]\n[CLS]\n[SEP]\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"vocabulary has 4 tokens but the model's embedding has 8 rows"):
        finetuning.load_init(tmp_path / "pretrainer.keras")


def test_cli_reports_bad_input_as_an_error(capsys, tmp_path, glue_dir):
    parser = __import__("argparse").ArgumentParser()
    finetuning.add_arguments(parser)
    args = parser.parse_args(["--task", "sst5", "--data-dir", str(glue_dir), "--init", "tiny"])
    assert finetuning.run(args) == 2
    assert "Unknown task 'sst5'" in capsys.readouterr().err
    args = parser.parse_args(["--task", "mrpc", "--data-dir", str(tmp_path), "--init", "tiny"])
    assert finetuning.run(args) == 2
    assert "MRPC/train.tsv not found" in capsys.readouterr().err
    with pytest.raises(ValueError, match=r"epochs must be a positive integer, got 0"):
        finetuning.finetune("sst2", glue_dir, "tiny", epochs=0)


@pytest.mark.slow
def test_cli_sst2_end_to_end(tmp_path, glue_dir):
    output_dir = tmp_path / "out"
    command = [sys.executable, "-m", "bertlib.cli", "finetune", "--task", "sst2", "--data-dir", str(glue_dir),
               "--init", "tiny", "--max-train-examples", "64", "--max-eval-examples", "48", "--epochs", "1",
               "--batch-size", "16", "--learning-rate", "1e-4", "--max-seq-length", "32",
               "--output-dir", str(output_dir)]
    env = {**os.environ, "KERAS_BACKEND": os.environ.get("KERAS_BACKEND", "tensorflow")}
    completed = subprocess.run(command, capture_output=True, text=True, env=env, timeout=300, check=False)
    assert completed.returncode == 0, completed.stderr[-2000:]
    result = json.loads(completed.stdout.strip().splitlines()[-1])
    assert result["task"] == "sst2" and 0.0 <= result["accuracy"] <= 1.0
    assert result["train_examples"] == 64
    predictions = (output_dir / "dev_predictions.tsv").read_text().splitlines()
    assert predictions[0] == "index\tprediction" and len(predictions) == 1 + 48
    assert {line.split("\t")[1] for line in predictions[1:]} <= {"0", "1"}
    assert json.loads((output_dir / "metrics.json").read_text())["accuracy"] == result["accuracy"]
    # The saved model (with the vocab.txt beside it) is itself a valid INIT.
    backbone, tokenizer = finetuning.load_init(output_dir / "model.keras")
    assert backbone.config.num_layers == 2 and tokenizer.vocabulary_size == backbone.config.vocabulary_size


@pytest.mark.slow
def test_minilm_folder_as_init(glue_dir, minilm_dir):
    from safetensors.numpy import load_file

    backbone, tokenizer = finetuning.load_init(minilm_dir)
    weights = load_file(str(minilm_dir / "model.safetensors"))
    np.testing.assert_array_equal(backbone.token_embedding.embeddings.numpy(),
                                  weights["embeddings.word_embeddings.weight"])
    assert tokenizer.vocabulary == (minilm_dir / "vocab.txt").read_text(encoding="utf-8").splitlines()
    result = finetuning.finetune("sst2", glue_dir, minilm_dir, epochs=1, batch_size=32, learning_rate=1e-4,
                               max_seq_length=32, max_train_examples=64, max_eval_examples=64, verbose=0)
    assert result["train_examples"] == 64 and 0.0 <= result["accuracy"] <= 1.0


@pytest.mark.slow
def test_squad_v2_end_to_end(tmp_path, squad_dir):
    path = squad_dir / "dev-v2.0-small.json"
    result = finetuning.finetune("squad_v2", path, "tiny", epochs=2, batch_size=8, learning_rate=1e-4,
                               max_seq_length=96, doc_stride=48, max_query_length=24, output_dir=tmp_path,
                               verbose=0)
    assert result["total"] == 14 and result["HasAns_total"] == 8 and result["NoAns_total"] == 6
    assert 0 <= result["exact"] <= result["f1"] <= 100
    predictions = json.loads((tmp_path / "predictions.json").read_text())
    examples, dataset = tasks.load_squad(path)
    contexts = {example.qid: example.context for example in examples}
    assert set(predictions) == set(contexts)
    assert all(answer in contexts[qid] for qid, answer in predictions.items())  # spans of the original text
    assert set(json.loads((tmp_path / "null_odds.json").read_text())) == set(contexts)
    from bertlib.finetune.metrics import squad_evaluate

    assert squad_evaluate(dataset, predictions)["f1"] == pytest.approx(result["f1"])


@pytest.mark.slow
def test_swag_and_stsb_end_to_end(tmp_path, glue_dir):
    rows = ["video-id,fold-ind,startphrase,sent1,sent2,gold-source,ending0,ending1,ending2,ending3,label"]
    rows += [f"v{i},{i},x,The man opens the door.,He,gold,walks in.,eats the door.,sings a door.,flies.,{i % 4}"
             for i in range(12)]
    for name in ("train.csv", "val.csv"):
        (tmp_path / name).write_text("\n".join(rows) + "\n", encoding="utf-8")
    swag = finetuning.finetune("swag", tmp_path, "tiny", epochs=1, batch_size=4, max_seq_length=32, verbose=0)
    assert set(swag) >= {"task", "accuracy"} and 0 <= swag["accuracy"] <= 1
    stsb = finetuning.finetune("stsb", glue_dir, "tiny", epochs=1, batch_size=16, max_seq_length=32,
                             max_train_examples=32, max_eval_examples=32, verbose=0, grid="epochs=1;batch_size=8,16")
    assert len(stsb["runs"]) == 2 and {"pearson", "spearman"} <= set(stsb)
    best = max(stsb["runs"], key=lambda run: (run["pearson"] + run["spearman"]) / 2)
    assert stsb["batch_size"] == best["batch_size"]


class _Recorder(keras.callbacks.Callback):
    """Writes down each call `train_epochs` makes, as `fit` would make them; stops after `stop_after` batches."""

    def __init__(self, stop_after=None):
        super().__init__()
        self.calls, self.stop_after, self.batches = [], stop_after, 0

    def on_train_begin(self, logs=None):
        self.calls.append(("train_begin", self.params["epochs"], self.params["steps"]))

    def on_epoch_end(self, epoch, logs=None):
        self.calls.append(("epoch_end", epoch, sorted(logs)))

    def on_train_batch_end(self, batch, logs=None):
        self.batches += 1
        assert np.isfinite(float(logs["loss"]))
        if self.batches == self.stop_after:
            self.model.stop_training = True

    def on_train_end(self, logs=None):
        self.calls.append(("train_end", self.batches))


def test_finetune_callbacks_see_every_batch_as_fit_would_and_change_no_number(glue_dir):
    settings = dict(epochs=2, batch_size=8, max_seq_length=32, max_train_examples=40, max_eval_examples=32,
                    learning_rate=1e-3, seed=3, verbose=0)
    plain = finetuning.finetune("sst2", glue_dir, "tiny", **settings)
    recorder = _Recorder()
    watched = finetuning.finetune("sst2", glue_dir, "tiny", callbacks=[recorder], **settings)
    assert watched["accuracy"] == plain["accuracy"]
    assert watched["last_epoch_train_loss"] == plain["last_epoch_train_loss"]
    steps = 5  # 40 rows in batches of 8
    assert recorder.calls == [("train_begin", 2, steps), ("epoch_end", 0, ["accuracy", "loss"]),
                              ("epoch_end", 1, ["accuracy", "loss"]),
                              ("train_end", 2 * steps)]
    stopper = _Recorder(stop_after=3)  # an early stop written for fit ends training here too
    finetuning.finetune("sst2", glue_dir, "tiny", callbacks=[stopper], **settings)
    assert stopper.calls[-1] == ("train_end", 3) and len(stopper.calls) == 3


# Settings objects and task objects: finetune composes parts and never branches on a task's name ---------------

def test_finetune_settings_make_the_command_line():
    import argparse
    import dataclasses

    from bertlib.train import settings

    parser = argparse.ArgumentParser()
    finetuning.add_arguments(parser)
    cli_fields = {f.name for f in dataclasses.fields(finetuning.FinetuneSettings) if f.metadata["cli"]}
    assert set(vars(parser.parse_args(["--task", "sst2", "--init", "tiny"]))) == cli_fields
    with pytest.raises(SystemExit):  # --init is required on the command line
        parser.parse_args(["--task", "sst2"])
    args = parser.parse_args(["--task", "mrpc", "--init", "tiny", "--grid", "--pooling", "mean", "--epochs", "2"])
    parsed = settings.from_arguments(finetuning.FinetuneSettings, args)
    assert parsed == finetuning.FinetuneSettings(task="mrpc", init="tiny", grid="", pooling="mean", epochs=2)
    assert len(parsed.runs()) == 18  # appendix A.3's grid
    for options, message in ((["--epochs", "0"], r"epochs must be a positive integer, got 0"),
                             (["--learning-rate=-1e-5"], r"learning_rate must be a number > 0, got -1e-05"),
                             (["--grid", "epochs=two"], r"'epochs=two'"),
                             (["--max-train-examples", "0"], r"max_train_examples must be a positive integer")):
        with pytest.raises(ValueError, match=message):
            settings.from_arguments(finetuning.FinetuneSettings, parser.parse_args(["--task", "sst2", "--init", "x",
                                                                                  *options]))


class ParityTask(tasks.Task):
    """A task bertlib has never heard of: is the number of token 7 in a sequence odd? One file's worth."""

    name = "parity"
    metric_names = ("accuracy",)
    output_patterns = ("parity.txt",)

    def read(self, data_dir, tokenizer, settings):
        rng = np.random.default_rng(settings.seed)
        inputs = _inputs(rng, (48, 16), rng.integers(4, 16, 48))
        labels = ((inputs["token_ids"] == 7).sum(axis=1) % 2).astype("int32")
        return tasks.TaskData(self.name, inputs, labels, inputs, labels, 48, report={"parity_rows": 48})

    def build_model(self, backbone, settings):
        return BertClassifier(backbone, 2, pooling=settings.pooling)

    def compile(self, model, optimizer, jit_compile="auto"):
        model.compile(optimizer=optimizer, loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                      jit_compile=jit_compile)

    def evaluate(self, model, data, settings):
        predictions = _task.predict(model, data.dev_inputs, 16).argmax(axis=-1)
        return {"accuracy": float((predictions == data.dev_targets).mean())}, predictions

    def write_predictions(self, folder, predictions, data, write_text):
        write_text(folder / "parity.txt", "".join(f"{int(p)}\n" for p in predictions))
        return ["parity.txt"]


def test_a_new_task_is_one_class_and_finetune_runs_it_end_to_end(tmp_path, monkeypatch):
    monkeypatch.setitem(tasks._TASKS, "parity", ParityTask())
    result = finetuning.finetune("parity", None, "tiny", epochs=1, batch_size=16, learning_rate=1e-4,
                               max_seq_length=16, output_dir=tmp_path, verbose=0, grid="batch_size=8,16")
    assert result["task"] == "parity" and 0 <= result["accuracy"] <= 1 and len(result["runs"]) == 2
    assert result["parity_rows"] == 48  # what the task reports joins the result
    assert len((tmp_path / "parity.txt").read_text().split()) == 48
    recorded = json.loads((tmp_path / "metrics.json").read_text())
    assert recorded["settings"]["task"] == "parity" and recorded["settings"]["grid"] == "batch_size=8,16"
    assert recorded["accuracy"] == result["accuracy"]
    # finetune's code names no task (its docstrings may): the names live in the task objects.
    import ast
    import inspect

    tree = ast.parse(inspect.getsource(finetuning))
    docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                  if isinstance(node, (ast.Module, ast.FunctionDef, ast.ClassDef))
                  and node.body and isinstance(node.body[0], ast.Expr)}
    strings = {node.value for node in ast.walk(tree)
               if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings}
    assert not strings & {*tasks.TASKS, "squad", "glue"}


# Where it trains: `bertlib pretrain`'s --strategy and --tpu -------------------------------------------------

def _options(add_arguments):
    import argparse

    parser = argparse.ArgumentParser()
    add_arguments(parser)
    return parser, {action.dest: action for action in parser._actions}


def test_strategy_option_is_pretrains_and_an_unknown_one_is_refused_before_any_work(capsys, tmp_path,
                                                                                     monkeypatch):
    from bertlib import cli
    from bertlib.train import distribute, pretraining, settings

    parser, ours = _options(finetuning.add_arguments)
    _, pretrains = _options(pretraining.add_arguments)
    declared = {field.name: field.metadata["help"] for field in dataclasses.fields(pretraining.PretrainSettings)}
    for name in ("strategy", "tpu"):  # one declaration: the same flag, choices and help (each with its default)
        assert ours[name].option_strings == pretrains[name].option_strings
        assert ours[name].choices == pretrains[name].choices
        assert ours[name].help.startswith(declared[name]) and pretrains[name].help.startswith(declared[name])
    assert tuple(ours["strategy"].choices) == distribute.STRATEGY_KINDS
    required = ["--task", "sst2", "--init", "tiny"]
    parse = lambda *options: settings.from_arguments(finetuning.FinetuneSettings,  # noqa: E731
                                                     parser.parse_args([*required, *options]))
    assert (parse().strategy, parse().tpu) == (None, None)  # no option: no placement, as before
    assert parse("--strategy", "cpu").strategy == "cpu"
    assert (parse("--strategy=tpu", "--tpu=local").strategy, parse("--strategy=tpu", "--tpu=local").tpu) == \
        ("tpu", "local")

    # Refused before any data is read or model built: on the command line by argparse, in Python by the settings.
    monkeypatch.setattr(finetuning, "load_init", lambda *args, **kwargs: pytest.fail("INIT loaded"))
    with pytest.raises(SystemExit) as exited:
        cli.main(["finetune", *required, "--data-dir", str(tmp_path / "no-data"), "--strategy", "warp"])
    assert exited.value.code == 2
    error = capsys.readouterr().err
    assert "--strategy: invalid choice: 'warp'" in error and "'mirrored-cpu'" in error, error
    args = parser.parse_args([*required, "--data-dir", str(tmp_path / "no-data")])
    args.strategy = "warp"  # past argparse (as a caller building the namespace): run() still names it
    assert finetuning.run(args) == 2
    assert "Unknown strategy 'warp'; expected one of ['auto', 'tpu'," in capsys.readouterr().err
    with pytest.raises(ValueError, match=r"Unknown strategy 'warp'; expected one of \['auto', .*'cpu'\]"):
        finetuning.finetune("sst2", tmp_path / "no-data", "tiny", strategy="warp", output_dir=tmp_path / "out")
    assert not (tmp_path / "out").exists()
    with pytest.raises(ValueError, match=r"tpu \('local'\) is used only with a strategy"):
        finetuning.FinetuneSettings(task="sst2", init="tiny", tpu="local")
    with pytest.raises(ValueError, match=r"strategy must be one of .* got <object"):
        finetuning.FinetuneSettings(task="sst2", init="tiny", strategy=object())


def test_cli_strategy_cpu_trains_inside_that_placement(capsys, tmp_path, monkeypatch):
    from bertlib import cli
    from bertlib.train import distribute

    monkeypatch.setitem(tasks._TASKS, "parity", ParityTask())
    placed, place = [], distribute.placement_of
    monkeypatch.setattr(distribute, "placement_of",
                        lambda strategy, tpu=None: placed.append((strategy, tpu)) or place(strategy, tpu=tpu))
    exit_code = cli.main(["finetune", "--task", "parity", "--init", "tiny", "--epochs", "1", "--batch-size", "16",
                          "--learning-rate", "1e-4", "--max-seq-length", "16", "--output-dir", str(tmp_path),
                          "--strategy", "cpu"])
    out = capsys.readouterr().out
    assert exit_code == 0, out
    assert placed == [("cpu", None)]  # finetune placed its run with distributed("cpu")
    result = json.loads(out.strip().splitlines()[-1])
    assert result["task"] == "parity" and 0 <= result["accuracy"] <= 1
    recorded = json.loads((tmp_path / "metrics.json").read_text())
    assert (recorded["settings"]["strategy"], recorded["settings"]["tpu"]) == ("cpu", None)
