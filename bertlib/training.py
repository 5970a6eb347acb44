"""Pretraining BERT: the paper's optimizer, its learning-rate schedule, and a resumable training run (A.2).

The recipe of appendix A.2: Adam with lr 1e-4, beta1 0.9, beta2 0.999, L2 weight decay 0.01 (decoupled, as
the released code's `AdamWeightDecayOptimizer`, and not on LayerNorm parameters or biases), warmup over the
first 10,000 steps then linear decay, gradient clipping at global norm 1.0, batch 256 sequences, 1M steps,
90% of them at sequence length 128 and the rest at 512.

How `pretrain()` runs (our implementation choice):

* `BertPretrainer.fit` does the steps, so the same code runs on one CPU, under any `tf.distribute`
  strategy (`bertlib.distribute.get_strategy`) and on the JAX backend (`keras.distribution.DataParallel`).
* One Keras "epoch" is `log_every` steps of an endless dataset: Keras resets the metrics at each epoch, so
  every progress line (and `on_progress` record) holds the mean loss and accuracies of that interval.
* A sequence-length phase (128, then `long_seq_length` for the last `long_fraction` of the steps) is one
  `fit` call on arrays built at that length.
* Every `checkpoint_every` steps (at an interval's end) the pretrainer variables (weights, dropout seeds)
  and the optimizer variables (its step counter drives the schedule) go to `ckpt-STEP.npz`, then
  `latest.json` (step, seed, phase, config) points at it. Both are written to a temporary name and renamed,
  so a run killed at any moment leaves the last complete checkpoint. Restarting the same command resumes
  there: the weights, the optimizer state and the data position (`dataset.skip(steps done in the phase)`,
  the pipeline being a pure function of seed and batch number) are all restored, so the run continues as if
  never stopped.
* At the end `backbone.keras` and `pretrainer.keras` are saved in the checkpoint folder
  (`bertlib finetune --init DIR/backbone.keras`).

Example:
>>> result = pretrain(preset="tiny", corpus="python-docs", steps=600, checkpoint_dir="runs/tiny")
>>> result["mlm_accuracy"], result["nsp_accuracy"]

Command line: `bertlib pretrain --preset tiny --steps 600 --checkpoint-dir runs/tiny`; its last line is
a JSON summary.
"""

import functools
import json
import math
import sys
import time
import zipfile
import zlib
from pathlib import Path

import keras
import numpy as np
from keras import ops

from bertlib import distribute, files
from bertlib.files import atomic_write, write_text_atomically
from bertlib.model import NO_WEIGHT_DECAY, pretraining_batch

CHECKPOINTS_KEPT = 2
MAX_SEQ_LENGTH = 512  # the learned positions of every preset (BertConfig.max_sequence_length, §A.2)


@keras.saving.register_keras_serializable(package="bertlib")
class WarmupLinearDecay(keras.optimizers.schedules.LearningRateSchedule):
    """Linear warmup from 0 to `peak`, then linear decay to 0 at `total_steps` (A.2; the original
    `optimization.py`).

    As in the original code, the decay line is `peak * (1 - step / total_steps)` from step 0, and during the
    first `warmup_steps` the rate is `peak * step / warmup_steps` instead; so at the end of warmup the rate
    steps from `peak` down to `peak * (1 - warmup_steps / total_steps)` (1% below peak for the paper's
    10k / 1M).

    Args:
        peak: float, the rate after warmup (1e-4 in the paper).
        warmup_steps: int, steps of linear warmup (10,000 in the paper); 0 for none.
        total_steps: int, the step where the rate reaches 0 (1,000,000 in the paper).

    Example:
    >>> schedule = WarmupLinearDecay(1e-4, 10_000, 1_000_000)
    >>> float(schedule(5_000))
    5e-05
    """

    def __init__(self, peak, warmup_steps, total_steps):
        if not peak > 0:
            raise ValueError(f"The peak learning rate must be positive, got {peak!r}.")
        if not 0 < total_steps:
            raise ValueError(f"total_steps must be positive, got {total_steps!r}.")
        if not 0 <= warmup_steps <= total_steps:
            raise ValueError(f"warmup_steps ({warmup_steps}) must be between 0 and total_steps "
                             f"({total_steps}); otherwise the rate never reaches its peak.")
        self.peak = float(peak)
        self.warmup_steps = int(warmup_steps)
        self.total_steps = int(total_steps)

    def __call__(self, step):
        step = ops.cast(step, "float32")
        # (total - step) / total rather than 1 - step / total: exact in float32 near the end of a 1M-step run
        decayed = self.peak * (self.total_steps - ops.minimum(step, self.total_steps)) / self.total_steps
        if self.warmup_steps == 0:
            return decayed
        warmup = self.peak * step / self.warmup_steps
        return ops.where(step < self.warmup_steps, warmup, decayed)

    def get_config(self):
        return {"peak": self.peak, "warmup_steps": self.warmup_steps, "total_steps": self.total_steps}


def warmup_linear_decay(peak, warmup_steps, total_steps):
    """The paper's schedule as a serializable `keras.optimizers.schedules.LearningRateSchedule`."""
    return WarmupLinearDecay(peak, warmup_steps, total_steps)


def make_optimizer(learning_rate=1e-4, warmup_steps=10_000, total_steps=1_000_000, weight_decay=0.01):
    """The optimizer of A.2: AdamW (beta1 0.9, beta2 0.999, epsilon 1e-6), decay 0.01, clip at norm 1.0.

    `learning_rate` is the peak of `warmup_linear_decay(learning_rate, warmup_steps, total_steps)` (or a
    ready `LearningRateSchedule`, then `warmup_steps` and `total_steps` are unused). Weight
    decay is decoupled (subtracted from the weights, not added to the gradient), as in the released code, and
    skips LayerNorm scales/offsets and biases (`NO_WEIGHT_DECAY`). One difference: Keras' Adam corrects the
    bias of its moment estimates, the released optimizer does not; it matters only in the first few
    hundred steps, where warmup keeps the rate small anyway.
    """
    if isinstance(weight_decay, bool) or not isinstance(weight_decay, (int, float)) or not weight_decay >= 0:
        raise ValueError(f"weight_decay must be a number >= 0 (the paper: 0.01), got {weight_decay!r}; a "
                         "negative decay would push the weights away from zero.")
    if not isinstance(learning_rate, keras.optimizers.schedules.LearningRateSchedule):
        learning_rate = warmup_linear_decay(learning_rate, warmup_steps, total_steps)
    optimizer = keras.optimizers.AdamW(
        learning_rate=learning_rate, weight_decay=weight_decay,
        beta_1=0.9, beta_2=0.999, epsilon=1e-6, global_clipnorm=1.0)
    optimizer.exclude_from_weight_decay(var_names=list(NO_WEIGHT_DECAY))
    return optimizer


# bfloat16 on a CPU must beat float32 by this much in the start-up probe: a matmul 1.3x faster made the bench
# step about 1.25x faster on an AVX512-BF16 CPU (bench/RESULTS.md), less would not pay for the casts.
BFLOAT16_MIN_SPEEDUP = 1.3


def precision_for(strategy=None, flags=None, probe=None):
    """The dtype policy that trains fastest on this device: what `precision="auto"` picks.

    "mixed_bfloat16" on a TPU and "mixed_float16" on a GPU (where `compile` adds loss scaling). On a CPU,
    "mixed_bfloat16" when the CPU has bfloat16 units (AMX-BF16, AVX512-BF16 or Arm BF16; see
    `distribute.BFLOAT16_CPU_FLAGS`) and a short matmul probe finds bfloat16 at least `BFLOAT16_MIN_SPEEDUP`
    times faster than float32; "float32" otherwise (without those units bfloat16 is emulated, and slower).
    The probe runs once per process. In both mixed policies the weights, LayerNorm, the attention softmax and
    the loss stay in float32.

    Args:
        strategy: a `tf.distribute.Strategy` or None (the devices TensorFlow or JAX sees).
        flags: set of CPU flags, defaults to `distribute.cpu_flags()` (for tests).
        probe: callable returning bfloat16's matmul speedup, defaults to `distribute.bfloat16_matmul_speedup`
            (for tests).
    """
    if strategy is not None and distribute.is_tpu(strategy):
        return "mixed_bfloat16"
    if keras.backend.backend() == "jax":
        import jax

        platform = jax.devices()[0].platform
    else:
        import tensorflow as tf

        platform = "gpu" if tf.config.list_logical_devices("GPU") else "cpu"
    if platform != "cpu":
        return {"tpu": "mixed_bfloat16", "gpu": "mixed_float16"}.get(platform, "float32")
    flags = distribute.cpu_flags() if flags is None else flags
    if not flags & set(distribute.BFLOAT16_CPU_FLAGS):
        return "float32"
    speedup = probe() if probe is not None else _bfloat16_speedup()
    return "mixed_bfloat16" if speedup >= BFLOAT16_MIN_SPEEDUP else "float32"


@functools.cache
def _bfloat16_speedup():
    return distribute.bfloat16_matmul_speedup()


def set_precision(policy="auto", strategy=None):
    """Set Keras' global dtype policy before building the model; "auto" picks by device (`precision_for`).

    Mixed precision computes in 16 bits and keeps float32 weights. "mixed_bfloat16" suits TPUs and CPUs with
    bfloat16 units (see `precision_for`; on other CPUs it is emulated and slower than float32);
    "mixed_float16" suits GPUs, where `compile` adds loss scaling. Returns the policy name.
    """
    if policy == "auto":
        policy = precision_for(strategy)
    keras.config.set_dtype_policy(policy)
    return keras.config.dtype_policy().name


# ------------------------------------------------------------------------------------------------- data


def load_documents(corpus):
    """`corpus` ("python-docs", "wikitext103", or text file paths) -> list of documents of sentences."""
    from bertlib import corpora

    if isinstance(corpus, str):
        corpus = [corpus]
    if list(corpus) == ["python-docs"]:
        return corpora.python_docs()
    if list(corpus) == ["wikitext103"]:
        return corpora.wikitext103()
    missing = [path for path in corpus if not Path(path).is_file()]
    if missing:
        raise FileNotFoundError(f"Corpus files not found: {missing}. Expected 'python-docs', 'wikitext103', "
                                "'tfrecords:DIR[,LONG_DIR]' or text files (one sentence per line, blank "
                                "lines between documents).")
    return corpora.text_files(list(corpus))


def phase_arrays(corpus, tokenizer, seq_lengths, seed, stream=False):
    """One source per sequence length: `arrays` built from documents or read from `tfrecords:DIR[,LONG_DIR]`,
    or with `stream` a `{"tfrecords": DIR, "static_mask": bool}` that `phase_dataset` streams."""
    from bertlib import data

    if isinstance(corpus, str) and corpus.startswith("tfrecords:"):
        folders = corpus[len("tfrecords:"):].split(",")
        if len(folders) < len(seq_lengths):
            raise ValueError(f"{corpus!r} names {len(folders)} folder(s) but the run has "
                             f"{len(seq_lengths)} sequence-length phases {seq_lengths}; use "
                             "tfrecords:SHORT_DIR,LONG_DIR (written by `bertlib data --max-seq-length ...`).")
        result = []
        for folder, seq_length in zip(folders, seq_lengths):
            if stream:  # the sequence length is checked on the first example; the rest is read while training
                spec = data.tfrecord_spec(data.tfrecord_files(folder))
                stored_length = spec[data.TFRECORD_NAMES["token_ids"]].shape[0]
                arrays = {"tfrecords": folder, "static_mask": data.TFRECORD_NAMES["mask_ids"] in spec}
            else:
                arrays = data.read_tfrecords(folder)
                stored_length = arrays["token_ids"].shape[1]
                if arrays["token_ids"].max() >= tokenizer.vocabulary_size:
                    raise ValueError(f"TFRecords in {folder} hold token id {arrays['token_ids'].max()}, "
                                     f"beyond the vocabulary ({tokenizer.vocabulary_size} ids); pass the "
                                     "--vocab they were built with.")
            if stored_length != seq_length:
                raise ValueError(f"TFRecords in {folder} have sequence length {stored_length}, "
                                 f"expected {seq_length}.")
            result.append(arrays)
        return result
    if stream:
        raise ValueError("stream=True (--stream) reads tfrecords:DIR corpora; other corpora are built in memory.")
    documents = load_documents(corpus)
    return [data.build_pretraining_arrays(documents, tokenizer, max_seq_length=seq_length, seed=seed)
            for seq_length in seq_lengths]


def phase_dataset(source, batch_size, masker, seed, start_batch):
    """The batches of one phase from a `phase_arrays` source: in memory, or streamed from TFRecords."""
    from bertlib import data

    if "tfrecords" in source:
        return data.stream_tfrecords(source["tfrecords"], batch_size, masker, seed=seed, start_batch=start_batch)
    return data.pretraining_dataset(source, batch_size, masker, seed=seed, start_batch=start_batch)


def phase_plan(steps, long_fraction, seq_length, long_seq_length):
    """[(seq_length, first_step, end_step), ...]: the short phase, then the long one (A.2's 90% / 10%)."""
    if not 0.0 <= long_fraction < 1.0:
        raise ValueError(f"long_fraction must be in [0, 1), got {long_fraction!r}.")
    long_steps = round(steps * long_fraction)
    plan = [(seq_length, 0, steps - long_steps)]
    if long_steps:
        plan.append((long_seq_length, steps - long_steps, steps))
    return plan


# ------------------------------------------------------------------------------------------- checkpoints



def save_checkpoint(checkpoint_dir, pretrainer, state):
    """Write `ckpt-STEP.npz` (model variables and optimizer variables), then point `latest.json` at it.

    `pretrainer.variables` holds the weights and the dropout layers' random-seed states, so a resumed run
    draws the same dropout masks as an uninterrupted one.
    """
    checkpoint_dir = Path(checkpoint_dir)
    name = f"ckpt-{state['step']:08d}.npz"
    arrays = {f"model/{index:05d}": np.asarray(variable.numpy())
              for index, variable in enumerate(pretrainer.variables)}
    arrays.update({f"optimizer/{index:05d}": np.asarray(variable.numpy())
                   for index, variable in enumerate(pretrainer.optimizer.variables)})
    atomic_write(checkpoint_dir / name, lambda temporary: np.savez(temporary, **arrays))
    write_text_atomically(checkpoint_dir / "latest.json", json.dumps(dict(state, checkpoint=name), indent=1))
    for old in sorted(checkpoint_dir.glob("ckpt-*.npz"))[:-CHECKPOINTS_KEPT]:
        old.unlink()
    return checkpoint_dir / name


def read_latest(checkpoint_dir):
    """The state of `latest.json` in `checkpoint_dir`, or None when the folder has no checkpoint."""
    path = Path(checkpoint_dir) / "latest.json"
    if not path.is_file():
        return None
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as error:  # written atomically, so only a damaged disk gets here
        raise ValueError(f"{path} cannot be read ({error}); delete it to resume from the newest "
                         "ckpt-*.npz, or use a new --checkpoint-dir.") from error


def restore_newest_loadable(checkpoint_dir, pretrainer, state):
    """Restore the checkpoint `state` names or, if it cannot be read (truncated, empty, corrupted), the newest
    older `ckpt-STEP.npz` that can. Returns `(state of the one restored, [(skipped name, error), ...])`."""
    named = state["checkpoint"]
    candidates = [named] + sorted((path.name for path in Path(checkpoint_dir).glob("ckpt-*.npz")
                                   if path.name < named), reverse=True)
    skipped = []
    for name in candidates:
        candidate = dict(state, checkpoint=name, step=int(name[len("ckpt-"):-len(".npz")]))
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
    """Load the weights and optimizer variables of the checkpoint `state` points at (optimizer built)."""
    path = Path(checkpoint_dir) / state["checkpoint"]
    with np.load(path) as stored:
        groups = (("model", pretrainer.variables), ("optimizer", pretrainer.optimizer.variables))
        for prefix, variables in groups:
            keys = sorted(key for key in stored.files if key.startswith(prefix + "/"))
            if len(keys) != len(variables):
                raise CheckpointMismatch(f"{path} holds {len(keys)} {prefix} variables, this run has "
                                 f"{len(variables)}: it was written by a different model or optimizer. "
                                 "Use a new --checkpoint-dir.")
            for key, variable in zip(keys, variables):
                if tuple(stored[key].shape) != tuple(variable.shape):
                    raise CheckpointMismatch(f"{path}: {key} has shape {stored[key].shape}, the variable "
                                     f"{variable.path} has {tuple(variable.shape)}.")
                variable.assign(stored[key])


# ---------------------------------------------------------------------------------------------- training


class PretrainingMonitor(keras.callbacks.Callback):
    """Counts global steps; logs each interval; checkpoints; stops at the phase end or on a NaN loss."""

    def __init__(self, run, start_step, end_step, seq_length, batch_size):
        super().__init__()
        self.run = run
        self.step = start_step
        self.epoch_start_step = start_step
        self.start_step = start_step
        self.end_step = end_step
        self.tokens_per_step = batch_size * seq_length
        self.seq_length = seq_length

    def on_epoch_begin(self, epoch, logs=None):
        self.epoch_start_step = self.step
        self.epoch_start_time = time.perf_counter()

    def on_train_batch_end(self, batch, logs=None):
        self.step = self.epoch_start_step + batch + 1
        loss = float(logs["loss"]) if logs and "loss" in logs else 0.0
        if not math.isfinite(loss):
            raise FloatingPointError(
                f"The loss became {loss} at step {self.step} (learning rate "
                f"{self.run.learning_rate_at(self.step):.3g}); training stopped. Try a lower "
                "--learning-rate, more --warmup-steps or float32 (--precision float32).")
        if self.step >= self.end_step:
            self.model.stop_training = True

    def on_epoch_end(self, epoch, logs=None):
        seconds = time.perf_counter() - self.epoch_start_time
        steps = self.step - self.epoch_start_step
        self.run.record_interval(self.step, self.seq_length, logs or {}, steps * self.tokens_per_step,
                                 seconds)
        at_checkpoint = self.step % self.run.checkpoint_every == 0 or self.step == self.run.steps
        if self.run.checkpoint_dir and at_checkpoint:
            self.run.checkpoint(self.step)


class PretrainingRun:
    """The state of one `pretrain()` call shared by its phases and callbacks (printing, history, saving)."""

    def __init__(self, pretrainer, schedule, steps, checkpoint_every, checkpoint_dir, state, on_progress,
                 verbose):
        self.pretrainer = pretrainer
        self.schedule = schedule
        self.steps = steps
        self.checkpoint_every = checkpoint_every
        self.checkpoint_dir = checkpoint_dir
        self.state = state
        self.on_progress = on_progress
        self.verbose = verbose
        self.history = []
        self.last_checkpoint = None
        self.summary_writer = None
        if checkpoint_dir:
            import tensorflow as tf

            self.summary_writer = tf.summary.create_file_writer(str(Path(checkpoint_dir) / "logs"))

    def say(self, text):
        if self.verbose:
            print(text, flush=True)

    def learning_rate_at(self, step):
        return float(self.schedule(step))

    def record_interval(self, step, seq_length, logs, tokens, seconds):
        logs = {key: float(value) for key, value in logs.items()}
        record = {"step": step, "seq_length": seq_length, "loss": logs.get("loss"),
                  "mlm_loss": logs.get("mlm_logits_loss", logs.get("loss")),
                  # without NSP the model has one output, and Keras logs its metric without the output name
                  "mlm_accuracy": logs.get("mlm_logits_accuracy", logs.get("accuracy")),
                  "nsp_loss": logs.get("nsp_logits_loss"),
                  "nsp_accuracy": logs.get("nsp_logits_accuracy"),
                  "learning_rate": self.learning_rate_at(step),
                  "tokens_per_second": tokens / seconds if seconds > 0 else None, "seconds": seconds}
        self.history.append(record)
        self.state["last_interval"] = record  # so resuming a finished run can still report its numbers
        nsp = f"  nsp_acc {record['nsp_accuracy']:.3f}" if record["nsp_accuracy"] is not None else ""
        self.say(f"step {step}/{self.steps}  seq {seq_length}  loss {record['loss']:.4f}  "
                 f"mlm_loss {record['mlm_loss']:.4f}  mlm_acc {record['mlm_accuracy']:.4f}{nsp}  "
                 f"lr {record['learning_rate']:.3g}  {record['tokens_per_second']:,.0f} tokens/s")
        if self.summary_writer is not None:
            self.write_summaries(record)
        if self.on_progress is not None:
            self.on_progress(record)

    def write_summaries(self, record):
        """TensorBoard scalars via the raw `tf.summary.write` (works without the tensorboard package)."""
        import tensorflow as tf
        from tensorflow.core.framework import summary_pb2

        metadata = summary_pb2.SummaryMetadata(
            plugin_data=summary_pb2.SummaryMetadata.PluginData(plugin_name="scalars"),
            data_class=summary_pb2.DATA_CLASS_SCALAR).SerializeToString()
        with self.summary_writer.as_default(step=record["step"]):
            for key, value in record.items():
                if key not in ("step", "seconds") and value is not None:
                    tf.summary.write(key, tf.constant(value, tf.float32), metadata=metadata)
        self.summary_writer.flush()

    def checkpoint(self, step):
        self.state["step"] = step
        self.last_checkpoint = save_checkpoint(self.checkpoint_dir, self.pretrainer, self.state)
        self.say(f"saved checkpoint at step {step}")


def _check_positive(**values):
    for name, value in values.items():
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be a positive integer, got {value!r}.")


def pretrain(preset="tiny", corpus="python-docs", steps=600, batch_size=16, seq_length=128,
             long_seq_length=512, long_fraction=0.0, learning_rate=1e-3, warmup_steps=60, weight_decay=0.01,
             checkpoint_dir=None, checkpoint_every=100, strategy="auto", seed=0, max_predictions=20,
             next_sentence=True, precision=None, steps_per_execution=1, vocab=None, log_every=25,
             on_progress=None, dropout=0.1, tpu=None, stream=False, verbose=True):
    """Pretrain a `BertPretrainer` with masked LM (+ NSP) and return a summary dict (§3.1, §3.2, A.2).

    Args:
        preset: str, a `BertConfig` preset ("tiny" ... "base", "large"), defaults to "tiny".
        corpus: "python-docs" (embedded), "wikitext103", text file path(s), or "tfrecords:DIR[,LONG_DIR]"
            (from `bertlib data`; LONG_DIR at long_seq_length for the long phase). GCS paths work.
        steps: int, total optimizer steps; batch_size: int, the global batch (split over replicas).
        seq_length, long_seq_length, long_fraction: the curriculum of A.2: the last `long_fraction` of the
            steps use sequences of `long_seq_length` (paper: 0.1 at 512).
        learning_rate, warmup_steps, weight_decay: peak rate, warmup and decay of `make_optimizer`.
        checkpoint_dir: str or None. Checkpoints, TensorBoard logs (`logs/`) and the final `.keras` files;
            a folder with a checkpoint is resumed.
        checkpoint_every: int, steps between checkpoints (when it is not a multiple of `log_every`, the
            logging interval shrinks to their greatest common divisor). A resumed run must keep the corpus,
            learning rate, warmup, weight decay, sequence lengths, max_predictions and vocab of its
            checkpoint; a damaged newest checkpoint is skipped (with a warning) for the newest that loads.
        strategy: a `bertlib.distribute` kind ("auto", "tpu", "gpus", ...) or a `tf.distribute.Strategy`
            (TensorFlow backend). On JAX, all devices are used through `keras.distribution.DataParallel`.
        seed: int, for the weights, NSP pairs, shuffling and masks.
        max_predictions: int, masked-LM slots per sequence (20 at 128 in the paper; scaled up for the long
            phase).
        next_sentence: bool, train NSP too (False: the "No NSP" ablation of §5.1).
        precision: None (keep the current policy), "auto", "float32", "mixed_bfloat16" or "mixed_float16".
        steps_per_execution: int, steps run per call into the compiled graph (speed on TPUs); divides
            `log_every`.
        vocab: path of a vocab.txt, defaults to the real uncased BERT vocabulary.
        log_every: int, steps per progress line (the metrics are means over those steps).
        on_progress: optional callable receiving each progress record (a dict).
        dropout: float, defaults to 0.1 (A.2); 0 makes runs deterministic.
        tpu: the TPU name for strategy "tpu" (see `bertlib.distribute.get_strategy`).
        stream: bool, defaults to False. With a `tfrecords:` corpus, stream the shards
            (`data.stream_tfrecords`: a local shuffle, as in the original code) instead of loading them into
            memory; for corpora larger than the host's RAM.
        verbose: bool, print progress lines.

    Returns:
        dict: step, loss, mlm_loss, mlm_accuracy, nsp_loss, nsp_accuracy (last interval), tokens_per_second,
        seconds, checkpoint (path or None), backbone (the .keras path or None), resumed_from, history (list
        of progress records), and `pretrainer` (the model).
    """
    from bertlib import data
    from bertlib.config import BertConfig
    from bertlib.masking import MaskedLMMasker
    from bertlib.model import BertBackbone, BertPretrainer
    from bertlib.tokenizer import WordPieceTokenizer

    _check_positive(steps=steps, batch_size=batch_size, seq_length=seq_length,
                    long_seq_length=long_seq_length, checkpoint_every=checkpoint_every, log_every=log_every,
                    max_predictions=max_predictions, steps_per_execution=steps_per_execution)
    if not isinstance(learning_rate, (int, float)) or isinstance(learning_rate, bool) or not learning_rate > 0:
        raise ValueError(f"learning_rate must be a positive number, got {learning_rate!r}.")
    if isinstance(weight_decay, bool) or not isinstance(weight_decay, (int, float)) or not weight_decay >= 0:
        raise ValueError(f"weight_decay must be a number >= 0 (the paper: 0.01), got {weight_decay!r}.")
    if not 0.0 <= dropout < 1.0:
        raise ValueError(f"dropout must be in [0, 1), got {dropout!r}.")
    plan = phase_plan(steps, long_fraction, seq_length, long_seq_length)
    too_long = [length for length, _, _ in plan if length > MAX_SEQ_LENGTH]
    if too_long:
        raise ValueError(f"Sequence length {too_long[0]} is more than the model's {MAX_SEQ_LENGTH} learned "
                         "positions (BertConfig.max_sequence_length, as in the paper); use at most "
                         f"{MAX_SEQ_LENGTH}.")
    if len(plan) > 1 and long_seq_length <= seq_length:
        raise ValueError(f"long_seq_length ({long_seq_length}) must exceed seq_length ({seq_length}).")
    if checkpoint_every % log_every:
        # Checkpoints are written at the end of a logging interval: shorten the interval so both fit.
        log_every = math.gcd(log_every, checkpoint_every)
        if verbose:
            print(f"logging every {log_every} steps, so that a checkpoint falls every {checkpoint_every} steps",
                  flush=True)
    boundaries = [log_every] + [end for _, _, end in plan]
    if any(boundary % steps_per_execution for boundary in boundaries):
        raise ValueError(f"steps_per_execution ({steps_per_execution}) must divide log_every ({log_every}) "
                         f"and the step where each phase ends {[end for _, _, end in plan]}.")
    if checkpoint_dir:
        files.check_writable_dir(checkpoint_dir, "--checkpoint-dir", "Nothing was trained.")

    backend = keras.backend.backend()
    distribution = None
    if backend == "jax":
        distribution = distribute.data_parallel()
        replicas = distribute.num_replicas(distribution) if distribution else 1
        strategy_kind = "jax-data-parallel" if distribution else "jax"
    else:
        if isinstance(strategy, str):
            strategy = distribute.get_strategy(strategy, tpu=tpu)
        replicas = strategy.num_replicas_in_sync
        strategy_kind = distribute.strategy_name(strategy)
    distribute.per_replica_batch_size(batch_size, replicas)

    previous_policy = keras.config.dtype_policy()
    previous_distribution = keras.distribution.distribution() if backend == "jax" else None
    try:
        if precision is not None:
            set_precision(precision, strategy if backend != "jax" else None)
        if distribution is not None:
            keras.distribution.set_distribution(distribution)

        tokenizer = WordPieceTokenizer.from_vocab_file(vocab) if vocab else data.default_tokenizer()
        config = BertConfig.preset(preset, vocabulary_size=tokenizer.vocabulary_size, dropout=dropout,
                                   max_sequence_length=max(512, *(length for length, _, _ in plan)))
        state = {"step": 0, "seed": seed, "preset": preset, "config": config.to_dict(), "stream": stream,
                 "next_sentence": next_sentence, "steps": steps, "batch_size": batch_size,
                 "phases": [list(phase) for phase in plan], "corpus": describe_corpus(corpus),
                 "learning_rate": learning_rate, "warmup_steps": warmup_steps, "weight_decay": weight_decay,
                 "seq_lengths": sorted({length for length, _, _ in plan}), "max_predictions": max_predictions,
                 "vocab": str(Path(vocab).resolve()) if vocab else None}
        latest = read_latest(checkpoint_dir) if checkpoint_dir else None
        if latest is not None:
            _check_same_run(latest, state, checkpoint_dir)  # before the data is built: a wrong resume fails fast
        arrays_by_phase = phase_arrays(corpus, tokenizer, [length for length, _, _ in plan], seed, stream)

        schedule = warmup_linear_decay(learning_rate, warmup_steps, steps)
        keras.utils.set_random_seed(seed)
        scope = strategy.scope() if backend != "jax" else _null_scope()
        with scope:
            pretrainer = BertPretrainer(BertBackbone(config), next_sentence=next_sentence)
            pretrainer.compile(optimizer=make_optimizer(schedule, weight_decay=weight_decay),
                               steps_per_execution=steps_per_execution, jit_compile=_use_xla(strategy))
            pretrainer.optimizer.build(pretrainer.trainable_variables)
            start_step = 0
            if latest is not None:
                latest, skipped = restore_newest_loadable(checkpoint_dir, pretrainer, latest)
                start_step = latest["step"]
        if checkpoint_dir:
            Path(checkpoint_dir).mkdir(parents=True, exist_ok=True)
        run = PretrainingRun(pretrainer, schedule, steps, checkpoint_every, checkpoint_dir, state,
                             on_progress, verbose)
        if latest is not None:
            for name, error in skipped:
                print(f"bertlib pretrain: warning: checkpoint {name} could not be read ({error}); "
                      f"using the previous one, {latest['checkpoint']}.", file=sys.stderr, flush=True)
            run.say(f"resumed from step {start_step}")
        run.say(f"pretraining {preset} ({config.num_params():,} backbone parameters) for {steps} steps, "
                f"batch {batch_size} over {replicas} replica(s) ({strategy_kind}), "
                f"policy {keras.config.dtype_policy().name}")

        started = time.perf_counter()
        for phase_index, ((phase_length, phase_start, phase_end), arrays) in enumerate(
                zip(plan, arrays_by_phase)):
            if start_step >= phase_end:
                continue
            first = max(start_step, phase_start)
            masker = None if "mask_ids" in arrays or arrays.get("static_mask") else MaskedLMMasker(
                tokenizer.vocabulary_size, tokenizer.mask_id, tokenizer.special_token_ids,
                max_predictions=_predictions_for(max_predictions, seq_length, phase_length))
            dataset = phase_dataset(arrays, batch_size, masker, seed=seed + phase_index,
                                    start_batch=first - phase_start)
            dataset = dataset.map(functools.partial(pretraining_batch, next_sentence=next_sentence))
            if backend != "jax" and distribute.is_tpu(strategy):
                distribute.check_static_shapes(dataset)
            state["phase"] = phase_index
            state["seq_length"] = phase_length
            monitor = PretrainingMonitor(run, first, phase_end, phase_length, batch_size)
            pretrainer.fit(dataset, steps_per_epoch=log_every,
                           epochs=math.ceil((phase_end - first) / log_every), callbacks=[monitor], verbose=0,
                           shuffle=False)
        seconds = time.perf_counter() - started

        result = {"step": steps, "resumed_from": start_step if latest is not None else None}
        last = run.history[-1] if run.history else (latest or {}).get("last_interval", {})
        for key in ("loss", "mlm_loss", "mlm_accuracy", "nsp_loss", "nsp_accuracy"):
            result[key] = last.get(key)
        # Steady-state speed: the first interval of each fit includes compiling the step.
        timed = [record for record in run.history[1:] if record["tokens_per_second"]] or run.history
        tokens = sum(record["tokens_per_second"] * record["seconds"] for record in timed)
        result["tokens_per_second"] = tokens / sum(record["seconds"] for record in timed) if timed else None
        result.update(seconds=seconds, checkpoint=str(run.last_checkpoint) if run.last_checkpoint else None,
                      backbone=None, replicas=replicas, strategy=strategy_kind,
                      policy=keras.config.dtype_policy().name, history=run.history, pretrainer=pretrainer)
        if checkpoint_dir:
            if run.last_checkpoint is None and latest is not None:
                result["checkpoint"] = str(Path(checkpoint_dir) / latest["checkpoint"])
            result["backbone"] = str(_save_final_models(Path(checkpoint_dir), pretrainer) / "backbone.keras")
        return result
    finally:
        keras.config.set_dtype_policy(previous_policy)
        if distribution is not None:
            keras.distribution.set_distribution(previous_distribution)


def _use_xla(strategy):
    """XLA everywhere but TensorFlow on a CPU, where compiling costs more than it saves (measured: ~3x slower
    first step, no faster steps for the tiny model). JAX always compiles."""
    if keras.backend.backend() != "tensorflow":
        return "auto"
    import tensorflow as tf

    try:
        devices = strategy.extended.worker_devices
    except (AttributeError, RuntimeError):  # the default (one-device) strategy: whatever TensorFlow sees
        devices = [device.name for device in tf.config.list_logical_devices()]
    return "auto" if any("CPU" not in device.upper() for device in devices) else False


def _predictions_for(max_predictions, seq_length, phase_length):
    """Slots for the long phase: the same 15% share of the longer sequence (20 at 128 -> 80 at 512)."""
    if phase_length == seq_length:
        return max_predictions
    return math.ceil(max_predictions * phase_length / seq_length)


def _check_same_run(latest, state, checkpoint_dir):
    for key in ("config", "next_sentence", "seed", "batch_size", "stream", *RESUME_MUST_MATCH):
        if key in RESUME_MUST_MATCH and key not in latest:
            continue  # a checkpoint written before bertlib recorded this setting
        if latest.get(key, False if key == "stream" else None) != state[key]:  # older checkpoints: no "stream"
            raise ValueError(f"{checkpoint_dir} holds a checkpoint of a different run ({key}: "
                             f"{latest.get(key)!r} there, {state[key]!r} now). Use a new --checkpoint-dir "
                             "or the same settings.")
    if latest["step"] > state["steps"]:
        raise ValueError(f"{checkpoint_dir} is already at step {latest['step']}, beyond --steps "
                         f"{state['steps']}.")


# Settings a resumed run must share with the checkpoint (besides the model, seed and batch), or its data,
# schedule or masking would silently change in the middle of the run.
RESUME_MUST_MATCH = ("corpus", "learning_rate", "warmup_steps", "weight_decay", "seq_lengths",
                     "max_predictions", "vocab")


def describe_corpus(corpus):
    """`corpus` as recorded in a checkpoint: names kept, file paths made absolute."""
    names = [corpus] if isinstance(corpus, str) else list(corpus)
    return [name if name in ("python-docs", "wikitext103") or name.startswith("tfrecords:")
            else str(Path(name).resolve()) for name in names]


def _save_final_models(checkpoint_dir, pretrainer):
    """`backbone.keras` and `pretrainer.keras` into the checkpoint folder or, if that fails, a new temporary
    folder (named on stderr). Returns the folder written."""
    import tempfile

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


class _null_scope:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


# --------------------------------------------------------------------------------------------------- CLI


def add_arguments(parser):
    parser.add_argument("--preset", default="tiny", help="model size: tiny, mini, small, medium, base, large")
    parser.add_argument("--corpus", nargs="+", default=["python-docs"],
                        help="'python-docs', 'wikitext103', text files, or tfrecords:DIR[,LONG_DIR]")
    parser.add_argument("--steps", type=int, default=600)
    parser.add_argument("--batch-size", type=int, default=16, help="global batch (all replicas together)")
    parser.add_argument("--seq-length", type=int, default=128)
    parser.add_argument("--long-seq-length", type=int, default=512)
    parser.add_argument("--long-fraction", type=float, default=0.0,
                        help="share of the steps at --long-seq-length (the paper: 0.1)")
    parser.add_argument("--learning-rate", type=float, default=1e-3)
    parser.add_argument("--warmup-steps", type=int, default=60)
    parser.add_argument("--weight-decay", type=float, default=0.01)
    parser.add_argument("--checkpoint-dir", default=None)
    parser.add_argument("--checkpoint-every", type=int, default=100)
    parser.add_argument("--log-every", type=int, default=25)
    parser.add_argument("--strategy", default="auto", choices=distribute.STRATEGY_KINDS)
    parser.add_argument("--tpu", default=None, help="TPU name, 'local' on a TPU VM; default: Colab's")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--max-predictions", type=int, default=20)
    parser.add_argument("--no-nsp", dest="next_sentence", action="store_false", help="masked LM only")
    parser.add_argument("--precision", default=None, help="auto, float32, mixed_bfloat16 or mixed_float16")
    parser.add_argument("--steps-per-execution", type=int, default=1)
    parser.add_argument("--dropout", type=float, default=0.1)
    parser.add_argument("--vocab", default=None, help="vocab.txt (default: the real uncased BERT vocabulary)")
    parser.add_argument("--stream", action="store_true",
                        help="with tfrecords:DIR, stream the shards instead of loading them into memory")


def run(args):
    corpus = args.corpus[0] if len(args.corpus) == 1 else args.corpus
    try:
        result = pretrain(
            preset=args.preset, corpus=corpus, steps=args.steps, batch_size=args.batch_size,
            seq_length=args.seq_length, long_seq_length=args.long_seq_length,
            long_fraction=args.long_fraction, learning_rate=args.learning_rate,
            warmup_steps=args.warmup_steps, weight_decay=args.weight_decay,
            checkpoint_dir=args.checkpoint_dir, checkpoint_every=args.checkpoint_every,
            strategy=args.strategy, seed=args.seed, max_predictions=args.max_predictions,
            next_sentence=args.next_sentence,
            precision=args.precision, steps_per_execution=args.steps_per_execution, vocab=args.vocab,
            log_every=args.log_every, dropout=args.dropout, tpu=args.tpu, stream=args.stream)
    except (FloatingPointError, ValueError, RuntimeError, OSError) as error:
        print(f"bertlib pretrain: {error}", file=sys.stderr)
        return 1
    summary = {key: value for key, value in result.items() if key not in ("history", "pretrainer")}
    print(json.dumps(summary), flush=True)
    return 0
