"""SWAG (§4.4): choose the most plausible of four endings."""

import csv
from pathlib import Path

import numpy as np

from bertlib.tasks._files import existing_file

# SWAG (§4.4): four candidate endings; the input for each is `[CLS] sent1 [SEP] sent2 ending_i [SEP]`.

SWAG_COLUMNS = ("sent1", "sent2", "ending0", "ending1", "ending2", "ending3", "label")
SWAG_CHOICES = 4
SWAG_FILES = {"train": "train.csv", "dev": "val.csv"}


def swag_file(data_dir, split):
    """`train.csv` or `val.csv` (the dev split) of the SWAG release, or `data_dir` itself when it is a file;
    `data_dir=None` finds SWAG by name (`bertlib.datasets.find`)."""
    if data_dir is None:
        from bertlib import datasets

        data_dir = datasets.find("swag")
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
    with open(existing_file(path, "a SWAG CSV"), encoding="utf-8-sig", newline="") as handle:
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
