"""Fine-tuning (§3.2 "Fine-tuning BERT", §4, appendix A.3) and the `bertlib finetune` command.

One small head goes on the pretrained encoder (`bertlib.tasks.heads`, figure 4) and every parameter is trained
end to end for a few epochs with a small learning rate: AdamW, warmup over the first 10% of steps, then linear
decay. `finetune()` reads a task's files (`bertlib.tasks`), builds the model from INIT, trains, and returns the
dev metrics of `bertlib.metrics`; with a grid it runs appendix A.3's search and keeps the best run on dev.

INIT is one of:
- a preset name ("tiny", ..., "base"): random initialization, the real uncased vocabulary;
- a `.keras` file from `bertlib pretrain` (a BertBackbone, a BertPretrainer or any model with a `.backbone`),
  with the `vocab.txt` beside it (else the real uncased vocabulary);
- a Hugging Face BERT folder (config.json, model.safetensors, vocab.txt).
"""

import contextlib
import dataclasses
import itertools
import json
import math
import shutil
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

from bertlib import distribute, metrics, tasks
from bertlib.files import atomic_write, check_writable_dir
from bertlib.files import write_text_atomically as _write_text

WARMUP_FRACTION = 0.1  # the released fine-tuning code warms up over the first 10% of steps
# Appendix A.3: "Batch size: 16, 32; Learning rate (Adam): 5e-5, 3e-5, 2e-5; Number of epochs: 2, 3, 4".
PAPER_GRID = {"batch_size": (16, 32), "learning_rate": (5e-5, 3e-5, 2e-5), "epochs": (2, 3, 4)}
LENGTH_MULTIPLE = 16  # batches are cut to their longest sequence rounded up to this: few distinct shapes
SORTING_POOL_BATCHES = 50  # training batches are formed from length-sorted pools of this many batches


# INIT: a preset, a .keras file or a Hugging Face folder -------------------------------------------------------

def load_init(init, seed=None):
    """`(backbone, tokenizer)` for INIT (see the module docstring); a clear error when INIT is none of them.

    `seed` (int) seeds Keras first, so a preset's random initial weights are the same on every run.
    """
    import keras

    from bertlib.config import BertConfig
    from bertlib.data import default_tokenizer
    from bertlib.model import BertBackbone
    from bertlib.tokenizer import WordPieceTokenizer

    if seed is not None:
        keras.utils.set_random_seed(seed)
    path = Path(init)
    if str(init) in BertConfig.preset_names() and not path.exists():
        tokenizer = default_tokenizer()
        backbone = BertBackbone(BertConfig.preset(str(init), vocabulary_size=tokenizer.vocabulary_size))
    elif path.is_dir():
        from bertlib.checkpoint import load_hf_checkpoint

        vocab_file = path / "vocab.txt"
        if not (path / "config.json").is_file() or not vocab_file.is_file():
            raise ValueError(f"INIT {path} is a folder but not a Hugging Face BERT checkpoint: expected "
                             "config.json, model.safetensors and vocab.txt in it.")
        backbone = load_hf_checkpoint(path)
        tokenizer = WordPieceTokenizer.from_vocab_file(vocab_file, lowercase=_hf_lowercase(path))
    elif path.suffix == ".keras" and path.is_file():
        backbone = _backbone_from_keras_file(path, BertBackbone)
        vocab_file = path.parent / "vocab.txt"
        tokenizer = WordPieceTokenizer.from_vocab_file(vocab_file) if vocab_file.is_file() else default_tokenizer()
    else:
        raise ValueError(f"INIT {str(init)!r} is neither a preset name {BertConfig.preset_names()}, an existing "
                         ".keras file saved by bertlib, nor a Hugging Face BERT folder (config.json, "
                         "model.safetensors, vocab.txt).")
    if tokenizer.vocabulary_size != backbone.config.vocabulary_size:
        raise ValueError(f"INIT {init}: the vocabulary has {tokenizer.vocabulary_size} tokens but the model's "
                         f"embedding has {backbone.config.vocabulary_size} rows; put the vocab.txt the model was "
                         "trained with beside it.")
    return backbone, tokenizer


def _hf_lowercase(path):
    config_file = path / "tokenizer_config.json"
    if config_file.is_file():
        return bool(json.loads(config_file.read_text(encoding="utf-8-sig")).get("do_lower_case", True))
    return True


def _backbone_from_keras_file(path, backbone_class):
    import keras

    import bertlib.model
    import bertlib.tasks.heads  # noqa: F401

    try:
        model = keras.saving.load_model(path, compile=False)
    except Exception as error:  # keras raises many kinds for a file it cannot read
        raise ValueError(f"INIT {path} could not be read as a Keras model ({type(error).__name__}: {error}); "
                         "expected a .keras file saved by `bertlib pretrain` or `bertlib finetune`.") from error
    backbone = model if isinstance(model, backbone_class) else getattr(model, "backbone", None)
    if not isinstance(backbone, backbone_class):
        raise ValueError(  # noqa: TRY004 (a wrong file, not a wrong argument type)
            f"INIT {path} holds a {type(model).__name__}, not a BERT model: expected a BertBackbone or a model "
            "with one (a BertPretrainer or a fine-tuned bertlib model).")
    return backbone


# Data: features and targets per task ---------------------------------------------------------------------------

@dataclasses.dataclass
class TaskData:
    """Model inputs and targets for train and dev, plus what evaluation needs to score dev predictions."""

    task: str
    train_inputs: dict
    train_targets: object
    dev_inputs: dict
    dev_targets: object
    train_examples: int  # questions for SQuAD, which has several windows (rows) per question
    dev_extra: dict = dataclasses.field(default_factory=dict)  # SQuAD examples, MNLI mismatched, label names


def _subset(count, limit, seed=None):
    """Indices of at most `limit` of `count` items: a seeded random sample (training) or the first ones."""
    if limit is None or limit >= count:
        return np.arange(count)
    if limit <= 0:
        raise ValueError(f"The example limit must be positive, got {limit}.")
    if seed is None:
        return np.arange(limit)
    return np.sort(np.random.default_rng(seed).permutation(count)[:limit])


def prepare_data(task, data_dir, tokenizer, max_seq_length=128, max_train_examples=None, max_eval_examples=None,
                 seed=0, doc_stride=128, max_query_length=64):
    """Read and featurize the task's train and dev files (see `bertlib.tasks`)."""
    tasks.check_task(task)
    if task in tasks.GLUE_TASKS:
        return _prepare_glue(task, data_dir, tokenizer, max_seq_length, max_train_examples, max_eval_examples, seed)
    if task == "swag":
        contexts, candidates, labels = tasks.load_swag(tasks.swag_file(data_dir, "train"))
        keep = _subset(len(labels), max_train_examples, seed)
        train_inputs = tasks.pack_swag([contexts[i] for i in keep], [candidates[i] for i in keep], tokenizer,
                                       max_seq_length)
        contexts, candidates, dev_labels = tasks.load_swag(tasks.swag_file(data_dir, "dev"))
        keep_dev = _subset(len(dev_labels), max_eval_examples)
        dev_inputs = tasks.pack_swag([contexts[i] for i in keep_dev], [candidates[i] for i in keep_dev], tokenizer,
                                     max_seq_length)
        return TaskData(task, train_inputs, labels[keep], dev_inputs, dev_labels[keep_dev], len(keep))
    # SQuAD
    train_examples, _ = tasks.load_squad(tasks.squad_file(task, data_dir, "train"))
    train_examples = [train_examples[i] for i in _subset(len(train_examples), max_train_examples, seed)]
    dev_examples, dev_dataset = tasks.load_squad(tasks.squad_file(task, data_dir, "dev"))
    dev_examples = [dev_examples[i] for i in _subset(len(dev_examples), max_eval_examples)]
    options = {"max_seq_length": max_seq_length, "doc_stride": doc_stride, "max_query_length": max_query_length}
    train = tasks.squad_features(train_examples, tokenizer, **options)
    dev = tasks.squad_features(dev_examples, tokenizer, **options)
    return TaskData(task, train.inputs, {"start_logits": train.start_positions, "end_logits": train.end_positions},
                    dev.inputs, None, len(train_examples), {"examples": dev_examples, "features": dev,
                                       "dataset": _only_questions(dev_dataset, {e.qid for e in dev_examples})})


def _prepare_glue(task, data_dir, tokenizer, max_seq_length, max_train_examples, max_eval_examples, seed):
    train = tasks.load_glue(task, data_dir, "train")
    train = train.take(_subset(len(train), max_train_examples, seed))
    dev = tasks.load_glue(task, data_dir, "dev")
    dev = dev.take(_subset(len(dev), max_eval_examples))
    extra = {"labels": tasks.GLUE_TASKS[task].labels}
    if task == "mnli":
        try:
            mismatched = tasks.load_glue(task, data_dir, "dev_mismatched")
        except FileNotFoundError:
            mismatched = None  # reported when present
        if mismatched is not None:
            mismatched = mismatched.take(_subset(len(mismatched), max_eval_examples))
            extra["mismatched"] = (tasks.pack_examples(mismatched, tokenizer, max_seq_length), mismatched.labels)
    return TaskData(task, tasks.pack_examples(train, tokenizer, max_seq_length), train.labels,
                    tasks.pack_examples(dev, tokenizer, max_seq_length), dev.labels, len(train), extra)


def _only_questions(dataset, qids):
    """The SQuAD "data" list reduced to the questions in `qids` (so a dev subset is scored on itself)."""
    articles = []
    for article in dataset:
        paragraphs = [{**paragraph, "qas": [q for q in paragraph["qas"] if q["id"] in qids]}
                      for paragraph in article["paragraphs"]]
        paragraphs = [paragraph for paragraph in paragraphs if paragraph["qas"]]
        if paragraphs:
            articles.append({**article, "paragraphs": paragraphs})
    return articles


def length_bucketed_batches(lengths, batch_size, shuffle=False, seed=0):
    """Row indices of each batch, every batch exactly `batch_size` rows (a short last batch is topped up,
    with rows from the start of the order), so the compiled step sees few distinct shapes.

    Most GLUE sentences are far shorter than max_seq_length, so a batch is cut to its longest row
    (`_batch_inputs`). Shuffled batches come from length-sorted pools of `SORTING_POOL_BATCHES` batches, in a
    random order; unshuffled ones (for prediction) are fully length-sorted.
    """
    count = len(lengths)
    if shuffle:
        rng = np.random.default_rng(seed)
        order = rng.permutation(count)
        pool = batch_size * SORTING_POOL_BATCHES
        order = np.concatenate([chunk[np.argsort(lengths[chunk], kind="stable")]
                                for chunk in np.split(order, range(pool, count, pool))])
    else:
        order = np.argsort(lengths, kind="stable")
    shortfall = -count % batch_size
    order = np.concatenate([order, np.resize(order, shortfall)])
    batches = order.reshape(-1, batch_size)
    return batches[rng.permutation(len(batches))] if shuffle else batches


def _lengths(inputs):
    mask = inputs["padding_mask"]  # (n, seq) or (n, choices, seq)
    return mask.reshape(len(mask), -1, mask.shape[-1]).sum(axis=-1).max(axis=-1)


def _batch_inputs(inputs, rows, lengths, trim=True):
    """The rows of `inputs`, cut to the batch's longest sequence rounded up to `LENGTH_MULTIPLE`."""
    length = inputs["padding_mask"].shape[-1]
    if trim:
        length = min(length, -(-int(lengths[rows].max()) // LENGTH_MULTIPLE) * LENGTH_MULTIPLE)
    return {name: array[rows][..., :length] for name, array in inputs.items()}


def _predict(model, inputs, batch_size, trim=True):
    """Model outputs for every row of `inputs`, in order (batches run length-sorted, then are put back)."""
    lengths = _lengths(inputs)
    batches = length_bucketed_batches(lengths, batch_size)
    outputs = [model.predict_on_batch(_batch_inputs(inputs, rows, lengths, trim)) for rows in batches]
    first = np.unique(batches.reshape(-1), return_index=True)[1]  # where each row first appears
    if isinstance(outputs[0], dict):
        return {name: np.concatenate([np.asarray(o[name]) for o in outputs])[first] for name in outputs[0]}
    return np.concatenate([np.asarray(output) for output in outputs])[first]


# Model, training and evaluation -------------------------------------------------------------------------------

def build_model(task, backbone, pooling="cls"):
    """The backbone with the task's head (§4, figure 4); `pooling` applies to GLUE classifiers."""
    from bertlib.tasks.heads import BertClassifier, BertMultipleChoice, BertSpanExtractor

    dropout = backbone.config.dropout
    if task in tasks.GLUE_TASKS:
        return BertClassifier(backbone, tasks.num_labels(task), dropout=dropout, pooling=pooling,
                              name=f"{task}_classifier")
    if task == "swag":
        return BertMultipleChoice(backbone, dropout=dropout, name="swag_multiple_choice")
    return BertSpanExtractor(backbone, name=f"{task}_span_extractor")


def _compile(model, task, learning_rate, total_steps, jit_compile="auto"):
    import keras

    from bertlib.training import make_optimizer

    optimizer = make_optimizer(learning_rate, warmup_steps=int(WARMUP_FRACTION * total_steps),
                               total_steps=total_steps)
    if task == "stsb":
        model.compile(optimizer=optimizer, loss=keras.losses.MeanSquaredError(), jit_compile=jit_compile)
    elif task.startswith("squad"):
        # The released code averages the start and end cross-entropies.
        cross_entropy = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
        model.compile(optimizer=optimizer, loss={"start_logits": cross_entropy, "end_logits": cross_entropy},
                      loss_weights={"start_logits": 0.5, "end_logits": 0.5}, jit_compile=jit_compile)
    else:
        model.compile(optimizer=optimizer, loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                      metrics=[keras.metrics.SparseCategoricalAccuracy(name="accuracy")], jit_compile=jit_compile)


def evaluate(task, model, data, batch_size=64, n_best_size=20, max_answer_length=30,
             null_score_diff_threshold=0.0, na_prob_thresh=1.0):
    """Dev metrics and predictions: `(metrics dict, predictions)`.

    SQuAD v2.0 is scored as the official script with `--na-prob-file null_odds.json --na-prob-thresh
    na_prob_thresh`: the null score differences serve as no-answer values, so the result also has
    `best_exact`, `best_f1` and their thresholds.
    """
    if task.startswith("squad"):
        features, examples = data.dev_extra["features"], data.dev_extra["examples"]
        logits = _predict(model, data.dev_inputs, batch_size, trim=False)
        answers, null_score_diffs = tasks.squad_predictions(
            examples, features, logits["start_logits"], logits["end_logits"], n_best_size=n_best_size,
            max_answer_length=max_answer_length, version_2=task == "squad_v2",
            null_score_diff_threshold=null_score_diff_threshold)
        version_2 = task == "squad_v2"
        scores = metrics.squad_evaluate(data.dev_extra["dataset"], answers, version_2=version_2,
                                        na_probs=null_score_diffs if version_2 else None,
                                        na_prob_thresh=na_prob_thresh)
        return scores, {"answers": answers, "null_score_diffs": null_score_diffs}
    outputs = _predict(model, data.dev_inputs, batch_size)
    predictions = outputs[:, 0] if task == "stsb" else outputs.argmax(axis=-1)
    if not np.isfinite(outputs).all():  # argmax would turn NaN logits into class 0: no score is honest
        warnings.warn(f"The model's dev outputs hold {int((~np.isfinite(outputs)).sum())} NaN or infinite "
                      "values; the metrics are NaN. Try a lower learning rate.", RuntimeWarning, stacklevel=2)
        return {name: math.nan for name in metrics.TASK_METRICS[task]}, {"dev": predictions}
    scores = metrics.compute_metrics(task, data.dev_targets, predictions)
    result = {"dev": predictions}
    if "mismatched" in data.dev_extra:
        inputs, labels = data.dev_extra["mismatched"]
        result["dev_mismatched"] = _predict(model, inputs, batch_size).argmax(axis=-1)
        scores["accuracy_mismatched"] = metrics.accuracy(labels, result["dev_mismatched"])
    return scores, result


def train_and_evaluate(task, data, backbone, epochs=3, batch_size=32, learning_rate=2e-5, seed=0, verbose=1,
                       jit_compile="auto", pooling="cls", **evaluation_options):
    """Fine-tune a fresh head on `backbone` and score dev: `(model, result dict, predictions)`."""
    import keras

    keras.utils.set_random_seed(seed)
    model = build_model(task, backbone, pooling=pooling)
    trim = not task.startswith("squad")  # span logits must keep every position
    lengths = _lengths(data.train_inputs)
    steps_per_epoch = -(-len(lengths) // batch_size)
    _compile(model, task, learning_rate, total_steps=epochs * steps_per_epoch, jit_compile=jit_compile)
    start = time.process_time()
    for epoch in range(epochs):
        batches = length_bucketed_batches(lengths, batch_size, shuffle=True, seed=(seed, epoch))
        totals = {}
        for rows in batches:
            targets = ({name: array[rows] for name, array in data.train_targets.items()}
                       if isinstance(data.train_targets, dict) else data.train_targets[rows])
            # train_on_batch returns this batch's loss and metrics; the epoch's means are summed here.
            logs = model.train_on_batch(_batch_inputs(data.train_inputs, rows, lengths, trim), targets,
                                        return_dict=True)
            totals = {name: totals.get(name, 0.0) + float(value) for name, value in logs.items()}
        means = {name: round(total / len(batches), 4) for name, total in totals.items()}
        if verbose:
            print(f"epoch {epoch + 1}/{epochs}: mean {means} ({time.process_time() - start:.0f} s CPU)", flush=True)
    train_cpu_seconds = time.process_time() - start
    scores, predictions = evaluate(task, model, data, **evaluation_options)
    result = {"task": task, **scores, "epochs": epochs, "batch_size": batch_size, "learning_rate": learning_rate,
              "train_examples": data.train_examples, "last_epoch_train_loss":
              means["loss"], "train_cpu_seconds": round(train_cpu_seconds, 1)}
    return model, result, predictions


def parse_grid(spec, batch_size=32, learning_rate=2e-5, epochs=3):
    """The runs of a hyperparameter search as a list of dicts (batch_size, learning_rate, epochs).

    An empty `spec` is appendix A.3's full grid (18 runs). Otherwise `spec` lists values per name, e.g.
    "batch_size=16,32;learning_rate=2e-5;epochs=2,3"; a name left out keeps the single value passed here.
    """
    values = {"batch_size": (batch_size,), "learning_rate": (learning_rate,), "epochs": (epochs,)}
    if not spec.strip():
        values = dict(PAPER_GRID)
    for part in filter(str.strip, spec.split(";")):
        name, equals, listed = part.partition("=")
        name = name.strip().replace("-", "_")
        if name not in PAPER_GRID or not equals:
            raise ValueError(f"Grid part {part!r} is not NAME=V1,V2 with NAME one of {list(PAPER_GRID)}.")
        cast = float if name == "learning_rate" else int
        try:
            values[name] = tuple(cast(value) for value in listed.split(",") if value.strip())
        except ValueError as error:
            raise ValueError(f"Grid part {part!r}: {error}; expected comma-separated numbers.") from error
        if not values[name] or min(values[name]) <= 0:
            raise ValueError(f"Grid part {part!r} needs at least one positive value.")
    names = list(PAPER_GRID)
    return [dict(zip(names, combination)) for combination in itertools.product(*(values[n] for n in names))]


def finetune(task, data_dir, init, epochs=3, batch_size=32, learning_rate=2e-5, max_seq_length=128, seed=0,
             output_dir=None, grid=None, max_train_examples=None, max_eval_examples=None, doc_stride=128,
             max_query_length=64, n_best_size=20, max_answer_length=30, null_score_diff_threshold=0.0,
             na_prob_thresh=1.0, verbose=1,
             jit_compile="auto", log=None, pooling="cls", strategy=None, return_model=False, overwrite=False):
    """Fine-tune INIT on `task` and return the dev metrics (with a grid: of the best run, plus every run).

    Args:
        task: a GLUE task ("cola", "sst2", "mrpc", "stsb", "qqp", "mnli", "qnli", "rte", "wnli"), "squad_v1",
            "squad_v2" or "swag".
        data_dir: the GLUE folder (or the task's folder), the SQuAD folder (or one JSON file, used for train
            and dev), or the SWAG folder (train.csv, val.csv); None finds the task's data by name
            (`bertlib.datasets.find`), downloading it once into the cache if it is nowhere on this machine.
        init: a preset name, a `.keras` file or a Hugging Face BERT folder (module docstring).
        epochs, batch_size, learning_rate: the fine-tuning hyperparameters (appendix A.3).
        max_seq_length: int, defaults to 128.
        seed: int. Seeds the head, dropout, the training subset and the shuffling.
        output_dir: optional folder for the model (`model.keras`), its `vocab.txt`, the dev predictions and
            `metrics.json`. It must be empty or new (unless `overwrite`) and writable; both are checked
            before any work. If writing still fails at the end, the outputs go to a new temporary folder,
            named in a warning and in the result's "output_dir".
        grid: None (one run), "" (appendix A.3's 18 runs) or a subset spec (`parse_grid`).
        max_train_examples: optional size of a seeded random training subset.
        max_eval_examples: optional number of the first dev examples to score.
        doc_stride, max_query_length, n_best_size, max_answer_length, null_score_diff_threshold: SQuAD.
        na_prob_thresh: SQuAD v2.0 scoring, the official script's `--na-prob-thresh` (`evaluate`).
        verbose: print the mean training loss (and accuracy) after each epoch.
        jit_compile: Keras' `compile` option; XLA ("auto") makes long runs faster, False saves the compile
            time of very short ones.
        log: optional callable taking each finished run's result dict (the CLI prints them).
        pooling: "cls" (the paper's pooled [CLS] vector) or "mean" (average of the real tokens), for GLUE.
            Sentence-embedding checkpoints such as all-MiniLM-L6-v2 never trained their [CLS] pooler.
        strategy: optional `tf.distribute` strategy (`bertlib.distribute.get_strategy`); INIT is loaded and
            trained inside its scope.
        return_model: also return the best fine-tuned model: `(result, model)`.
        overwrite: bool, defaults to False. Replace the outputs of an earlier run in `output_dir` (all of
            bertlib's output files there are removed first, so two runs' files never mix).

    Example:
    >>> finetune("sst2", None, "tiny", epochs=1, max_train_examples=64)["accuracy"]
    """
    tasks.check_task(task)
    for name, value in {"epochs": epochs, "batch_size": batch_size, "max_seq_length": max_seq_length}.items():
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be a positive integer, got {value!r}.")
    if not learning_rate > 0:
        raise ValueError(f"learning_rate must be positive, got {learning_rate!r}.")
    if task.startswith("squad"):
        for name, value in {"doc_stride": doc_stride, "max_query_length": max_query_length}.items():
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}.")
    if output_dir is not None:
        output_dir = check_output_dir(output_dir, overwrite)
    distribute.configure_cpu()
    scope = strategy.scope() if strategy is not None else contextlib.nullcontext()
    with scope:
        backbone, tokenizer = load_init(init, seed=seed)
    if max_seq_length > backbone.config.max_sequence_length:
        raise ValueError(f"max_seq_length={max_seq_length} exceeds the model's {backbone.config.max_sequence_length} "
                         "learned positions.")
    data = prepare_data(task, data_dir, tokenizer, max_seq_length, max_train_examples, max_eval_examples, seed,
                        doc_stride, max_query_length)
    settings = ([{"epochs": epochs, "batch_size": batch_size, "learning_rate": learning_rate}] if grid is None
                else parse_grid(grid, batch_size=batch_size, learning_rate=learning_rate, epochs=epochs))
    runs, best = [], None
    for index, setting in enumerate(settings):
        with scope:
            if index > 0:
                backbone, _ = load_init(init, seed=seed)  # every run starts from INIT's weights
            model, result, predictions = train_and_evaluate(
                task, data, backbone, seed=seed, verbose=verbose, jit_compile=jit_compile, pooling=pooling,
                n_best_size=n_best_size, max_answer_length=max_answer_length,
                null_score_diff_threshold=null_score_diff_threshold, na_prob_thresh=na_prob_thresh, **setting)
        runs.append(result)
        if log is not None:
            log(result)
        if best is None or metrics.selection_score(task, result) > metrics.selection_score(task, best[1]):
            best = (model, result, predictions)
    model, result, predictions = best
    if grid is not None:
        result = {**result, "runs": runs}
    if output_dir is not None:
        written = write_with_fallback(
            output_dir, task, lambda folder: save_outputs(folder, task, model, tokenizer, result, predictions, data))
        if written != output_dir:
            result = {**result, "output_dir": str(written)}
    return (result, model) if return_model else result


# Outputs -------------------------------------------------------------------------------------------------------

OUTPUT_PATTERNS = ("model.keras", "vocab.txt", "metrics.json", "predictions.json", "null_odds.json",
                   "*_predictions.tsv")  # what `save_outputs` writes


def check_output_dir(output_dir, overwrite=False):
    """Make sure `output_dir` can take a run's outputs before the run starts; returns it as a Path.

    It is created if missing. It must be a folder, writable, and hold no earlier outputs unless `overwrite`.
    """
    output_dir = Path(output_dir)
    if output_dir.exists() and not output_dir.is_dir():
        raise ValueError(f"--output-dir {output_dir} is a file; expected a folder (new or empty).")
    if output_dir.is_dir() and any(output_dir.iterdir()) and not overwrite:
        present = sorted(entry.name for entry in output_dir.iterdir())
        raise ValueError(f"--output-dir {output_dir} is not empty (it holds {present[:5]}"
                         f"{' ...' if len(present) > 5 else ''}); bertlib does not overwrite a run's outputs. "
                         "Choose a new folder, or pass --overwrite (overwrite=True) to replace them.")
    return check_writable_dir(output_dir, "--output-dir", "Nothing was trained.")


def write_with_fallback(output_dir, task, write):
    """`write(output_dir)`; if that fails (the folder was removed or made read-only meanwhile), `write` into
    a new temporary folder instead, and say where. Returns the folder written."""
    try:
        write(output_dir)
        return output_dir
    except OSError as error:
        fallback = Path(tempfile.mkdtemp(prefix=f"bertlib-{task}-"))
        write(fallback)
        message = (f"could not write the outputs to {output_dir} ({error}); they are saved in {fallback} "
                   "instead.")
        warnings.warn(message, RuntimeWarning, stacklevel=2)
        print(f"bertlib finetune: warning: {message}", file=sys.stderr, flush=True)
        return fallback

def save_outputs(output_dir, task, model, tokenizer, result, predictions, data):
    """`model.keras`, `vocab.txt` (so the model can be an INIT again), dev predictions and `metrics.json`.

    Earlier bertlib outputs in the folder are removed first, so it never mixes two runs (a different task
    writes different prediction files); `metrics.json` is written last, so its presence means complete.
    """
    output_dir.mkdir(parents=True, exist_ok=True)
    for pattern in OUTPUT_PATTERNS:
        for old in output_dir.glob(pattern):
            if old.is_dir():
                shutil.rmtree(old)
            else:
                old.unlink()
    atomic_write(output_dir / "model.keras", model.save)
    _write_text(output_dir / "vocab.txt", "".join(f"{token}\n" for token in tokenizer.vocabulary))
    if task.startswith("squad"):
        _write_text(output_dir / "predictions.json", json.dumps(predictions["answers"], indent=2) + "\n")
        if task == "squad_v2":
            _write_text(output_dir / "null_odds.json", json.dumps(predictions["null_score_diffs"], indent=2) + "\n")
    else:
        label_names = data.dev_extra.get("labels")
        for split, values in predictions.items():
            rows = [_prediction_text(value, label_names) for value in values]
            _write_text(output_dir / f"{split}_predictions.tsv",
                        "index\tprediction\n" + "".join(f"{i}\t{row}\n" for i, row in enumerate(rows)))
    _write_text(output_dir / "metrics.json", json.dumps(result, indent=2) + "\n")


def _prediction_text(value, label_names):
    if label_names is None:  # STS-B's score or SWAG's choice index
        return f"{value:.3f}" if isinstance(value, np.floating) else str(int(value))
    return label_names[int(value)]


# Command line --------------------------------------------------------------------------------------------------

def add_arguments(parser):
    parser.add_argument("--task", required=True, help=f"one of {', '.join(tasks.TASKS)}")
    parser.add_argument("--data-dir", default=None,
                        help="GLUE folder (or the task's), SQuAD folder or JSON file, SWAG folder (default: the "
                             "task's data found by name, or downloaded once and cached: `bertlib download`)")
    parser.add_argument("--init", required=True,
                        help="preset name (random init), .keras file from `bertlib pretrain`, or Hugging Face folder")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--learning-rate", type=float, default=2e-5)
    parser.add_argument("--max-seq-length", type=int, default=128)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--output-dir", default=None,
                        help="keep model.keras, predictions and metrics.json here (a new or empty folder)")
    parser.add_argument("--overwrite", action="store_true",
                        help="replace the outputs of an earlier run in --output-dir")
    parser.add_argument("--grid", nargs="?", const="", default=None, metavar="SPEC",
                        help="hyperparameter search on dev: alone, appendix A.3's grid; or a subset such as "
                             "'batch_size=16,32;learning_rate=2e-5;epochs=2,3'")
    parser.add_argument("--pooling", choices=("cls", "mean"), default="cls",
                        help="GLUE head input: the pooled [CLS] vector (paper) or the mean of the tokens")
    parser.add_argument("--max-train-examples", type=int, default=None, help="train on a random subset")
    parser.add_argument("--max-eval-examples", type=int, default=None, help="score the first N dev examples")
    parser.add_argument("--doc-stride", type=int, default=128, help="SQuAD: tokens between paragraph windows")
    parser.add_argument("--max-query-length", type=int, default=64, help="SQuAD: question tokens kept")
    parser.add_argument("--null-score-diff-threshold", type=float, default=0.0,
                        help="SQuAD v2.0: answer '' when the null score beats the best span by more than this")
    parser.add_argument("--na-prob-thresh", type=float, default=1.0,
                        help="SQuAD v2.0 scoring, as evaluate-v2.0.py with null_odds.json as --na-prob-file")


def run(args):
    def log(result):
        print(json.dumps({"run": {k: v for k, v in result.items() if k != "runs"}}), flush=True)

    try:
        result = finetune(args.task, args.data_dir, args.init, epochs=args.epochs, batch_size=args.batch_size,
                          learning_rate=args.learning_rate, max_seq_length=args.max_seq_length, seed=args.seed,
                          output_dir=args.output_dir, grid=args.grid, max_train_examples=args.max_train_examples,
                          max_eval_examples=args.max_eval_examples, doc_stride=args.doc_stride,
                          max_query_length=args.max_query_length,
                          null_score_diff_threshold=args.null_score_diff_threshold,
                          na_prob_thresh=args.na_prob_thresh, pooling=args.pooling,
                          log=log if args.grid is not None else None, overwrite=args.overwrite)
    except (ValueError, FileNotFoundError) as error:
        print(f"bertlib finetune: error: {error}", file=sys.stderr)
        return 2
    print(json.dumps(result), flush=True)
    undefined = [name for name in metrics.TASK_METRICS[args.task] if not math.isfinite(result[name])]
    if undefined:
        print(f"bertlib finetune: error: the dev metrics {undefined} are NaN: the model's outputs are NaN or "
              "constant, so this run has no score. Try a lower --learning-rate.", file=sys.stderr)
        return 1
    return 0
