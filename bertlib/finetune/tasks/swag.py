"""SWAG (§4.4): choose the most plausible of four endings."""

import csv
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
from bertlib.finetune.tasks.heads import BertMultipleChoice

# SWAG (§4.4): four candidate endings; the input for each is `[CLS] sent1 [SEP] sent2 ending_i [SEP]`.

SWAG_COLUMNS = ("sent1", "sent2", "ending0", "ending1", "ending2", "ending3", "label")
SWAG_CHOICES = 4
SWAG_FILES = {"train": "train.csv", "dev": "val.csv"}


def swag_file(data_dir, split):
    """`train.csv` or `val.csv` (the dev split) of the SWAG release, or `data_dir` itself when it is a file;
    `data_dir=None` finds SWAG by name (`bertlib.io.downloads.find`)."""
    if data_dir is None:
        from bertlib.io import downloads

        data_dir = downloads.find("swag")
    data_dir = Path(data_dir)
    if data_dir.is_file():
        return data_dir
    if split not in SWAG_FILES:
        raise ValueError(f"Unknown split {split!r} for swag; expected one of {list(SWAG_FILES)}.")
    return existing_file(data_dir / SWAG_FILES[split], f"the SWAG layout DATA_DIR/{SWAG_FILES[split]}")


def load_swag(path):
    """Read a SWAG CSV: a context `sent1`, the start of the next sentence `sent2`, four endings, a label 0-3.

    Returns `(contexts, candidates, labels)`: n strings, n lists of 4 strings, (n,) int32.
    """
    path = Path(path)
    with io.StringIO(read_text(existing_file(path, "a SWAG CSV")), newline="") as handle:
        reader = csv.DictReader(handle)
        missing = [name for name in SWAG_COLUMNS if name not in (reader.fieldnames or [])]
        if missing:
            raise ValueError(f"{path} has the columns {reader.fieldnames} but SWAG needs {list(SWAG_COLUMNS)} "
                             f"(missing {missing}).")
        contexts, candidates, labels = [], [], []
        for line_number, row in enumerate(reader, start=2):
            if row["label"] not in {str(index) for index in range(SWAG_CHOICES)}:
                raise ValueError(f"{path} line {line_number}: label {row['label']!r} is not one of "
                                 f"{[str(index) for index in range(SWAG_CHOICES)]}.")
            contexts.append(row["sent1"])
            candidates.append([f"{row['sent2']} {row[f'ending{index}']}" for index in range(SWAG_CHOICES)])
            labels.append(int(row["label"]))
    if not labels:
        raise ValueError(f"{path} has no examples.")
    return contexts, candidates, np.asarray(labels, dtype=np.int32)


def pack_swag(contexts, candidates, tokenizer, max_seq_length):
    """Dict of (n, 4, max_seq_length) int32 arrays: every (context, candidate) pair packed."""
    texts_a = [context for context in contexts for _ in range(SWAG_CHOICES)]
    texts_b = [candidate for choices in candidates for candidate in choices]
    packed = tokenizer.pack_batch(texts_a, texts_b, sequence_length=max_seq_length)
    return {name: array.reshape(len(contexts), SWAG_CHOICES, -1) for name, array in packed.items()}


class SwagTask(Task):
    """SWAG (§4.4): one score per (context, ending) pair from the pooled [CLS] vector, softmax over the four."""

    name = "swag"
    metric_names = metrics.TASK_METRICS["swag"]
    output_patterns = ("*_predictions.tsv",)

    def read(self, data_dir, tokenizer, settings):
        contexts, candidates, labels = load_swag(swag_file(data_dir, "train"))
        keep = subset(len(labels), settings.max_train_examples, settings.seed)
        train_inputs = pack_swag([contexts[i] for i in keep], [candidates[i] for i in keep], tokenizer,
                                 settings.max_seq_length)
        contexts, candidates, dev_labels = load_swag(swag_file(data_dir, "dev"))
        keep_dev = subset(len(dev_labels), settings.max_eval_examples)
        dev_inputs = pack_swag([contexts[i] for i in keep_dev], [candidates[i] for i in keep_dev], tokenizer,
                               settings.max_seq_length)
        return TaskData(self.name, train_inputs, labels[keep], dev_inputs, dev_labels[keep_dev], len(keep))

    def build_model(self, backbone, settings):
        return BertMultipleChoice(backbone, num_choices=SWAG_CHOICES, dropout=backbone.config.dropout, name="swag_multiple_choice")

    def compile(self, model, optimizer, jit_compile="auto"):
        cross_entropy_compile(model, optimizer, jit_compile)

    def evaluate(self, model, data, settings):
        outputs = predict(model, data.dev_inputs, EVAL_BATCH_SIZE)
        predictions = {"dev": outputs.argmax(axis=-1)}
        undefined = self.undefined_scores(outputs)
        if undefined:
            return undefined, predictions
        return metrics.compute_metrics(self.name, data.dev_targets, predictions["dev"]), predictions

    def write_predictions(self, folder, predictions, data, write_text):
        return [write_prediction_tsv(folder, "dev", predictions["dev"], write_text)]


TASKS = (SwagTask(),)
