"""GLUE (§4.1): nine sentence and sentence-pair tasks, read from the TSV files of the GLUE download."""

import csv
import dataclasses
import io
from pathlib import Path

import numpy as np

from bertlib.finetune import metrics
from bertlib.finetune.tasks._files import existing_file, read_text
from bertlib.finetune.tasks._task import (
    EVAL_BATCH_SIZE,
    Task,
    TaskData,
    cross_entropy_compile,
    predict,
    subset,
    write_prediction_tsv,
)


@dataclasses.dataclass(frozen=True, repr=False)
class GlueTask(Task):
    """A GLUE classification task: where it keeps its text and labels, and the classifier head on [CLS] (§4.1).

    Args:
        name: the task's name in bertlib ("sst2").
        folder: the task's folder name in the GLUE download (e.g. "SST-2").
        text_columns: one name (single sentence) or two (a pair), or column indices for a file without header.
        label_column: the label's column name (or index).
        labels: the label strings in class-id order, or None for a regression (STS-B).
        has_header: False only for CoLA.
        num_columns: the number of fields of each row of a file without header (CoLA's 4).
        dev_files: the dev files; MNLI has a matched and a mismatched one.
    """

    name: str
    folder: str
    text_columns: tuple
    label_column: object
    labels: tuple | None
    has_header: bool = True
    num_columns: int | None = None
    dev_files: tuple = ("dev.tsv",)

    @property
    def metric_names(self):
        return metrics.TASK_METRICS[self.name]

    output_patterns = ("*_predictions.tsv",)

    def read(self, data_dir, tokenizer, settings):
        """Train and dev packed as `[CLS] A [SEP] (B [SEP])`; a seeded training subset, the first dev rows."""
        train = load_glue(self.name, data_dir, "train")
        train = train.take(subset(len(train), settings.max_train_examples, settings.seed))
        dev = load_glue(self.name, data_dir, "dev")
        dev = dev.take(subset(len(dev), settings.max_eval_examples))
        extra = {"labels": self.labels}
        if len(self.dev_files) > 1:  # MNLI: the mismatched dev set is reported too, when it is there
            try:
                mismatched = load_glue(self.name, data_dir, "dev_mismatched")
            except FileNotFoundError:
                mismatched = None
            if mismatched is not None:
                mismatched = mismatched.take(subset(len(mismatched), settings.max_eval_examples))
                extra["mismatched"] = (pack_examples(mismatched, tokenizer, settings.max_seq_length),
                                       mismatched.labels)
        return TaskData(self.name, pack_examples(train, tokenizer, settings.max_seq_length), train.labels,
                        pack_examples(dev, tokenizer, settings.max_seq_length), dev.labels, len(train), extra)

    def build_model(self, backbone, settings):
        from bertlib.finetune.tasks.heads import BertClassifier

        return BertClassifier(backbone, num_labels(self.name), dropout=backbone.config.dropout,
                              pooling=settings.pooling, name=f"{self.name}_classifier")

    def compile(self, model, optimizer, jit_compile="auto"):
        cross_entropy_compile(model, optimizer, jit_compile)

    def predictions(self, outputs):
        """Class ids from the logits."""
        return outputs.argmax(axis=-1)

    def evaluate(self, model, data, settings):
        outputs = predict(model, data.dev_inputs, EVAL_BATCH_SIZE)
        result = {"dev": self.predictions(outputs)}
        undefined = self.undefined_scores(outputs)
        if undefined:
            return undefined, result
        scores = metrics.compute_metrics(self.name, data.dev_targets, result["dev"])
        if "mismatched" in data.dev_extra:
            inputs, labels = data.dev_extra["mismatched"]
            outputs = predict(model, inputs, EVAL_BATCH_SIZE)
            result["dev_mismatched"] = self.predictions(outputs)
            undefined = self.undefined_scores(outputs, "dev_mismatched")
            scores["accuracy_mismatched"] = (undefined["accuracy"] if undefined
                                             else metrics.accuracy(labels, result["dev_mismatched"]))
        return scores, result

    def write_predictions(self, folder, predictions, data, write_text):
        return [write_prediction_tsv(folder, split, values, write_text, self.labels)
                for split, values in predictions.items()]


@dataclasses.dataclass(frozen=True, repr=False)
class GlueRegressionTask(GlueTask):
    """STS-B (§4.1): the same head with one output, a similarity score, trained with squared error."""

    def compile(self, model, optimizer, jit_compile="auto"):
        import keras

        model.compile(optimizer=optimizer, loss=keras.losses.MeanSquaredError(), jit_compile=jit_compile)

    def predictions(self, outputs):
        return outputs[:, 0]


GLUE_TASKS = {
    # CoLA has no header: source, label, original label (blank), sentence.
    "cola": GlueTask("cola", "CoLA", (3,), 1, ("0", "1"), has_header=False, num_columns=4),
    "sst2": GlueTask("sst2", "SST-2", ("sentence",), "label", ("0", "1")),
    "mrpc": GlueTask("mrpc", "MRPC", ("#1 String", "#2 String"), "Quality", ("0", "1")),
    "stsb": GlueRegressionTask("stsb", "STS-B", ("sentence1", "sentence2"), "score", None),
    "qqp": GlueTask("qqp", "QQP", ("question1", "question2"), "is_duplicate", ("0", "1")),
    "mnli": GlueTask("mnli", "MNLI", ("sentence1", "sentence2"), "gold_label",
                     ("contradiction", "entailment", "neutral"), dev_files=("dev_matched.tsv", "dev_mismatched.tsv")),
    "qnli": GlueTask("qnli", "QNLI", ("question", "sentence"), "label", ("entailment", "not_entailment")),
    "rte": GlueTask("rte", "RTE", ("sentence1", "sentence2"), "label", ("entailment", "not_entailment")),
    "wnli": GlueTask("wnli", "WNLI", ("sentence1", "sentence2"), "label", ("0", "1")),
}
TASKS = tuple(GLUE_TASKS.values())
STSB_RANGE = (0.0, 5.0)  # similarity scores are between 0 and 5
@dataclasses.dataclass
class Examples:
    """Sentences (or sentence pairs) and their labels: class ids (int) or STS-B scores (float)."""

    texts_a: list
    texts_b: list | None
    labels: np.ndarray

    def __len__(self):
        return len(self.texts_a)

    def take(self, indices):
        """The examples at `indices`, in that order."""
        return Examples([self.texts_a[i] for i in indices],
                        None if self.texts_b is None else [self.texts_b[i] for i in indices],
                        self.labels[np.asarray(indices, dtype=np.int64)])


def glue_file(task, data_dir, split):
    """The TSV of `split` ("train", "dev", or "dev_mismatched" for MNLI).

    `data_dir` is the GLUE folder (holding `SST-2/`, `CoLA/`, ...) or the task's own folder; None finds the task
    by name (`bertlib.io.downloads.find`: the folders of BERTLIB_DATA, the user cache, else a checked download).
    """
    if task not in GLUE_TASKS:
        raise ValueError(f"{task!r} is not a GLUE task; expected one of {list(GLUE_TASKS)}.")
    spec = GLUE_TASKS[task]
    names = {"train": "train.tsv", "dev": spec.dev_files[0]}
    if len(spec.dev_files) > 1:
        names["dev_mismatched"] = spec.dev_files[1]
    if split not in names:
        raise ValueError(f"Unknown split {split!r} for {task}; expected one of {list(names)}.")
    if data_dir is None:
        from bertlib.io import downloads

        data_dir = downloads.find(task)
    data_dir = Path(data_dir)
    file_in_data_dir = data_dir / names[split]
    path = file_in_data_dir if file_in_data_dir.is_file() else data_dir / spec.folder / names[split]
    return existing_file(path, f"the GLUE layout DATA_DIR/{spec.folder}/{names[split]} (as the GLUE download "
                               "writes it)")


def _read_tsv_rows(path):
    """[(line number, fields), ...] of the rows that are not blank."""
    # QUOTE_NONE: GLUE sentences contain bare quote characters that are text, not CSV quoting.
    # read_text accepts a byte order mark: the MRPC files of the GLUE download start with one.
    reader = csv.reader(io.StringIO(read_text(path), newline=""), delimiter="\t", quoting=csv.QUOTE_NONE)
    return [(reader.line_num, row) for row in reader if row]


def _check_fields(path, task, line_number, row, expected, source):
    # A tab inside a sentence adds a field and shifts the columns after it: refused, never read shifted.
    if len(row) != expected:
        raise ValueError(f"{path} line {line_number} has {len(row)} tab-separated columns; {task} needs "
                         f"{expected} ({source}): a tab inside a sentence splits it. The row: {row!r}.")


def load_glue(task, data_dir, split="train"):
    """Read a GLUE task's TSV into `Examples`, checking its columns and every label.

    Columns are found by header name (CoLA, which has no header, by position), so the extra columns of
    STS-B or MNLI do not matter.

    Example:
    >>> examples = load_glue("sst2", None, "dev")  # None: SST-2 found by name (bertlib.io.downloads)
    >>> len(examples), examples.texts_a[0], examples.labels[0]
    (872, "it 's a charming and often affecting journey . ", 1)
    """
    spec = GLUE_TASKS.get(task)
    path = glue_file(task, data_dir, split)
    rows = _read_tsv_rows(path)
    expected = (spec.num_columns, f"the {spec.folder} layout")
    if spec.has_header:
        if not rows:
            raise ValueError(f"{path} is empty; expected a header row and examples.")
        (header_line, header), rows = rows[0], rows[1:]
        expected = (len(header), f"as many as the header on line {header_line}")
        wanted = (*spec.text_columns, spec.label_column)
        missing = [name for name in wanted if name not in header]
        if missing:
            raise ValueError(f"{path} has the columns {header} but {task} needs {list(wanted)} "
                             f"(missing {missing}); is this the {spec.folder} file of the GLUE download?")
        columns = [header.index(name) for name in wanted]
    else:
        columns = [*spec.text_columns, spec.label_column]

    texts, labels = [[] for _ in spec.text_columns], []
    for line_number, row in rows:
        _check_fields(path, task, line_number, row, *expected)
        for column_texts, column in zip(texts, columns[:-1]):
            column_texts.append(row[column])
        labels.append(_parse_label(task, spec, row[columns[-1]], path, line_number))
    if not labels:
        raise ValueError(f"{path} has no examples.")
    dtype = np.float32 if spec.labels is None else np.int32
    return Examples(texts[0], texts[1] if len(texts) > 1 else None, np.asarray(labels, dtype=dtype))


def _parse_label(task, spec, value, path, line_number):
    if spec.labels is not None:
        if value not in spec.labels:
            raise ValueError(f"{path} line {line_number}: label {value!r} is not one of {list(spec.labels)} "
                             f"for {task}.")
        return spec.labels.index(value)
    try:
        score = float(value)
    except ValueError:
        score = float("nan")
    if not STSB_RANGE[0] <= score <= STSB_RANGE[1]:
        raise ValueError(f"{path} line {line_number}: score {value!r} is not a number in {list(STSB_RANGE)} "
                         f"for {task}.")
    return score


def num_labels(task):
    """Output units of the task's head: classes, 1 for STS-B's regression."""
    spec = GLUE_TASKS[task]
    return 1 if spec.labels is None else len(spec.labels)


def pack_examples(examples, tokenizer, max_seq_length):
    """`[CLS] A [SEP] (B [SEP])` for every example: dict of (n, max_seq_length) int32 arrays (§3, figure 2)."""
    return tokenizer.pack_batch(examples.texts_a, examples.texts_b, sequence_length=max_seq_length)
