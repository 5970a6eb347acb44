"""Pretraining BERT: a run's settings and the resumable training run (A.2), and `bertlib pretrain`.

The recipe of appendix A.2: batch 256 sequences, 1M steps, 90% of them at sequence length 128 and the rest at
512 (`bertlib.train.phases`), with the paper's optimizer and schedule (`bertlib.train.schedule`) and, where the
device is faster with it, mixed precision (`bertlib.train.precision`).

A run's settings are one `PretrainSettings` object: it is checked when made, it gives `bertlib pretrain` its
options, and the checkpoint records it. `pretrain()` composes the parts (our implementation choice):

* Placement: `bertlib.train.distribute.distributed` (a `tf.distribute` strategy on TensorFlow, `DataParallel`
  on JAX, one device on PyTorch); `BertPretrainer.fit` does the steps there.
* One Keras "epoch" is `log_every` steps of an endless dataset: Keras resets the metrics at each epoch, so
  every progress line (and `on_progress` record) holds the mean loss and accuracies of that interval.
* A sequence-length phase (128, then `long_seq_length` for the last `long_fraction` of the steps) is one
  `fit` call on data built at that length.
* What watches `fit` are Keras callbacks (`bertlib.train.callbacks`): the step count, the NaN stop, the progress
  log, TensorBoard and the checkpoints. Every `checkpoint_every` steps the variables (weights, dropout
  seeds, optimizer state) go to `ckpt-STEP.npz`, written atomically. Restarting the same command resumes
  there: the weights, the optimizer state and the data position (the pipeline is a pure function of seed
  and batch number) are all restored, so the run continues as if never stopped. A run holds its checkpoint
  folder with a lock, so a second run on the same folder is refused instead of mixing the two.
* At the end `backbone.keras` and `pretrainer.keras` are saved in the checkpoint folder
  (`bertlib finetune --init DIR/backbone.keras`).
* Several processes (hosts, on JAX; `bertlib.train.multihost`): started with Keras' `KERAS_DISTRIBUTION_*` variables,
  they first agree on the folder, its lock, the settings and the data, then train one model on one global batch,
  each process building and masking only its rows of it (the masks those rows get in the whole batch); process
  0 writes every file, every process restores from the same folder.

Example:
>>> result = pretrain(preset="tiny", corpus="python-docs", steps=600, checkpoint_dir="runs/tiny")
>>> result = pretrain(PretrainSettings(steps=600), tokenizer=my_tokenizer, config=my_config)
>>> result["mlm_accuracy"], result["nsp_accuracy"]

Command line: `bertlib pretrain --preset tiny --steps 600 --checkpoint-dir runs/tiny`; its last line is
a JSON summary.
"""

import contextlib
import dataclasses
import functools
import hashlib
import json
import math
import random
import socket
import sys
import tempfile
import time
from pathlib import Path

import keras

from bertlib.io import files
from bertlib.io.files import atomic_write
from bertlib.text.data import has_tensorflow
from bertlib.train import distribute, multihost, settings
from bertlib.train.callbacks import (
    Checkpointing,
    ProgressLog,
    RunProgress,
    StepCounter,
    StopOnNaN,
    TensorBoardScalars,
)
from bertlib.train.phases import check_corpus, describe_corpus, phase_arrays, phase_batches, phase_plan
from bertlib.train.precision import PRECISIONS, set_precision
from bertlib.train.schedule import make_optimizer, warmup_linear_decay
from bertlib.train.settings import setting

MAX_SEQ_LENGTH = 512  # the learned positions of every preset (BertConfig.max_sequence_length, §A.2)


# ---------------------------------------------------------------------------------------------- settings


@dataclasses.dataclass(frozen=True)
class PretrainSettings:
    """Every setting of a pretraining run (§3.1, §3.2, A.2), checked when the object is made.

    The fields marked `resume` are what a resumed run must keep (with the model's config and vocabulary):
    changing one in the middle would silently change the data, the schedule or the masking. The checkpoint
    records all of them. Defaults are a tiny run for a CPU; the paper's values are in each help text.

    Example:
    >>> settings = PretrainSettings(steps=600, checkpoint_dir="runs/tiny")
    >>> pretrain(settings)["mlm_accuracy"]
    """

    corpus: tuple = setting(("python-docs",), "'python-docs', 'wikitext103', text files (one sentence per line, "
                            "blank lines between documents), or tfrecords:DIR[,LONG_DIR] from `bertlib data`",
                            type=str, nargs="+", resume=True)
    preset: str = setting("tiny", "model size when no config is given: tiny, mini, small, medium, base, large")
    steps: int = setting(600, "total optimizer steps (the paper: 1,000,000)")
    change_steps: bool = setting(False, "resume a checkpoint with a --steps other than its own, which moves the "
                                 "learning rate's decay (and the long phase); without it such a resume is refused")
    batch_size: int = setting(16, "global batch, all replicas together (the paper: 256)", resume=True)
    seq_length: int = setting(128, "sequence length (the paper: 128 for 90%% of the steps)", resume="seq_lengths")
    long_seq_length: int = setting(512, "sequence length of the last --long-fraction of the steps",
                                   resume="seq_lengths")
    long_fraction: float = setting(0.0, "share of the steps at --long-seq-length (the paper: 0.1)",
                                   resume="seq_lengths")
    learning_rate: float = setting(1e-3, "peak learning rate (the paper: 1e-4)", resume=True)
    warmup_steps: int = setting(60, "steps of linear warmup (the paper: 10,000)", resume=True)
    weight_decay: float = setting(0.01, "decoupled weight decay (the paper: 0.01)", resume=True)
    max_predictions: int = setting(20, "masked-LM slots per sequence at --seq-length (the paper: 20 at 128)",
                                   resume=True)
    mask_token_rate: float = setting(0.8, "share of the selected tokens replaced by [MASK] (A.4.6: 0.8)",
                                     resume=True)
    random_token_rate: float = setting(0.1, "share replaced by a random token (A.4.6: 0.1)", resume=True)
    next_sentence: bool = setting(True, "masked LM only, the No NSP ablation of §5.1", flag="--no-nsp",
                                  resume=True)
    dropout: float = setting(0.1, "dropout of the model built from --preset (A.2: 0.1)")
    vocab: str | None = setting(None, "vocab.txt (default: the real uncased BERT vocabulary)")
    stream: bool = setting(False, "with tfrecords:DIR, stream the shards instead of loading them into memory",
                           resume=True)
    stream_readers: int = setting(0, "with --stream: deal the shards to N readers, each filling 1/N of every batch, "
                                  "so that a process reads only its readers' shards (0: one per process)",
                                  resume=True)
    seed: int = setting(0, "seed of the weights, NSP pairs, shuffling and masks", resume=True)
    checkpoint_dir: str | None = setting(None, "checkpoints, TensorBoard logs and the final .keras files; a "
                                         "folder with a checkpoint is resumed")
    checkpoint_every: int = setting(100, "steps between checkpoints")
    log_every: int = setting(25, "steps per progress line (the metrics are means over them)")
    strategy: object = setting("auto", "where to train (bertlib.train.distribute.distributed; in Python also a ready "
                               "tf.distribute.Strategy or Placement)", choices=distribute.STRATEGY_KINDS)
    tpu: str | None = setting(None, "TPU name, 'local' on a TPU VM; default: Colab's")
    precision: str | None = setting(None, "dtype policy (default: keep Keras' one)", choices=PRECISIONS,
                                    resume="dtype_policy")
    steps_per_execution: int = setting(1, "steps per call into the compiled graph (speed on TPUs)")

    def __post_init__(self):
        owner = type(self).__name__
        corpus = [self.corpus] if isinstance(self.corpus, (str, Path)) else list(self.corpus)
        if not corpus or not all(isinstance(name, (str, Path)) for name in corpus):
            raise ValueError(f"{owner}.corpus must name at least one corpus or file, got {self.corpus!r}.")
        object.__setattr__(self, "corpus", tuple(describe_corpus([str(name) for name in corpus])))
        if self.vocab is not None:
            object.__setattr__(self, "vocab", str(Path(self.vocab).resolve()))
        if self.checkpoint_dir is not None:
            object.__setattr__(self, "checkpoint_dir", str(self.checkpoint_dir))
        settings.check_positive_int(owner, steps=self.steps, batch_size=self.batch_size,
                                    seq_length=self.seq_length, long_seq_length=self.long_seq_length,
                                    checkpoint_every=self.checkpoint_every, log_every=self.log_every,
                                    max_predictions=self.max_predictions,
                                    steps_per_execution=self.steps_per_execution)
        for name in ("seq_length", "long_seq_length"):  # [CLS] A [SEP] B [SEP]
            settings.check_int(owner, name, getattr(self, name), 5, rule="an NSP pair needs at least 5 tokens")
        # The long phase's slots are scaled from these (`_predictions_for`) and then fit its longer sequences too.
        settings.check_int(owner, "max_predictions", self.max_predictions, 1, self.seq_length - 3,
                           rule=f"a sequence of seq_length {self.seq_length} has at most {self.seq_length - 3} "
                                "tokens to mask besides [CLS] and its two [SEP]")
        settings.check_number(owner, "learning_rate", self.learning_rate, 0, low_open=True)
        settings.check_int(owner, "warmup_steps", self.warmup_steps, 0)  # (<= steps: the schedule checks)
        settings.check_number(owner, "weight_decay", self.weight_decay, 0,
                              rule="a negative decay would push the weights away from zero (the paper: 0.01)")
        settings.check_number(owner, "long_fraction", self.long_fraction, 0, 1, high_open=True)
        settings.check_number(owner, "dropout", self.dropout, 0, 1, high_open=True)
        for name in ("mask_token_rate", "random_token_rate"):
            settings.check_number(owner, name, getattr(self, name), 0, 1)
        settings.check_number(owner, "mask_token_rate + random_token_rate",
                              self.mask_token_rate + self.random_token_rate, 0, 1,
                              rule="they are shares of the same selected tokens")
        settings.check_int(owner, "seed", self.seed, 0)
        settings.check_int(owner, "stream_readers", self.stream_readers, 0)
        if self.stream_readers and (not self.stream or self.batch_size % self.stream_readers):
            raise ValueError(f"{owner}.stream_readers={self.stream_readers} needs stream=True (--stream) and a "
                             f"batch_size ({self.batch_size}) it divides.")
        from bertlib.model.config import BertConfig

        settings.check_choice(owner, "preset", self.preset, BertConfig.preset_names())
        if self.precision is not None:
            settings.check_choice(owner, "precision", self.precision, PRECISIONS)
        settings.check_strategy(owner, self.strategy, distribute.STRATEGY_KINDS)
        plan = self.phase_plan
        too_long = [length for length, _, _ in plan if length > MAX_SEQ_LENGTH]
        if too_long:
            raise ValueError(f"Sequence length {too_long[0]} is more than the model's {MAX_SEQ_LENGTH} learned "
                             "positions (BertConfig.max_sequence_length, as in the paper); use at most "
                             f"{MAX_SEQ_LENGTH}.")
        if len(plan) > 1 and self.long_seq_length <= self.seq_length:
            raise ValueError(f"{owner}.long_seq_length ({self.long_seq_length}) must exceed seq_length "
                             f"({self.seq_length}).")
        boundaries = [self.log_interval] + [end for _, _, end in plan]
        if any(boundary % self.steps_per_execution for boundary in boundaries):
            raise ValueError(f"steps_per_execution ({self.steps_per_execution}) must divide log_every "
                             f"({self.log_interval}) and the step where each phase ends "
                             f"{[end for _, _, end in plan]}.")

    @property
    def phase_plan(self):
        """[(seq_length, first_step, end_step), ...]: the short phase, then the long one (A.2's 90% / 10%)."""
        return phase_plan(self.steps, self.long_fraction, self.seq_length, self.long_seq_length)

    @property
    def seq_lengths(self):
        """The sequence lengths the run trains at: what a resumed run must keep of the phases."""
        return sorted({length for length, _, _ in self.phase_plan})

    @property
    def dtype_policy(self):
        """The dtype policy the run computes in, what a resumed run must keep (float32 weights restored into a
        mixed-precision run would train on silently): Keras' global policy, which `pretrain` has set from
        `precision` ("auto" decided for the device) by the time it compares."""
        return keras.config.dtype_policy().name

    @property
    def log_interval(self):
        """Steps per logged interval: `log_every`, shortened so that every checkpoint ends an interval."""
        return math.gcd(self.log_every, self.checkpoint_every)

    def model_config(self, tokenizer):
        """The `BertConfig` of `preset` for `tokenizer`'s vocabulary, with this run's dropout."""
        from bertlib.model.config import BertConfig

        return BertConfig.preset(self.preset, vocabulary_size=tokenizer.vocabulary_size, dropout=self.dropout,
                                 max_sequence_length=max(MAX_SEQ_LENGTH, *self.seq_lengths))

    def tokenizer(self):
        """The tokenizer of `vocab`, or the real uncased BERT vocabulary."""
        from bertlib.text import data
        from bertlib.text.tokenizer import WordPieceTokenizer

        return WordPieceTokenizer.from_vocab_file(self.vocab) if self.vocab else data.default_tokenizer()


@contextlib.contextmanager
def seeded(seed):
    """Build models reproducibly without touching the caller's random state.

    Keras draws the seed of every new initializer and dropout layer from Python's `random` module when the
    layer is made (bertlib's layers make no unseeded random call after that), so inside the block new models
    get the weights and dropout seeds they would get after `keras.utils.set_random_seed(seed)`. On exit
    Python's `random` is what it was: a notebook's own draws do not depend on whether it called `pretrain` or
    `finetune` first, and NumPy's and the backends' global generators are never touched.
    """
    saved = random.getstate()
    random.seed(seed)
    try:
        yield
    finally:
        random.setstate(saved)


# ------------------------------------------------------------------------------------------------ pretrain


def pretrain(settings_=None, /, *, tokenizer=None, config=None, on_progress=None, verbose=True, **settings_by_name):
    """Pretrain a `BertPretrainer` with masked LM (+ NSP) and return a summary dict (§3.1, §3.2, A.2).

    Args:
        settings_: a `PretrainSettings`, or None to make one from `settings_by_name`.
        tokenizer: optional `WordPieceTokenizer`; defaults to the one of `settings.vocab`.
        config: optional `BertConfig`; defaults to `settings.preset` sized to the tokenizer's vocabulary.
        on_progress: optional callable receiving each progress record (a dict).
        verbose: bool, print progress lines.
        **settings_by_name: `PretrainSettings` fields (`pretrain(steps=600, corpus="python-docs")`); with
            `settings_`, they replace its values.

    Returns:
        dict: step, loss, mlm_loss, mlm_accuracy, nsp_loss, nsp_accuracy (last interval), tokens_per_second,
        seconds, checkpoint (path or None), backbone (the .keras path or None), resumed_from, replicas,
        processes (1, or the processes of a multi-host run), strategy, policy, history (list of progress records),
        and `pretrainer` (the model).
    """
    run = _settings(settings_, settings_by_name)
    processes = multihost.connect("bertlib pretrain")  # None for one process; before JAX uses a device
    if processes is None:
        return _pretrain(run, None, tokenizer, config, on_progress, verbose)
    with processes.failing_together():  # a process that fails alone ends at once: the others stop on its silence
        return _pretrain(run, processes, tokenizer, config, on_progress, verbose)


def _pretrain(run, processes, tokenizer, config, on_progress, verbose):
    """`pretrain`'s run, in this process (one of `processes`, or the only one when that is None)."""
    check_corpus(run.corpus)
    writer = processes is None or processes.is_writer  # process 0 writes the run's files, every process reads them
    say = functools.partial(print, flush=True) if verbose and writer else None
    folder = _checked_folder(run, processes)
    with contextlib.ExitStack() as stack:
        if folder is not None:
            _hold_folder(stack, folder, processes)
        placement = stack.enter_context(_placement(run))  # the whole run inside: build, restore and fit
        if run.stream and not run.stream_readers:  # one reader per process, recorded: a resume reads the same
            run = dataclasses.replace(run, stream_readers=placement.processes)
        stack.enter_context(_dtype_policy(run.precision, placement))
        model_name = _describe(config) if config is not None else run.preset
        tokenizer = tokenizer or run.tokenizer()
        config = config or run.model_config(tokenizer)
        _check_model_fits(run, tokenizer, config)
        progress = RunProgress(run.steps, warmup_linear_decay(run.learning_rate, run.warmup_steps, run.steps),
                               run.batch_size)
        fingerprint = run_fingerprint(run, config, tokenizer)
        checkpointing = Checkpointing(folder, fingerprint, settings.record(run), run.checkpoint_every, progress, say,
                                      writer=writer)
        latest = checkpointing.check(run.steps)  # before the data is built: a wrong resume fails fast
        settings.check_resumed_steps(run, latest, say)
        if processes is not None:
            _check_same_run(processes, run, fingerprint, latest)
        sources = phase_arrays(run.corpus, tokenizer, [length for length, _, _ in run.phase_plan], run.seed,
                               run.stream, run.stream_readers, run.batch_size)
        pretrainer = build_pretrainer(run, config, progress.schedule, placement)
        start_step = checkpointing.restore(pretrainer, latest)
        if say:
            if run.log_interval != run.log_every:
                say(f"logging every {run.log_interval} steps, so that a checkpoint falls every "
                    f"{run.checkpoint_every} steps")
            over = f" in {placement.processes} processes" if placement.processes > 1 else ""
            say(f"pretraining {model_name} ({config.num_params():,} backbone parameters) for {run.steps} steps, "
                f"batch {run.batch_size} over {placement.num_replicas} replica(s){over} ({placement.name}), "
                f"policy {keras.config.dtype_policy().name}")
        tensorboard = folder is not None and writer and has_tensorflow()  # its event files are written by tf.summary
        if folder is not None and writer and not has_tensorflow() and say:
            say("TensorFlow is not installed: no TensorBoard logs (the result's history keeps every progress record)")
        callbacks = [StepCounter(progress), StopOnNaN(progress), ProgressLog(progress, on_progress, say),
                     *([TensorBoardScalars(folder / "logs", progress)] if tensorboard else []), checkpointing]
        started = time.perf_counter()
        train_phases(pretrainer, run, sources, tokenizer, start_step, progress, callbacks, placement)
        result = _summary(progress, latest, start_step, time.perf_counter() - started, placement, pretrainer)
        if folder is not None:
            if progress.last_checkpoint is None and latest is not None:
                result["checkpoint"] = str(folder / checkpointing.restored["checkpoint"])
            with distribute.this_process_only(placement):
                exported = _save_final_models(folder, pretrainer) if writer else folder
            result["backbone"] = str(exported / "backbone.keras")
        if processes is not None:
            processes.barrier("end of pretraining")  # every process returns once process 0 has written the exports
        return result


def _checked_folder(run, processes):
    """The checkpoint folder, made and checked writable by every process before any long work (or None)."""
    if not run.checkpoint_dir:
        return None
    if processes is None:
        return files.check_writable_dir(run.checkpoint_dir, "--checkpoint-dir", "Nothing was trained.")
    problem = None
    try:
        files.check_writable_dir(run.checkpoint_dir, "--checkpoint-dir", "Nothing was trained.")
    except ValueError as error:
        problem = f"{error} [host {socket.gethostname()}]"
    processes.agree("checkpoint folder", problem)
    return Path(run.checkpoint_dir)


def _hold_folder(stack, folder, processes):
    """Hold the checkpoint folder for the run: its lock (`files.exclusive_lock`) refuses a second run. Over several
    processes, process 0 holds it in the name of the run, and the others check they see that very lock, i.e. that
    the folder is one folder shared by every process."""
    if processes is None:
        stack.enter_context(files.exclusive_lock(folder, "--checkpoint-dir", "bertlib pretrain"))
        return
    run_name = multihost.run_id(processes)
    problem = None
    if processes.is_writer:
        try:
            stack.enter_context(files.exclusive_lock(folder, "--checkpoint-dir", "bertlib pretrain",
                                                     run=f"run {run_name} of {processes.count} processes"))
        except files.FolderInUse as error:
            problem = str(error)
    processes.agree("checkpoint folder lock", problem)
    if not processes.is_writer and run_name not in files.lock_holder(folder):
        problem = (f"--checkpoint-dir {folder} on host {socket.gethostname()} is not the folder process 0 holds "
                   "(its lock names another run, or none): every process must see one shared folder (a network "
                   "file system mounted at the same path)")
    processes.agree("shared checkpoint folder", problem)


def _check_same_run(processes, run, fingerprint, latest):
    """Every process was started with the same settings, model, vocabulary and corpus, and finds the same
    checkpoint to resume: else one line names what differs, in every process."""
    record = {**settings.record(run), "model config": fingerprint["config"], "vocabulary": fingerprint["vocabulary"],
              "corpus contents": multihost.corpus_identity(run.corpus),
              "checkpoint to resume": latest["checkpoint"] if latest else None}
    processes.check_same("settings or data", record)


def _settings(given, by_name):
    if given is None:
        return PretrainSettings(**by_name)
    if not isinstance(given, PretrainSettings):
        raise TypeError(f"pretrain() takes a PretrainSettings or settings by name, got {given!r}.")
    return dataclasses.replace(given, **by_name) if by_name else given


def _placement(run):
    """Where the run trains: `bertlib.train.distribute.distributed(kind)`, or the strategy or placement given."""
    placement = distribute.placement_of(run.strategy, tpu=run.tpu)
    distribute.per_replica_batch_size(run.batch_size, placement)
    return placement


@contextlib.contextmanager
def _dtype_policy(precision, placement):
    """Keras' dtype policy for the run (`set_precision`), the caller's policy restored after."""
    previous = keras.config.dtype_policy()
    try:
        if precision is not None:
            set_precision(precision, placement)
        yield
    finally:
        keras.config.set_dtype_policy(previous)


def _check_model_fits(run, tokenizer, config):
    if config.vocabulary_size != tokenizer.vocabulary_size:
        raise ValueError(f"The config has {config.vocabulary_size} token embeddings but the tokenizer "
                         f"{tokenizer.vocabulary_size} tokens; size the config to the tokenizer's vocabulary.")
    if max(run.seq_lengths) > config.max_sequence_length:
        raise ValueError(f"Sequence length {max(run.seq_lengths)} is more than the config's "
                         f"{config.max_sequence_length} learned positions (max_sequence_length).")


def _describe(config):
    return f"L={config.num_layers} H={config.hidden_dim} A={config.num_heads}"


def run_fingerprint(run, config, tokenizer):
    """What a resumed run must share with its checkpoint: the model's config, the vocabulary and every
    setting marked `resume` (see `PretrainSettings`)."""
    vocabulary = hashlib.sha256("\n".join(tokenizer.vocabulary).encode("utf-8")).hexdigest()[:16]
    return {"config": config.to_dict(), **settings.resume_fields(run), "vocabulary": vocabulary}


def build_pretrainer(run, config, schedule, placement):
    """A compiled `BertPretrainer` with its optimizer built (so a checkpoint can be restored into it); call it
    inside the run's placement."""
    from bertlib.model.backbone import BertBackbone, BertPretrainer

    with seeded(run.seed):
        pretrainer = BertPretrainer(BertBackbone(config), next_sentence=run.next_sentence)
        pretrainer.compile(optimizer=make_optimizer(schedule, weight_decay=run.weight_decay),
                           steps_per_execution=run.steps_per_execution, jit_compile=_use_xla(placement, config.dropout))
        pretrainer.optimizer.build(pretrainer.trainable_variables)
    return pretrainer


def train_phases(pretrainer, run, sources, tokenizer, start_step, progress, callbacks, placement):
    """One `fit` per sequence-length phase, from `start_step` (earlier phases and steps are skipped); call it
    inside the run's placement."""
    from bertlib.text.masking import MaskedLMMasker

    for index, ((seq_length, phase_start, phase_end), source) in enumerate(zip(run.phase_plan, sources)):
        if start_step >= phase_end:
            continue
        first = max(start_step, phase_start)
        masker = None if "mask_ids" in source or source.get("static_mask") else MaskedLMMasker(
            tokenizer.vocabulary_size, tokenizer.mask_id, tokenizer.special_token_ids,
            max_predictions=_predictions_for(run.max_predictions, run.seq_length, seq_length),
            mask_token_rate=run.mask_token_rate, random_token_rate=run.random_token_rate)
        # Over several processes, each builds and masks only its rows of every global batch.
        dataset = phase_batches(source, run.batch_size, masker, seed=run.seed + index,
                                start_batch=first - phase_start, next_sentence=run.next_sentence,
                                rows=distribute.process_rows(placement, run.batch_size), readers=run.stream_readers)
        if distribute.is_tpu(placement) and hasattr(dataset, "element_spec"):  # numpy batches: static by design
            distribute.check_static_shapes(dataset)
        progress.start_phase(index, seq_length, first, phase_end)
        pretrainer.fit(dataset, steps_per_epoch=run.log_interval,
                       epochs=math.ceil((phase_end - first) / run.log_interval), callbacks=callbacks, verbose=0,
                       shuffle=False)


def _summary(progress, latest, start_step, seconds, placement, pretrainer):
    result = {"step": progress.steps, "resumed_from": start_step if latest is not None else None}
    last = progress.history[-1] if progress.history else (latest or {}).get("last_interval", {})
    for key in ("loss", "mlm_loss", "mlm_accuracy", "nsp_loss", "nsp_accuracy"):
        result[key] = last.get(key)
    # Steady-state speed: the first interval of each fit includes compiling the step.
    timed = [record for record in progress.history[1:] if record["tokens_per_second"]] or progress.history
    tokens = sum(record["tokens_per_second"] * record["seconds"] for record in timed)
    result["tokens_per_second"] = tokens / sum(record["seconds"] for record in timed) if timed else None
    result.update(seconds=seconds, checkpoint=str(progress.last_checkpoint) if progress.last_checkpoint else None,
                  backbone=None, replicas=placement.num_replicas, processes=placement.processes,
                  strategy=placement.name,
                  policy=keras.config.dtype_policy().name, history=progress.history, pretrainer=pretrainer)
    return result


def _use_xla(placement, dropout):
    """XLA everywhere but TensorFlow on CPUs with dropout or with several replicas. With dropout XLA draws the
    random masks so slowly that a step takes 2-4x longer (a course tiny model, 2 layers, H=64, batch 32 x 64: 122 ms
    against 29-54 ms a step); without dropout it pays (24 ms against 41-47 ms; bench/tiny_pretrain.py). A
    `MirroredStrategy` over logical CPUs keeps each replica's variables on its own device, which an XLA step cannot
    read. JAX always compiles."""
    if keras.backend.backend() != "tensorflow":
        return "auto"
    if any(device != "CPU" for device in placement.devices):
        return "auto"
    return not dropout and placement.num_replicas == 1


def _predictions_for(max_predictions, seq_length, phase_length):
    """Slots for the long phase: the same 15% share of the longer sequence (20 at 128 -> 80 at 512)."""
    if phase_length == seq_length:
        return max_predictions
    return math.ceil(max_predictions * phase_length / seq_length)


def _save_final_models(checkpoint_dir, pretrainer):
    """`backbone.keras` and `pretrainer.keras` into the checkpoint folder or, if that fails, a new temporary
    folder (named on stderr). Returns the folder written."""
    try:
        atomic_write(checkpoint_dir / "backbone.keras", pretrainer.backbone.save)
        atomic_write(checkpoint_dir / "pretrainer.keras", pretrainer.save)
        return checkpoint_dir
    except OSError as error:
        fallback = Path(tempfile.mkdtemp(prefix="bertlib-pretrain-"))
        atomic_write(fallback / "backbone.keras", pretrainer.backbone.save)
        atomic_write(fallback / "pretrainer.keras", pretrainer.save)
        print(f"bertlib pretrain: warning: could not write the final models to {checkpoint_dir} ({error}); "
              f"they are saved in {fallback} instead.", file=sys.stderr, flush=True)
        return fallback


# --------------------------------------------------------------------------------------------------- CLI


def add_arguments(parser):
    settings.add_arguments(parser, PretrainSettings)


def run(args):
    try:
        result = pretrain(settings.from_arguments(PretrainSettings, args))
    except (FloatingPointError, ValueError, RuntimeError, OSError) as error:
        print(f"bertlib pretrain: {error}", file=sys.stderr)
        return 1
    summary = {key: value for key, value in result.items() if key not in ("history", "pretrainer")}
    print(json.dumps(summary), flush=True)
    return 0
