"""Fine-tuning (§3.2 "Fine-tuning BERT", §4, appendix A.3) and the `bertlib finetune` command.

One small head goes on the pretrained encoder (`bertlib.finetune.tasks.heads`, figure 4) and every parameter is trained
end to end for a few epochs with a small learning rate: AdamW, warmup over the first 10% of steps, then linear
decay. A run's settings are one `FinetuneSettings` object (it gives `bertlib finetune` its options, and
`metrics.json` records it). `finetune()` composes a task object of `bertlib.finetune.tasks` (which reads its files,
builds its head, compiles, scores dev and writes its predictions) with the model from INIT and the training
loop, and returns the dev metrics; with a grid it runs appendix A.3's search and keeps the best run on dev.

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

import keras

from bertlib.finetune import tasks
from bertlib.finetune.tasks._task import batch_inputs, length_bucketed_batches, row_lengths
from bertlib.io.files import atomic_write, check_output_dir
from bertlib.io.files import write_text_atomically as _write_text
from bertlib.train import distribute, host, multihost, settings
from bertlib.train.pretraining import PretrainSettings, seeded
from bertlib.train.schedule import make_optimizer
from bertlib.train.settings import setting

WARMUP_FRACTION = 0.1  # the released fine-tuning code warms up over the first 10% of steps
# Appendix A.3: "Batch size: 16, 32; Learning rate (Adam): 5e-5, 3e-5, 2e-5; Number of epochs: 2, 3, 4".
PAPER_GRID = {"batch_size": (16, 32), "learning_rate": (5e-5, 3e-5, 2e-5), "epochs": (2, 3, 4)}
POOLINGS = ("cls", "mean")


# INIT: a preset, a .keras file or a Hugging Face folder -------------------------------------------------------

def load_init(init, seed=None):
    """`(backbone, tokenizer)` for INIT (see the module docstring); a clear error when INIT is none of them.

    `seed` (int) fixes a preset's random initial weights (`bertlib.train.pretraining.seeded`: the caller's random state
    is left as it was).
    """
    from bertlib.model.backbone import BertBackbone
    from bertlib.model.config import BertConfig
    from bertlib.text.data import default_tokenizer
    from bertlib.text.tokenizer import WordPieceTokenizer

    path = Path(init)
    if str(init) in BertConfig.preset_names() and not path.exists():
        tokenizer = default_tokenizer()
        with seeded(seed) if seed is not None else contextlib.nullcontext():
            backbone = BertBackbone(BertConfig.preset(str(init), vocabulary_size=tokenizer.vocabulary_size))
    elif path.is_dir():
        from bertlib.model.checkpoint import load_hf_checkpoint

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
    import bertlib.finetune.tasks.heads  # noqa: F401

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


# Settings -----------------------------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class FinetuneSettings:
    """Every setting of a fine-tuning run (§4, A.3), checked when the object is made.

    Example:
    >>> settings = FinetuneSettings(task="sst2", init="runs/tiny/backbone.keras", epochs=2)
    >>> finetune(settings)["accuracy"]
    """

    task: str = setting(help=f"one of {', '.join(tasks.TASKS)}")
    init: str | None = setting(None, "preset name (random init), .keras file from `bertlib pretrain`, or Hugging "
                               "Face folder", required=True)
    data_dir: str | None = setting(None, "GLUE folder (or the task's), SQuAD folder or JSON file, SWAG folder "
                                   "(default: the task's data found by name, or downloaded once and cached: "
                                   "`bertlib download`)")
    epochs: int = setting(3, "training epochs (A.3: 2, 3 or 4)")
    batch_size: int = setting(32, "examples per step (A.3: 16 or 32)")
    learning_rate: float = setting(2e-5, "peak learning rate (A.3: 5e-5, 3e-5 or 2e-5)")
    max_seq_length: int = setting(128, "tokens per sequence (pair)")
    seed: int = setting(0, "seed of the head, dropout, the training subset and the shuffling")
    output_dir: str | None = setting(None, "keep model.keras, predictions and metrics.json here (a new or empty "
                                     "folder)")
    overwrite: bool = setting(False, "replace the outputs of an earlier run in --output-dir")
    grid: str | None = setting(None, "hyperparameter search on dev: alone, appendix A.3's grid; or a subset such "
                               "as 'batch_size=16,32;learning_rate=2e-5;epochs=2,3'", nargs="?", const="",
                               metavar="SPEC")
    pooling: str = setting("cls", "GLUE head input: the pooled [CLS] vector (paper) or the mean of the tokens",
                           choices=POOLINGS)
    max_train_examples: int | None = setting(None, "train on a random subset", type=int)
    max_eval_examples: int | None = setting(None, "score the first N dev examples", type=int)
    doc_stride: int = setting(128, "SQuAD: tokens between paragraph windows")
    max_query_length: int = setting(64, "SQuAD: question tokens kept")
    n_best_size: int = setting(20, "SQuAD: start and end candidates per window")
    max_answer_length: int = setting(30, "SQuAD: the longest answer, in tokens")
    null_score_diff_threshold: float = setting(0.0, "SQuAD v2.0: answer '' when the null score beats the best "
                                               "span by more than this")
    na_prob_thresh: float = setting(1.0, "SQuAD v2.0 scoring, as evaluate-v2.0.py with null_odds.json as "
                                    "--na-prob-file")
    # Where to train: `bertlib pretrain`'s --strategy and --tpu, read from its declaration. The default differs:
    # None places nothing (the device Keras picks, or the caller's `with distributed():`).
    strategy: object = settings.same_setting(PretrainSettings, "strategy", None,
                                             note="default: none, the one device Keras picks")
    tpu: str | None = settings.same_setting(PretrainSettings, "tpu")
    jit_compile: object = setting("auto", "Keras' compile option: XLA ('auto') for long runs, False saves the "
                                  "compile time of very short ones", cli=False)
    verbose: int = setting(1, "print the mean training loss (and accuracy) after each epoch", cli=False)

    def __post_init__(self):
        owner = type(self).__name__
        tasks.check_task(self.task)
        settings.check_positive_int(owner, epochs=self.epochs, batch_size=self.batch_size,
                                    max_seq_length=self.max_seq_length, doc_stride=self.doc_stride,
                                    max_query_length=self.max_query_length, n_best_size=self.n_best_size,
                                    max_answer_length=self.max_answer_length)
        settings.check_optional_positive_int(owner, max_train_examples=self.max_train_examples,
                                             max_eval_examples=self.max_eval_examples)
        settings.check_number(owner, "learning_rate", self.learning_rate, 0, low_open=True)
        settings.check_int(owner, "seed", self.seed, 0)
        settings.check_choice(owner, "pooling", self.pooling, POOLINGS)
        for name in ("null_score_diff_threshold", "na_prob_thresh"):
            settings.check_number(owner, name, getattr(self, name))
        if self.strategy is not None:
            settings.check_strategy(owner, self.strategy, distribute.STRATEGY_KINDS)
        elif self.tpu is not None:
            raise ValueError(f"{owner}.tpu ({self.tpu!r}) is used only with a strategy ('tpu' or 'auto': "
                             "--strategy tpu --tpu NAME); with none, nothing is placed.")
        self.runs()  # a grid that does not parse is refused now

    def runs(self):
        """The hyperparameters of each run: one, or the grid's (`parse_grid`)."""
        if self.grid is None:
            return [{"epochs": self.epochs, "batch_size": self.batch_size, "learning_rate": self.learning_rate}]
        return parse_grid(self.grid, batch_size=self.batch_size, learning_rate=self.learning_rate,
                          epochs=self.epochs)


def _settings(given, by_name):
    if isinstance(given, FinetuneSettings):
        return dataclasses.replace(given, **by_name) if by_name else given
    return FinetuneSettings(task=given.name if isinstance(given, tasks.Task) else given, **by_name)


# Composition: data, model, training, evaluation ---------------------------------------------------------------

def prepare_data(task, data_dir, tokenizer, max_seq_length=128, max_train_examples=None, max_eval_examples=None,
                 seed=0, doc_stride=128, max_query_length=64):
    """Read and featurize the task's train and dev files (`Task.read`)."""
    run = FinetuneSettings(task=tasks.get(task).name, data_dir=data_dir, max_seq_length=max_seq_length,
                           max_train_examples=max_train_examples, max_eval_examples=max_eval_examples, seed=seed,
                           doc_stride=doc_stride, max_query_length=max_query_length)
    return tasks.get(task).read(data_dir, tokenizer, run)


def build_model(task, backbone, pooling="cls"):
    """The backbone with the task's head (§4, figure 4); `pooling` applies to GLUE classifiers."""
    task = tasks.get(task)
    return task.build_model(backbone, FinetuneSettings(task=task.name, pooling=pooling))


def evaluate(task, model, data, **settings_by_name):
    """Dev metrics and predictions: `(metrics dict, predictions)` (`Task.evaluate`)."""
    task = tasks.get(task)
    return task.evaluate(model, data, FinetuneSettings(task=task.name, **settings_by_name))


def train_and_evaluate(task, data, backbone, settings_=None, *, callbacks=None, placement=None,
                       **settings_by_name):
    """Fine-tune a fresh head on `backbone` and score dev: `(model, result dict, predictions)`.

    `settings_` is a `FinetuneSettings`, or its fields are given by name (`epochs=2, batch_size=16`).
    `callbacks`: Keras callbacks for the training passes (`train_epochs`), e.g. a progress display.
    `placement`: the run's `distribute.Placement` when it spans several processes (`train_epochs`; dev is then
    scored on this process's own copy of the trained model, `_local_copy`).
    """
    task = tasks.get(task)
    run = _settings(settings_ if settings_ is not None else task, settings_by_name)
    with seeded(run.seed):
        model = task.build_model(backbone, run)
    steps_per_epoch = -(-len(row_lengths(data.train_inputs)) // run.batch_size)
    total_steps = run.epochs * steps_per_epoch
    task.compile(model, make_optimizer(run.learning_rate, warmup_steps=int(WARMUP_FRACTION * total_steps),
                                       total_steps=total_steps), jit_compile=run.jit_compile)
    means, train_cpu_seconds = train_epochs(model, data, run, trim=task.trim_batches, callbacks=callbacks,
                                            placement=placement)
    if placement is not None and placement.processes > 1:
        model = _local_copy(model, placement)
    scores, predictions = task.evaluate(model, data, run)
    result = {"task": task.name, **scores, "epochs": run.epochs, "batch_size": run.batch_size,
              "learning_rate": run.learning_rate, "train_examples": data.train_examples, **data.report,
              "last_epoch_train_loss": means["loss"], "train_cpu_seconds": round(train_cpu_seconds, 1)}
    return model, result, predictions


def _local_copy(model, placement):
    """`model` with its weights on this process's devices alone: a run's model over several processes lives on
    every process's devices, where a `predict` of this process's dev rows cannot run alone. The copy goes through
    a `.keras` file, Keras' own format, in a temporary folder of this process."""
    with distribute.this_process_only(placement), tempfile.TemporaryDirectory(prefix="bertlib-finetune-") as folder:
        model.save(Path(folder) / "model.keras")
        return keras.saving.load_model(Path(folder) / "model.keras")


def train_epochs(model, data, run, trim=True, callbacks=None, placement=None):
    """`run.epochs` passes over the training rows in shuffled, length-bucketed batches (`train_on_batch`: the
    batches have different lengths, so no input pipeline is needed). Returns the last epoch's mean logs and the
    CPU seconds spent.

    `callbacks`: a list of `keras.callbacks.Callback`, called as `fit` calls them (train begin and end, each
    epoch, each batch with its logs; `params` holds `epochs` and `steps` per epoch), so a progress bar or an
    early stop written for `fit` works here too: a callback that sets `model.stop_training` ends the training
    after the batch it saw. Over several processes (`placement`), every process builds the same batches and
    passes its devices' rows of each (`distribute.local_rows`): one process with as many devices trains alike.
    """
    lengths = row_lengths(data.train_inputs)
    steps = -(-len(lengths) // run.batch_size)
    hooks = keras.callbacks.CallbackList(callbacks, model=model, epochs=run.epochs, steps=steps, verbose=0)
    start = time.process_time()
    model.stop_training = False
    hooks.on_train_begin()
    means = {}
    for epoch in range(run.epochs):
        hooks.on_epoch_begin(epoch)
        batches = length_bucketed_batches(lengths, run.batch_size, shuffle=True, seed=(run.seed, epoch))
        totals, done = {}, 0
        for step, rows in enumerate(batches):
            hooks.on_train_batch_begin(step)
            targets = ({name: array[rows] for name, array in data.train_targets.items()}
                       if isinstance(data.train_targets, dict) else data.train_targets[rows])
            batch = batch_inputs(data.train_inputs, rows, lengths, trim), targets  # cut to the whole batch's length
            if placement is not None:
                batch = next(distribute.local_rows(iter([batch]), placement, len(rows)))
            # train_on_batch returns this batch's loss and metrics; the epoch's means are summed here.
            logs = model.train_on_batch(*batch, return_dict=True)
            totals = {name: totals.get(name, 0.0) + float(value) for name, value in logs.items()}
            done += 1
            hooks.on_train_batch_end(step, logs)
            if model.stop_training:
                break
        means = {name: round(total / done, 4) for name, total in totals.items()}
        hooks.on_epoch_end(epoch, means)
        if run.verbose:
            print(f"epoch {epoch + 1}/{run.epochs}: mean {means} ({time.process_time() - start:.0f} s CPU)",
                  flush=True)
        if model.stop_training:
            break
    hooks.on_train_end(means)
    return means, time.process_time() - start


def finetune(task, data_dir=None, init=None, *, log=None, callbacks=None, return_model=False,
             **settings_by_name):
    """Fine-tune INIT on `task` and return the dev metrics (with a grid: of the best run, plus every run).

    Args:
        task: a `FinetuneSettings`, or the task's name: a GLUE task ("cola", "sst2", "mrpc", "stsb", "qqp",
            "mnli", "qnli", "rte", "wnli"), "squad_v1", "squad_v2" or "swag".
        data_dir: the GLUE folder (or the task's folder), the SQuAD folder (or one JSON file, used for train
            and dev), or the SWAG folder (train.csv, val.csv); None finds the task's data by name
            (`bertlib.io.downloads.find`), downloading it once into the cache if it is nowhere on this machine.
        init: a preset name, a `.keras` file or a Hugging Face BERT folder (module docstring).
        log: optional callable taking each finished run's result dict (the CLI prints them).
        callbacks: optional list of `keras.callbacks.Callback` for each run's training (`train_epochs`), e.g. a
            progress display; they see each batch's logs, and each run of a grid starts them again.
        return_model: also return the best fine-tuned model: `(result, model)`.
        **settings_by_name: the other `FinetuneSettings` fields (epochs, batch_size, learning_rate,
            max_seq_length, seed, output_dir, overwrite, grid, pooling, strategy, tpu, ...); with a
            `FinetuneSettings`, they replace its values. `strategy` is where to train, as `bertlib pretrain`
            takes it (`--strategy`): a kind of `bertlib.train.distribute.STRATEGY_KINDS` ("auto", "tpu", "gpus",
            "mirrored-cpu", "cpu", ...; `tpu` names the TPU), a `Placement` from
            `bertlib.train.distribute.distributed`, or a `tf.distribute.Strategy`. INIT is loaded, trained and scored
            inside that placement (TensorFlow: the strategy's scope; JAX: `keras.distribution.DataParallel`).
            None (the default) leaves the placement to the caller, e.g. an enclosing `with distributed():`. An
            unknown strategy is refused before any work, as every other bad setting is. `output_dir` must be
            empty or new (unless `overwrite`) and writable; both are checked before any work. If writing still
            fails at the end, the outputs go to a new temporary folder, named in a warning and in the result's
            "output_dir".

    Several processes (JAX, Keras' `KERAS_DISTRIBUTION_*` variables, as `bertlib pretrain`;
    `bertlib.train.multihost`) fine-tune one model: the strategy defaults to "auto" over every process's devices,
    each process feeds its rows of every batch and scores dev itself, and process 0 writes the outputs.

    Example:
    >>> finetune("sst2", None, "tiny", epochs=1, max_train_examples=64)["accuracy"]
    """
    if not isinstance(task, FinetuneSettings):
        settings_by_name = {"data_dir": data_dir, "init": init, **settings_by_name}
    run = _settings(task, settings_by_name)
    if run.init is None:
        raise ValueError("finetune needs INIT (init=, --init): a preset name, a .keras file or a Hugging Face folder.")
    task = tasks.get(run.task)
    processes = multihost.connect("bertlib finetune")  # None for one process; before JAX uses a device
    if processes is None:
        return _finetune(run, task, None, log, callbacks, return_model)
    if run.strategy is None:  # several processes train one model over all their devices
        run = dataclasses.replace(run, strategy="auto")
    with processes.failing_together():  # a process that fails alone ends at once: the others stop on its silence
        return _finetune(run, task, processes, log, callbacks, return_model)


def _finetune(run, task, processes, log, callbacks, return_model):
    """`finetune`'s work in this process, one of `processes` (`bertlib.train.multihost`) or the only one when that
    is None. Over several processes, every process reads the data, trains on its rows of each batch and scores dev
    on its own copy of the trained model; process 0 alone writes the outputs."""
    writer = processes is None or processes.is_writer
    output_dir = _checked_output_dir(run, processes)
    if processes is not None:
        processes.check_same("settings", settings.record(run))
    host.configure_cpu()
    scope = (distribute.placement_of(run.strategy, tpu=run.tpu) if run.strategy is not None
             else contextlib.nullcontext())
    placement = scope if isinstance(scope, distribute.Placement) else None
    _check_batches_split(run, placement)
    with scope:
        backbone, tokenizer = load_init(run.init, seed=run.seed)
    if run.max_seq_length > backbone.config.max_sequence_length:
        raise ValueError(f"max_seq_length={run.max_seq_length} exceeds the model's "
                         f"{backbone.config.max_sequence_length} learned positions.")
    data = task.read(run.data_dir, tokenizer, run)
    runs, best = [], None
    for index, hyperparameters in enumerate(run.runs()):
        with scope:
            if index > 0:
                backbone, _ = load_init(run.init, seed=run.seed)  # every run starts from INIT's weights
            model, result, predictions = train_and_evaluate(task, data, backbone,
                                                            dataclasses.replace(run, **hyperparameters),
                                                            callbacks=callbacks, placement=placement)
        runs.append(result)
        if log is not None:
            log(result)
        if best is None or task.selection_score(result) > task.selection_score(best[1]):
            best = (model, result, predictions)
    model, result, predictions = best
    if run.grid is not None:
        result = {**result, "runs": runs}
    if output_dir is not None and writer:
        written = write_with_fallback(output_dir, task.name, lambda folder: save_outputs(
            folder, task, model, tokenizer, result, predictions, data, run))
        if written != output_dir:
            result = {**result, "output_dir": str(written)}
    if processes is not None:
        processes.barrier("end of fine-tuning")  # every process returns once process 0 has written the outputs
    return (result, model) if return_model else result


def _checked_output_dir(run, processes):
    """`run.output_dir` checked (new or empty, unless `overwrite`, and writable) before any work; over several
    processes by process 0, the one that writes, and every process refuses alike when it cannot."""
    if run.output_dir is None:
        return None

    def check():
        return check_output_dir(run.output_dir, "--output-dir", overwrite=run.overwrite,
                                consequence="Nothing was trained.")

    if processes is None:
        return check()
    problem = None
    if processes.is_writer:
        try:
            check()
        except ValueError as error:
            problem = str(error)
    processes.agree("output folder", problem)
    return Path(run.output_dir)


def _check_batches_split(run, placement):
    """Over several processes, every batch of every run must split evenly over the replicas (each process feeds
    its devices' rows); a `multihost.RunRefused` naming the batch size otherwise."""
    if placement is None or placement.processes == 1:
        return
    for hyperparameters in run.runs():
        if hyperparameters["batch_size"] % placement.num_replicas:
            raise multihost.RunRefused(
                f"--batch-size {hyperparameters['batch_size']} does not split over the {placement.num_replicas} "
                f"replicas of the {placement.processes} processes; choose a multiple of {placement.num_replicas}.")


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


# Outputs -------------------------------------------------------------------------------------------------------

FILES_WRITTEN = ("model.keras", "vocab.txt", "metrics.json")  # besides the task's predictions


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



def save_outputs(output_dir, task, model, tokenizer, result, predictions, data, run=None):
    """`model.keras`, `vocab.txt` (so the model can be an INIT again), dev predictions and `metrics.json` (the
    result, and the run's settings under "settings").

    Earlier bertlib outputs in the folder are removed first, so it never mixes two runs (a different task
    writes different prediction files); `metrics.json` is written last, so its presence means complete.
    """
    task = tasks.get(task)
    output_dir = Path(output_dir)
    output_dir.mkdir(parents=True, exist_ok=True)
    for pattern in (*FILES_WRITTEN, *tasks.output_patterns()):
        for old in output_dir.glob(pattern):
            if old.is_dir():
                shutil.rmtree(old)
            else:
                old.unlink()
    atomic_write(output_dir / "model.keras", model.save)
    _write_text(output_dir / "vocab.txt", "".join(f"{token}\n" for token in tokenizer.vocabulary))
    task.write_predictions(output_dir, predictions, data, _write_text)
    record = {**result, "settings": settings.record(run)} if run is not None else result
    _write_text(output_dir / "metrics.json", json.dumps(record, indent=2) + "\n")


# Command line --------------------------------------------------------------------------------------------------

def add_arguments(parser):
    settings.add_arguments(parser, FinetuneSettings)


def run(args):
    def log(result):
        print(json.dumps({"run": {k: v for k, v in result.items() if k != "runs"}}), flush=True)

    try:
        run_settings = settings.from_arguments(FinetuneSettings, args)
        result = finetune(run_settings, log=log if args.grid is not None else None)
    except (ValueError, FileNotFoundError) as error:
        print(f"bertlib finetune: error: {error}", file=sys.stderr)
        return 2
    except RuntimeError as error:  # joining several processes (`multihost.connect`): a one-line reason
        print(f"bertlib finetune: error: {error}", file=sys.stderr)
        return 1
    print(json.dumps(result), flush=True)
    undefined = [name for name in tasks.get(args.task).metric_names if not math.isfinite(result[name])]
    if undefined:
        print(f"bertlib finetune: error: the dev metrics {undefined} are NaN: the model's outputs are NaN or "
              "constant, so this run has no score. Try a lower --learning-rate.", file=sys.stderr)
        return 1
    return 0
