"""What every fine-tuning task shares: the `Task` interface, the data a task prepares, and batching.

A task (GLUE's, SQuAD's, SWAG's) owns everything that differs between benchmarks: reading and featurizing
its files, its head, its loss and metrics, scoring dev and writing the predictions. `bertlib.finetune.finetuning`
composes a task with the training loop and never looks at the task's name. A new task is one new module in
`bertlib/finetune/tasks/` whose `TASKS` lists its `Task` objects.
"""

import dataclasses
import logging
import math
import warnings

import numpy as np

LENGTH_MULTIPLE = 16  # batches are cut to their longest sequence rounded up to this: few distinct shapes
SORTING_POOL_BATCHES = 50  # training batches are formed from length-sorted pools of this many batches
EVAL_BATCH_SIZE = 64  # rows per batch when a task predicts its dev set


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
    report: dict = dataclasses.field(default_factory=dict)  # counts the run's result shows (e.g. questions left out)


class Task:
    """A fine-tuning task of §4. Subclasses give `name` (str, what `--task` says) and `metric_names` (the dev
    metrics; their mean picks the best run of a grid, as GLUE averages a task's metrics into its score), and
    implement the methods below.

    `settings` is a `bertlib.finetune.finetuning.FinetuneSettings` (a task reads the fields it needs: `max_seq_length`,
    `max_train_examples`, `pooling`, `doc_stride`, ...).
    """

    trim_batches = True  # cut each batch to its longest row; span logits (SQuAD) need every position
    output_patterns = ()  # the files `write_predictions` may write, removed before a run writes into a folder

    def read(self, data_dir, tokenizer, settings):
        """Read and featurize the train and dev files: a `TaskData`."""
        raise NotImplementedError

    def build_model(self, backbone, settings):
        """The backbone with this task's head (§4, figure 4)."""
        raise NotImplementedError

    def compile(self, model, optimizer, jit_compile="auto"):
        """Compile `model` with this task's loss and metrics."""
        raise NotImplementedError

    def evaluate(self, model, data, settings):
        """Dev metrics and predictions: `(scores dict, predictions)`. NaN outputs give NaN metrics."""
        raise NotImplementedError

    def write_predictions(self, folder, predictions, data, write_text):
        """Write the dev predictions into `folder` with `write_text(path, text)`; returns the names written."""
        raise NotImplementedError

    def selection_score(self, scores):
        """One number to pick hyperparameters on dev: the mean of the task's metrics; a NaN run never wins."""
        score = float(np.mean([scores[name] for name in self.metric_names]))
        return score if math.isfinite(score) else -math.inf

    def undefined_scores(self, outputs, what="dev"):
        """NaN for every metric, with a warning, when `outputs` hold a NaN or infinity; else None.

        argmax would turn NaN logits into class 0 and a span search would still pick spans: no score is
        honest then.
        """
        values = [np.asarray(value) for value in (outputs.values() if isinstance(outputs, dict) else [outputs])]
        bad = sum(int((~np.isfinite(value)).sum()) for value in values)
        if not bad:
            return None
        warnings.warn(f"The model's {what} outputs hold {bad} NaN or infinite values; the {self.name} metrics are "
                      "NaN. Try a lower learning rate.", RuntimeWarning, stacklevel=3)
        return {name: math.nan for name in self.metric_names}

    def __repr__(self):
        return f"{type(self).__name__}({self.name!r})"


def subset(count, limit, seed=None):
    """Indices of at most `limit` of `count` items: a seeded random sample (training) or the first ones."""
    if limit is None or limit >= count:
        return np.arange(count)
    if limit <= 0:
        raise ValueError(f"The example limit must be positive, got {limit}.")
    if seed is None:
        return np.arange(limit)
    return np.sort(np.random.default_rng(seed).permutation(count)[:limit])


def length_bucketed_batches(lengths, batch_size, shuffle=False, seed=0):
    """Row indices of each batch, every batch exactly `batch_size` rows (a short last batch is topped up,
    with rows from the start of the order), so the compiled step sees few distinct shapes.

    Most GLUE sentences are far shorter than max_seq_length, so a batch is cut to its longest row
    (`batch_inputs`). Shuffled batches come from length-sorted pools of `SORTING_POOL_BATCHES` batches, in a
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


def row_lengths(inputs):
    """Real tokens per row: (n,), the longest choice's for (n, choices, seq) inputs."""
    mask = inputs["padding_mask"]  # (n, seq) or (n, choices, seq)
    return mask.reshape(len(mask), -1, mask.shape[-1]).sum(axis=-1).max(axis=-1)


def batch_inputs(inputs, rows, lengths, trim=True):
    """The rows of `inputs`, cut to the batch's longest sequence rounded up to `LENGTH_MULTIPLE`."""
    length = inputs["padding_mask"].shape[-1]
    if trim:
        length = min(length, -(-int(lengths[rows].max()) // LENGTH_MULTIPLE) * LENGTH_MULTIPLE)
    return {name: array[rows][..., :length] for name, array in inputs.items()}


class _BucketRetracing(logging.Filter):
    """Drops TensorFlow's "triggered tf.function retracing" warning while `predict` runs: one traced function
    per length bucket is the design (`LENGTH_MULTIPLE`), and TensorFlow calls it excessive after five."""

    def filter(self, record):
        return "triggered tf.function retracing" not in record.getMessage()


def predict(model, inputs, batch_size, trim=True):
    """Model outputs for every row of `inputs`, in order (batches run length-sorted, then are put back)."""
    lengths = row_lengths(inputs)
    batches = length_bucketed_batches(lengths, batch_size)
    logger, quiet = logging.getLogger("tensorflow"), _BucketRetracing()
    logger.addFilter(quiet)
    try:
        outputs = [model.predict_on_batch(batch_inputs(inputs, rows, lengths, trim)) for rows in batches]
    finally:
        logger.removeFilter(quiet)
    first = np.unique(batches.reshape(-1), return_index=True)[1]  # where each row first appears
    if isinstance(outputs[0], dict):
        return {name: np.concatenate([np.asarray(o[name]) for o in outputs])[first] for name in outputs[0]}
    return np.concatenate([np.asarray(output) for output in outputs])[first]


def cross_entropy_compile(model, optimizer, jit_compile, accuracy=True):
    """Softmax cross-entropy on logits (and accuracy): the classifiers' and SWAG's compile."""
    import keras

    model.compile(optimizer=optimizer, loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=[keras.metrics.SparseCategoricalAccuracy(name="accuracy")] if accuracy else None,
                  jit_compile=jit_compile)


def write_prediction_tsv(folder, split, values, write_text, label_names=None):
    """`{split}_predictions.tsv`: index and prediction (a label name, a class index or a score)."""
    if label_names is not None:
        rows = [label_names[int(value)] for value in values]
    else:
        rows = [f"{value:.3f}" if isinstance(value, np.floating) else str(int(value)) for value in values]
    name = f"{split}_predictions.tsv"
    write_text(folder / name, "index\tprediction\n" + "".join(f"{i}\t{row}\n" for i, row in enumerate(rows)))
    return name
