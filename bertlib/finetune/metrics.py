"""The scores the paper reports: GLUE's metric per task (§4.1, appendix B.1) and SQuAD's EM / F1 (§4.2, §4.3).

Everything is plain numpy and Python so that a learner can read each definition in a few lines.
GLUE's choices: Matthews correlation for CoLA, Pearson and Spearman correlation for STS-B, accuracy and F1
for MRPC and QQP, accuracy for the rest. SQuAD's exact match and F1 follow the official evaluation scripts
(`evaluate-v1.1.py`, `evaluate-v2.0.py`) word for word.
"""

import collections
import math
import re
import string
import warnings

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
    """Pearson's linear correlation coefficient; NaN, with a warning, when it is undefined (as scipy).

    It is undefined when either side is constant or holds a NaN: a model that emits NaN or one value for
    every example must not get a score that looks like a result.
    """
    labels, predictions = (array.astype(np.float64) for array in _as_arrays(labels, predictions))
    if not (np.isfinite(labels).all() and np.isfinite(predictions).all()):
        return _undefined("Pearson/Spearman correlation", "labels or predictions hold NaN or infinity")
    labels, predictions = labels - labels.mean(), predictions - predictions.mean()
    denominator = np.sqrt(np.sum(labels**2) * np.sum(predictions**2))
    if not denominator > 0:
        return _undefined("Pearson/Spearman correlation", "labels or predictions are constant")
    return float(np.sum(labels * predictions) / denominator)


def _undefined(metric, reason):
    warnings.warn(f"{metric} is undefined: {reason}; the score is NaN. Check the model's outputs.",
                  RuntimeWarning, stacklevel=3)
    return float("nan")


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
    """Spearman's rank correlation: Pearson's correlation of the average ranks; NaN (with a warning) as scipy."""
    labels, predictions = _as_arrays(labels, predictions)
    if np.isnan(labels.astype(np.float64)).any() or np.isnan(predictions.astype(np.float64)).any():
        return _undefined("Spearman correlation", "labels or predictions hold NaN")  # NaN has no rank
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
    score = float(np.mean([metrics[name] for name in TASK_METRICS[task]]))
    return score if math.isfinite(score) else -math.inf  # a NaN run is never the best one


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


def squad_f1(prediction, gold, version_2=True):
    """Bag-of-words F1 between normalized answers.

    When either answer normalizes to nothing ("", "The", "."), v2.0 scores 1 if both do and 0 otherwise;
    v1.1 (`version_2=False`) has no such rule, so its F1 is 0 there (no word in common).
    """
    prediction_tokens, gold_tokens = normalize_answer(prediction).split(), normalize_answer(gold).split()
    if version_2 and (not prediction_tokens or not gold_tokens):
        return float(prediction_tokens == gold_tokens)
    common = collections.Counter(prediction_tokens) & collections.Counter(gold_tokens)
    overlap = sum(common.values())
    if overlap == 0:
        return 0.0
    precision, recall = overlap / len(prediction_tokens), overlap / len(gold_tokens)
    return 2 * precision * recall / (precision + recall)


def squad_evaluate(dataset, predictions, version_2=None, na_probs=None, na_prob_thresh=1.0):
    """EM and F1 in percent over every question of a SQuAD `dataset` (the JSON's "data" list), as the
    official `evaluate-v1.1.py` and `evaluate-v2.0.py` compute them.

    Each question scores the maximum over its gold answers; a question without a prediction scores 0 (as
    v1.1; v2.0's script leaves it out of the total, or fails on it). v1.1 compares with every gold answer as
    written. v2.0 drops gold answers that normalize to nothing, uses "" when none is left, counts a question
    as answerable when its `answers` list is not empty, and reports the `HasAns_*` / `NoAns_*` breakdown of
    whichever kinds occur. With `na_probs` (question id -> no-answer probability or score, such as the
    `null_odds.json` of `bertlib finetune`), a question whose value exceeds `na_prob_thresh` is taken as
    answered "no answer", and `best_exact`, `best_f1` and their thresholds (the best single threshold, as
    the official script's `find_best_thresh`) are added.

    Args:
        dataset: the "data" list.
        predictions: dict question id -> answer text.
        version_2: bool, or None to decide from the data (v2.0 when a question has `is_impossible` or no
            answer).
        na_probs: optional dict question id -> float (v2.0).
        na_prob_thresh: float, defaults to 1.0 (the official script's default).
    """
    questions = [question for article in dataset for paragraph in article["paragraphs"]
                 for question in paragraph["qas"]]
    if not questions:
        raise ValueError("The SQuAD dataset has no questions.")
    counts = collections.Counter(question["id"] for question in questions)
    repeated = [qid for qid, count in counts.items() if count > 1]
    if repeated:  # scores are kept by id: the second question would replace the first, and the total shrink
        raise ValueError(f"The SQuAD dataset uses question id {repeated[0]!r} {counts[repeated[0]]} times "
                         f"({len(repeated)} id(s) repeated); every question needs its own id.")
    if version_2 is None:
        version_2 = any("is_impossible" in question or not question["answers"] for question in questions)
    if na_probs is not None and not version_2:
        raise ValueError("na_probs (no-answer probabilities) apply to SQuAD v2.0 only.")
    exact, f1_scores, has_answer = {}, {}, {}
    for question in questions:
        qid = question["id"]
        gold = [answer["text"] for answer in question["answers"]]
        has_answer[qid] = bool(gold)
        if not gold and not version_2:
            raise ValueError(f"SQuAD v1.1 question {qid!r} has no answers: v1.1 scores every question against its "
                             "answers (evaluate-v1.1.py fails on it too). Unanswerable questions are v2.0's "
                             "(version_2=True).")
        if version_2:
            gold = [text for text in gold if normalize_answer(text)] or [""]
        if qid not in predictions:
            exact[qid], f1_scores[qid] = 0, 0.0
            continue
        exact[qid] = max(squad_exact_match(predictions[qid], answer) for answer in gold)
        f1_scores[qid] = max(squad_f1(predictions[qid], answer, version_2) for answer in gold)
    raw_exact, raw_f1 = dict(exact), dict(f1_scores)
    if na_probs is not None:
        missing = [qid for qid in exact if qid not in na_probs]
        if missing:
            raise ValueError(f"na_probs has no value for {len(missing)} question(s), e.g. {missing[0]!r}.")
        for qid in exact:
            if na_probs[qid] > na_prob_thresh:  # predicted "no answer": right exactly when there is none
                exact[qid] = f1_scores[qid] = float(not has_answer[qid])

    def summary(qids, prefix=""):
        return {f"{prefix}exact": 100.0 * sum(exact[qid] for qid in qids) / len(qids),
                f"{prefix}f1": 100.0 * sum(f1_scores[qid] for qid in qids) / len(qids),
                f"{prefix}total": len(qids)}

    result = summary(list(exact))
    if version_2:
        with_answer = [qid for qid in exact if has_answer[qid]]
        without_answer = [qid for qid in exact if not has_answer[qid]]
        if with_answer:
            result.update(summary(with_answer, "HasAns_"))
        if without_answer:
            result.update(summary(without_answer, "NoAns_"))
    if na_probs is not None:
        for name, scores in (("exact", raw_exact), ("f1", raw_f1)):
            result[f"best_{name}"], result[f"best_{name}_thresh"] = _best_threshold(
                scores, predictions, na_probs, has_answer)
    return result


def _best_threshold(scores, predictions, na_probs, has_answer):
    """The official `find_best_thresh`: sweep the threshold up through the sorted no-answer values.

    Below every value all questions are "no answer" (score = the unanswerable ones); raising the threshold
    past a question's value answers it: + its score if it has an answer, - 1 if it has none but a non-empty
    prediction.
    """
    score = best_score = sum(not has_answer[qid] for qid in scores)
    best_threshold = 0.0
    for qid in sorted((qid for qid in na_probs if qid in scores), key=lambda qid: na_probs[qid]):
        if has_answer[qid]:
            score += scores[qid]
        elif predictions.get(qid):
            score -= 1
        if score > best_score:
            best_score, best_threshold = score, na_probs[qid]
    return 100.0 * best_score / len(scores), float(best_threshold)
