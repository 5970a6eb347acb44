"""What watches a pretraining run's `fit`: Keras callbacks for the step count, the NaN stop, the progress log,
TensorBoard and the checkpoints that let a killed run resume as if never stopped.

`bertlib.train.pretraining.pretrain` passes them to every phase's `fit` in this order (each reads what the ones before
it set in the shared `RunProgress`):

    StepCounter  ->  StopOnNaN  ->  ProgressLog  ->  TensorBoardScalars  ->  Checkpointing

Keras' own callbacks are used where they fit: `StopOnNaN` is Keras' `TerminateOnNaN` with the global step and
advice in its error. Two do not fit, so these are our own:

- `keras.callbacks.BackupAndRestore` writes its backup in place (a kill during the write leaves a broken file,
  where ours are written beside and renamed), keeps one previous copy, counts epochs of one `fit` call (a run
  here is several, one per sequence-length phase) and restores in `on_train_begin`, after the data is fixed,
  so the data could not follow the checkpoint that actually loaded. `Checkpointing.restore` runs before the
  data is built, falls back to the newest older checkpoint that reads, and also restores the dropout layers'
  seed states. Its files are `.npz`: a zip archive, whose CRC-32 catches a flipped bit that HDF5 would load.
- `keras.callbacks.TensorBoard` writes through `tf.summary.scalar`, which needs the `tensorboard` package,
  and indexes by epoch of one `fit`; `TensorBoardScalars` writes the same event files with the raw
  `tf.summary.write` at the global step.
"""

import json
import re
import sys
import time
import zipfile
import zlib
from pathlib import Path

import keras
import numpy as np

from bertlib.io.files import atomic_write, write_text_atomically

CHECKPOINTS_KEPT = 2
# Variables keyed by their path, the run's record in latest.json and in every checkpoint file. Another format
# (bertlib 0.1's, with no "format" in latest.json) is refused, never read or overwritten.
CHECKPOINT_FORMAT = 2


class RunProgress:
    """What the callbacks of one run share: the global step, the current phase and the logged intervals."""

    def __init__(self, steps, schedule, batch_size):
        self.steps = steps
        self.schedule = schedule
        self.batch_size = batch_size
        self.step = 0
        self.phase, self.seq_length, self.phase_end = 0, None, steps
        self.interval_start_step, self.interval_started = 0, time.perf_counter()
        self.history = []  # one record per logged interval
        self.last_checkpoint = None

    def start_phase(self, index, seq_length, first_step, end_step):
        self.phase, self.seq_length, self.step, self.phase_end = index, seq_length, first_step, end_step

    def learning_rate_at(self, step):
        return float(self.schedule(step))


class StepCounter(keras.callbacks.Callback):
    """Counts global steps over the phases and ends a phase's `fit` at the phase's last step."""

    def __init__(self, progress):
        super().__init__()
        self.progress = progress

    def on_epoch_begin(self, epoch, logs=None):
        self.progress.interval_start_step = self.progress.step
        self.progress.interval_started = time.perf_counter()

    def on_train_batch_end(self, batch, logs=None):
        # With steps_per_execution > 1, Keras reports the last batch of each execution.
        self.progress.step = self.progress.interval_start_step + batch + 1
        if self.progress.step >= self.progress.phase_end:
            self.model.stop_training = True


class StopOnNaN(keras.callbacks.TerminateOnNaN):
    """Keras' `TerminateOnNaN` that raises `FloatingPointError` with the global step and what to try.

    The run stops before the interval is logged or checkpointed, so the last checkpoint holds finite weights.
    """

    def __init__(self, progress):
        super().__init__(raise_error=True)
        self.progress = progress

    def on_batch_end(self, batch, logs=None):
        try:
            super().on_batch_end(batch, logs)
        except RuntimeError as error:
            step = self.progress.step
            raise FloatingPointError(
                f"The loss became {float(logs['loss'])} at step {step} (learning rate "
                f"{self.progress.learning_rate_at(step):.3g}); training stopped. Try a lower --learning-rate, "
                "more --warmup-steps or float32 (--precision float32).") from error


class ProgressLog(keras.callbacks.Callback):
    """One record per logging interval (a Keras epoch: its metrics are the interval's means), printed with
    `say`, kept in `progress.history` and passed to `on_progress`."""

    def __init__(self, progress, on_progress=None, say=None):
        super().__init__()
        self.progress, self.on_progress, self.say = progress, on_progress, say

    def on_epoch_end(self, epoch, logs=None):
        progress = self.progress
        logs = {key: float(value) for key, value in (logs or {}).items()}
        seconds = time.perf_counter() - progress.interval_started
        tokens = (progress.step - progress.interval_start_step) * progress.batch_size * progress.seq_length
        record = {"step": progress.step, "seq_length": progress.seq_length, "loss": logs.get("loss"),
                  "mlm_loss": logs.get("mlm_logits_loss", logs.get("loss")),
                  # without NSP the model has one output, and Keras logs its metric without the output name
                  "mlm_accuracy": logs.get("mlm_logits_accuracy", logs.get("accuracy")),
                  "nsp_loss": logs.get("nsp_logits_loss"), "nsp_accuracy": logs.get("nsp_logits_accuracy"),
                  "learning_rate": progress.learning_rate_at(progress.step),
                  "tokens_per_second": tokens / seconds if seconds > 0 else None, "seconds": seconds}
        progress.history.append(record)
        if self.say is not None:
            nsp = f"  nsp_acc {record['nsp_accuracy']:.3f}" if record["nsp_accuracy"] is not None else ""
            self.say(f"step {record['step']}/{progress.steps}  seq {record['seq_length']}  loss {record['loss']:.4f}  "
                     f"mlm_loss {record['mlm_loss']:.4f}  mlm_acc {record['mlm_accuracy']:.4f}{nsp}  "
                     f"lr {record['learning_rate']:.3g}  {record['tokens_per_second']:,.0f} tokens/s")
        if self.on_progress is not None:
            self.on_progress(record)


class TensorBoardScalars(keras.callbacks.Callback):
    """Each logged interval's numbers as TensorBoard scalars at the global step, in `folder`."""

    def __init__(self, folder, progress):
        super().__init__()
        import tensorflow as tf

        self.progress = progress
        self.writer = tf.summary.create_file_writer(str(folder))

    def on_epoch_end(self, epoch, logs=None):
        import tensorflow as tf
        from tensorflow.core.framework import summary_pb2

        record = self.progress.history[-1]
        metadata = summary_pb2.SummaryMetadata(
            plugin_data=summary_pb2.SummaryMetadata.PluginData(plugin_name="scalars"),
            data_class=summary_pb2.DATA_CLASS_SCALAR).SerializeToString()
        with self.writer.as_default(step=record["step"]):
            for key, value in record.items():
                if key not in ("step", "seconds") and value is not None:
                    tf.summary.write(key, tf.constant(value, tf.float32), metadata=metadata)
        self.writer.flush()


class Checkpointing(keras.callbacks.Callback):
    """Saves the run every `every` steps and at its end, and resumes it.

    A checkpoint `ckpt-STEP.npz` holds every variable of the model (weights and the dropout layers' seed
    states) and of the optimizer (its step counter drives the schedule), keyed by the variable's path, and
    the run's record (`state`: step, phase, settings, fingerprint). `latest.json` points at the newest. Both
    are written beside their target and renamed, so a run killed at any moment leaves its last complete
    checkpoint; the two newest are kept.

    Resuming is two calls before training, because where the data starts depends on which checkpoint loads:
    `check(steps)` reads the newest record and refuses a different run (any `fingerprint` entry differs)
    before the data is built; `restore(pretrainer, latest)` loads it, or the newest older one that reads, and
    returns the step to start from.

    Args:
        folder: Path or None (no checkpoints; `check` and `restore` then do nothing).
        fingerprint: dict, what a resumed run must share with the checkpoint (model config, vocabulary, the
            settings marked `resume`).
        settings: dict, the full settings record, stored for the reader.
        every: int, steps between checkpoints.
        progress: the run's `RunProgress`.
        say: callable printing a line, or None.
        writer: bool, whether this process writes the checkpoints. In a run over several processes only process 0
            does (`bertlib.train.multihost`); every process restores from the same folder.
    """

    def __init__(self, folder, fingerprint, settings, every, progress, say=None, writer=True):
        super().__init__()
        self.folder = Path(folder) if folder else None
        self.writer = writer
        self.fingerprint, self.settings, self.every = fingerprint, settings, every
        self.progress, self.say = progress, say or (lambda text: None)
        self.restored = None  # the record of the checkpoint `restore` loaded

    def check(self, steps):
        """The newest checkpoint's record, after checking it is this run's; None when there is none."""
        if self.folder is None:
            return None
        latest = read_latest(self.folder)
        if latest is None:
            latest = _record_of_newest_checkpoint(self.folder)
            if latest is not None:
                self.say(f"{self.folder} has no latest.json; resuming from {latest['checkpoint']}, which "
                         "records its own run")
        if latest is None:
            return None
        check_format(latest, self.folder)
        check_same_run(latest, self.fingerprint, self.folder)
        if latest["step"] > steps:
            raise ValueError(f"{self.folder} is already at step {latest['step']}, beyond --steps {steps}.")
        return latest

    def restore(self, pretrainer, latest):
        """Load `latest` (or the newest older checkpoint that reads) into `pretrainer`; returns its step."""
        if latest is None:
            return 0
        restored, skipped = restore_newest_loadable(self.folder, pretrainer, latest)
        for name, error in skipped:
            print(f"bertlib pretrain: warning: checkpoint {name} could not be read ({error}); using the previous "
                  f"one, {restored['checkpoint']}.", file=sys.stderr, flush=True)
        self.restored = restored
        self.say(f"resumed from step {restored['step']}")
        return restored["step"]

    def on_epoch_end(self, epoch, logs=None):
        step = self.progress.step
        if self.folder is None or not (step % self.every == 0 or step == self.progress.steps):
            return
        if not self.writer:  # process 0 writes it; the variables are the same in every process
            self.progress.last_checkpoint = self.folder / checkpoint_name(step)
            return
        state = {"format": CHECKPOINT_FORMAT, "step": step, "phase": self.progress.phase,
                 "seq_length": self.progress.seq_length, "fingerprint": self.fingerprint,
                 "settings": self.settings, "last_interval": self.progress.history[-1]}
        self.progress.last_checkpoint = save_checkpoint(self.folder, self.model, state)
        self.say(f"saved checkpoint at step {step}")


# ------------------------------------------------------------------------------------------ checkpoint files

def variable_keys(variables, optimizer=False):
    """A name per variable that depends on the model alone, not on what else this process built.

    The path, except where Keras numbers objects in the order a process creates them: seed generators
    (`seed_generator_7`) and, for optimizer variables, the optimizer's own name (`adam_w_1`).
    """
    keys = []
    for variable in variables:
        path = re.sub(r"(^|/)seed_generator_\d+/", r"\1seed_generator/", variable.path)
        if optimizer:
            path = re.sub(r"^([^/]*?)(_\d+)?/", r"\1/", path)
        while path in keys:  # two unnamed seed generators in one layer: their order tells them apart
            path += "+"
        keys.append(path)
    return keys


def save_checkpoint(checkpoint_dir, pretrainer, state):
    """Write `ckpt-STEP.npz` (model and optimizer variables, and `state`), point `latest.json` at it, and keep
    the `CHECKPOINTS_KEPT` newest checkpoints up to this step (a newer file is never removed)."""
    checkpoint_dir = Path(checkpoint_dir)
    name = checkpoint_name(state["step"])
    state = dict(state, checkpoint=name)
    arrays = {f"model/{key}": np.asarray(variable.numpy())
              for key, variable in zip(variable_keys(pretrainer.variables), pretrainer.variables)}
    optimizer_variables = pretrainer.optimizer.variables
    arrays.update({f"optimizer/{key}": np.asarray(variable.numpy())
                   for key, variable in zip(variable_keys(optimizer_variables, optimizer=True), optimizer_variables)})
    arrays["state"] = np.frombuffer(json.dumps(state).encode("utf-8"), dtype=np.uint8)
    atomic_write(checkpoint_dir / name, lambda temporary: np.savez(temporary, **arrays))
    write_text_atomically(checkpoint_dir / "latest.json", json.dumps(state, indent=1))
    older = sorted(path for path in checkpoint_dir.glob("ckpt-*.npz") if _step_of(path.name) <= state["step"])
    for old in older[:-CHECKPOINTS_KEPT]:
        old.unlink()
    return checkpoint_dir / name


def checkpoint_name(step):
    """The file name of the checkpoint at `step`."""
    return f"ckpt-{step:08d}.npz"


def _step_of(name):
    try:
        return int(name[len("ckpt-"):-len(".npz")])
    except ValueError:
        return -1  # not one of ours


def read_latest(checkpoint_dir):
    """The record in `latest.json` in `checkpoint_dir`, or None when there is no such file."""
    path = Path(checkpoint_dir) / "latest.json"
    if not path.is_file():
        return None
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as error:  # written atomically, so only a damaged disk gets here
        raise ValueError(
            f"{path} cannot be read ({error}). Nothing was trained or deleted. The checkpoints beside it are "
            f"intact and each records its run: move the damaged file aside (mv {path} {path}.damaged) and "
            "run the same command again to resume from the newest ckpt-*.npz that reads.") from error


def _record_of_newest_checkpoint(checkpoint_dir):
    """Without `latest.json`: the record inside the newest checkpoint that has a readable one, or None when
    the folder holds no checkpoint. Checkpoints that record nothing (format 1) are refused, never overwritten."""
    names = sorted((path.name for path in Path(checkpoint_dir).glob("ckpt-*.npz")), reverse=True)
    for name in names:
        try:
            with np.load(Path(checkpoint_dir) / name) as stored:
                if "state" in stored.files:
                    return dict(json.loads(bytes(stored["state"]).decode("utf-8")), checkpoint=name)
        except (OSError, EOFError, ValueError, zipfile.BadZipFile, zlib.error):
            continue  # a damaged one: try the next older
    if names:
        raise ValueError(f"{checkpoint_dir} holds checkpoints ({', '.join(names)}) but no latest.json, and none "
                         "of them records its run (written by an older bertlib, or damaged). Nothing was "
                         "trained or deleted: put their latest.json back, or use a new --checkpoint-dir.")
    return None


def check_format(latest, checkpoint_dir):
    """Refuse a record of another checkpoint format than `CHECKPOINT_FORMAT` (an older or a newer bertlib)."""
    if latest.get("format") != CHECKPOINT_FORMAT:
        found = (f"format {latest['format']!r}" if "format" in latest
                 else 'format 1 (its record has no "format": bertlib 0.1)')
        raise ValueError(f"{checkpoint_dir} holds checkpoints of {found}, expected format {CHECKPOINT_FORMAT}: this "
                         "bertlib cannot resume them. Nothing was trained or deleted: use a new --checkpoint-dir, "
                         "or resume that run with the bertlib that wrote it.")


def check_same_run(latest, fingerprint, checkpoint_dir):
    """Refuse to resume `latest` with another model, vocabulary or any setting a resume must keep."""
    recorded = latest["fingerprint"]
    for key, value in fingerprint.items():
        if key not in recorded:
            continue  # a checkpoint written before bertlib recorded this setting
        if recorded[key] != value:
            raise ValueError(f"{checkpoint_dir} holds a checkpoint of a different run ({key}: {recorded[key]!r} "
                             f"there, {value!r} now). Use a new --checkpoint-dir or the same settings.")


def restore_newest_loadable(checkpoint_dir, pretrainer, state):
    """Restore the checkpoint `state` names or, if it cannot be read (truncated, empty, corrupted), the newest
    older `ckpt-STEP.npz` that can. Returns `(state of the one restored, [(skipped name, error), ...])`."""
    named = state["checkpoint"]
    candidates = [named] + sorted((path.name for path in Path(checkpoint_dir).glob("ckpt-*.npz")
                                   if path.name < named), reverse=True)
    skipped = []
    for name in candidates:
        candidate = dict(state, checkpoint=name, step=_step_of(name))
        try:
            restore_checkpoint(checkpoint_dir, pretrainer, candidate)
            return candidate, skipped
        except (OSError, EOFError, ValueError, KeyError, zipfile.BadZipFile, zlib.error) as error:
            if isinstance(error, CheckpointMismatch):
                raise
            skipped.append((name, f"{type(error).__name__}: {error}"))
    raise ValueError(f"No checkpoint in {checkpoint_dir} can be read: "
                     + "; ".join(f"{name}: {error}" for name, error in skipped)
                     + ". Use a new --checkpoint-dir.")


class CheckpointMismatch(ValueError):
    """A readable checkpoint of a different model or optimizer (not damage: no older one will do either)."""


def restore_checkpoint(checkpoint_dir, pretrainer, state):
    """Load the model and optimizer variables of the checkpoint `state` points at (optimizer built)."""
    path = Path(checkpoint_dir) / state["checkpoint"]
    with np.load(path) as stored:
        groups = (("model", pretrainer.variables, False), ("optimizer", pretrainer.optimizer.variables, True))
        for prefix, variables, optimizer in groups:
            names = [key[len(prefix) + 1:] for key in stored.files if key.startswith(prefix + "/")]
            keys = variable_keys(variables, optimizer)
            missing, unknown = sorted(set(keys) - set(names)), sorted(set(names) - set(keys))
            if missing or unknown:
                raise CheckpointMismatch(
                    f"{path} was written by a different model or optimizer: {len(missing)} of this run's "
                    f"{prefix} variables are not in it{f' (e.g. {missing[0]})' if missing else ''}, and it "
                    f"holds {len(unknown)} this run does not have{f' (e.g. {unknown[0]})' if unknown else ''}. "
                    "Use a new --checkpoint-dir.")
            for key, variable in zip(keys, variables):
                value = stored[f"{prefix}/{key}"]
                if tuple(value.shape) != tuple(variable.shape):
                    raise CheckpointMismatch(f"{path}: {prefix}/{key} has shape {value.shape}, the variable "
                                             f"{variable.path} has {tuple(variable.shape)}.")
                variable.assign(value)
