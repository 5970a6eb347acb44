"""The scores the paper reports: GLUE's metric per task (§4.1, appendix B.1) and SQuAD's EM / F1 (§4.2, §4.3).

Everything is plain numpy and Python so that a learner can read each definition in a few lines.
GLUE's choices: Matthews correlation for CoLA, Pearson and Spearman correlation for STS-B, accuracy and F1
for MRPC and QQP, accuracy for the rest. SQuAD's exact match and F1 follow the official evaluation scripts
(`evaluate-v1.1.py`, `evaluate-v2.0.py`) word for word.
"""

import collections
import re
import string

import numpy as np

# GLUE's metrics per task; the first one is the one a hyperparameter search picks on together with the rest
# (their mean), as GLUE averages a task's metrics into its score.
TASK_METRICS = {
    "cola": ("mcc",),
    "sst2": ("accuracy",),
    "mrpc": ("accuracy", "f1"),
    "stsb": ("pearson", "spearman"),
    "qqp": ("accuracy", "f1"),
    "mnli": ("accuracy",),
    "qnli": ("accuracy",),
    "rte": ("accuracy",),
    "wnli": ("accuracy",),
    "swag": ("accuracy",),
    "squad_v1": ("exact", "f1"),
    "squad_v2": ("exact", "f1"),
}


def _as_arrays(labels, predictions):
    labels, predictions = np.asarray(labels), np.asarray(predictions)
    if labels.shape != predictions.shape or labels.ndim != 1 or labels.size == 0:
        raise ValueError(f"labels and predictions must be non-empty 1-D arrays of one length, got shapes "
                         f"{labels.shape} and {predictions.shape}.")
    return labels, predictions


def accuracy(labels, predictions):
    """The fraction of predictions equal to the label."""
    labels, predictions = _as_arrays(labels, predictions)
    return float(np.mean(labels == predictions))


def f1(labels, predictions, positive=1):
    """Binary F1 of the positive class: 2 * precision * recall / (precision + recall); 0 when undefined."""
    labels, predictions = _as_arrays(labels, predictions)
    true_positives = np.sum((predictions == positive) & (labels == positive))
    predicted_positives, actual_positives = np.sum(predictions == positive), np.sum(labels == positive)
    if true_positives == 0:
        return 0.0
    precision, recall = true_positives / predicted_positives, true_positives / actual_positives
    return float(2 * precision * recall / (precision + recall))


def matthews_corrcoef(labels, predictions):
    """Matthews correlation (CoLA's metric), in its multiclass form (Gorodkin 2004); 0 when undefined.

    For two classes it is (TP*TN - FP*FN) / sqrt((TP+FP)(TP+FN)(TN+FP)(TN+FN)).
    """
    labels, predictions = _as_arrays(labels, predictions)
    classes = np.union1d(labels, predictions)
    confusion = np.array([[np.sum((labels == true) & (predictions == predicted)) for predicted in classes]
                          for true in classes], dtype=np.float64)
    true_counts, predicted_counts = confusion.sum(axis=1), confusion.sum(axis=0)
    total, correct = confusion.sum(), np.trace(confusion)
    covariance = correct * total - predicted_counts @ true_counts
    denominator = np.sqrt((total**2 - predicted_counts @ predicted_counts) * (total**2 - true_counts @ true_counts))
    return float(covariance / denominator) if denominator > 0 else 0.0


def pearson(labels, predictions):
    """Pearson's linear correlation coefficient."""
    labels, predictions = (array.astype(np.float64) for array in _as_arrays(labels, predictions))
    labels, predictions = labels - labels.mean(), predictions - predictions.mean()
    denominator = np.sqrt(np.sum(labels**2) * np.sum(predictions**2))
    return float(np.sum(labels * predictions) / denominator) if denominator > 0 else 0.0


def average_ranks(values):
    """Ranks 1..n of `values`; tied values share the mean of the ranks they occupy (as Spearman needs)."""
    values = np.asarray(values)
    order = np.argsort(values, kind="stable")
    sorted_values = values[order]
    ranks = np.empty(len(values), dtype=np.float64)
    start = 0
    while start < len(values):
        end = start
        while end + 1 < len(values) and sorted_values[end + 1] == sorted_values[start]:
            end += 1
        ranks[order[start:end + 1]] = (start + end) / 2 + 1  # mean of ranks start+1 .. end+1
        start = end + 1
    return ranks


def spearman(labels, predictions):
    """Spearman's rank correlation: Pearson's correlation of the average ranks."""
    labels, predictions = _as_arrays(labels, predictions)
    return pearson(average_ranks(labels), average_ranks(predictions))


GLUE_METRIC_FUNCTIONS = {"accuracy": accuracy, "f1": f1, "mcc": matthews_corrcoef, "pearson": pearson,
                         "spearman": spearman}


def compute_metrics(task, labels, predictions):
    """GLUE's metrics for `task` (a key of `TASK_METRICS` except SQuAD) as a dict name -> float."""
    if task not in TASK_METRICS or task.startswith("squad"):
        raise ValueError(f"No classification metrics for task {task!r}; expected one of "
                         f"{sorted(name for name in TASK_METRICS if not name.startswith('squad'))}.")
    return {name: GLUE_METRIC_FUNCTIONS[name](labels, predictions) for name in TASK_METRICS[task]}


def selection_score(task, metrics):
    """One number to pick hyperparameters on dev: the mean of the task's metrics (GLUE's per-task score)."""
    return float(np.mean([metrics[name] for name in TASK_METRICS[task]]))


# SQuAD: the official evaluation scripts' definitions.

_PUNCTUATION = set(string.punctuation)

def normalize_answer(text):
    """Lowercase, drop punctuation, drop the articles a/an/the, collapse whitespace (official SQuAD script)."""
    text = text.lower()
    text = "".join(character for character in text if character not in _PUNCTUATION)
    text = re.sub(r"\b(a|an|the)\b", " ", text)
    return " ".join(text.split())


def squad_exact_match(prediction, gold):
    """1 when the normalized strings are equal, else 0."""
    return int(normalize_answer(prediction) == normalize_answer(gold))


def squad_f1(prediction, gold):
    """Bag-of-words F1 between normalized answers; an empty answer only matches an empty answer (v2.0)."""
    prediction_tokens, gold_tokens = normalize_answer(prediction).split(), normalize_answer(gold).split()
    if not prediction_tokens or not gold_tokens:
        return float(prediction_tokens == gold_tokens)
    common = collections.Counter(prediction_tokens) & collections.Counter(gold_tokens)
    overlap = sum(common.values())
    if overlap == 0:
        return 0.0
    precision, recall = overlap / len(prediction_tokens), overlap / len(gold_tokens)
    return 2 * precision * recall / (precision + recall)


def squad_evaluate(dataset, predictions):
    """EM and F1 in percent over every question of a SQuAD `dataset` (the JSON's "data" list).

    Each question scores the maximum over its gold answers. A question with no gold answer (v2.0) has the
    single gold answer "" (so only the empty prediction scores). A question without a prediction scores 0.
    The result also has `total` and, when both kinds occur, the `HasAns_*` / `NoAns_*` breakdown of
    `evaluate-v2.0.py`.
    """
    exact, f1_scores, has_answer = {}, {}, {}
    for article in dataset:
        for paragraph in article["paragraphs"]:
            for question in paragraph["qas"]:
                qid = question["id"]
                gold = [answer["text"] for answer in question["answers"] if normalize_answer(answer["text"])]
                has_answer[qid] = bool(gold)
                gold = gold or [""]
                if qid not in predictions:
                    exact[qid], f1_scores[qid] = 0, 0.0
                    continue
                exact[qid] = max(squad_exact_match(predictions[qid], answer) for answer in gold)
                f1_scores[qid] = max(squad_f1(predictions[qid], answer) for answer in gold)
    if not exact:
        raise ValueError("The SQuAD dataset has no questions.")

    def summary(qids, prefix=""):
        return {f"{prefix}exact": 100.0 * sum(exact[qid] for qid in qids) / len(qids),
                f"{prefix}f1": 100.0 * sum(f1_scores[qid] for qid in qids) / len(qids),
                f"{prefix}total": len(qids)}

    result = summary(list(exact))
    with_answer = [qid for qid in exact if has_answer[qid]]
    without_answer = [qid for qid in exact if not has_answer[qid]]
    if with_answer and without_answer:
        result.update(summary(with_answer, "HasAns_"))
        result.update(summary(without_answer, "NoAns_"))
    return result
