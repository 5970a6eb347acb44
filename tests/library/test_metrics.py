"""GLUE and SQuAD metrics against scipy, brute-force definitions and cases computed by hand."""

import math

import numpy as np
import pytest
import scipy.stats

from bertlib.finetune import metrics


def brute_force_mcc(labels, predictions):
    """(TP*TN - FP*FN) / sqrt((TP+FP)(TP+FN)(TN+FP)(TN+FN)), counted one pair at a time; 0 when undefined."""
    tp = tn = fp = fn = 0
    for label, prediction in zip(labels, predictions):
        if prediction == 1:
            tp, fp = tp + (label == 1), fp + (label == 0)
        else:
            tn, fn = tn + (label == 0), fn + (label == 1)
    denominator = math.sqrt((tp + fp) * (tp + fn) * (tn + fp) * (tn + fn))
    return (tp * tn - fp * fn) / denominator if denominator else 0.0


def test_accuracy_and_f1_by_hand():
    labels = [1, 1, 1, 0, 0, 0]
    predictions = [1, 1, 0, 1, 0, 0]
    assert metrics.accuracy(labels, predictions) == pytest.approx(4 / 6)
    # TP=2, FP=1, FN=1: precision 2/3, recall 2/3, F1 2/3.
    assert metrics.f1(labels, predictions) == pytest.approx(2 / 3)
    assert metrics.f1([0, 0], [0, 0]) == 0.0  # no positive anywhere: F1 undefined, reported as 0


def test_matthews_by_hand_and_against_brute_force():
    # TP=2, TN=2, FP=1, FN=1 -> (4 - 1) / sqrt(3*3*3*3) = 1/3
    assert metrics.matthews_corrcoef([1, 1, 1, 0, 0, 0], [1, 1, 0, 1, 0, 0]) == pytest.approx(1 / 3)
    assert metrics.matthews_corrcoef([1, 0, 1, 0], [0, 1, 0, 1]) == pytest.approx(-1.0)
    assert metrics.matthews_corrcoef([1, 0, 1, 0], [1, 1, 1, 1]) == 0.0  # a constant predictor
    rng = np.random.default_rng(0)
    for _ in range(50):
        labels = rng.integers(0, 2, 40)
        predictions = np.where(rng.random(40) < 0.7, labels, 1 - labels)
        assert metrics.matthews_corrcoef(labels, predictions) == pytest.approx(brute_force_mcc(labels, predictions))


def test_average_ranks_share_ties():
    np.testing.assert_allclose(metrics.average_ranks([10, 20, 20, 30, 20]), [1, 3, 3, 5, 3])
    np.testing.assert_allclose(metrics.average_ranks([3.0, 1.0, 2.0]), [3, 1, 2])


def test_pearson_and_spearman_match_scipy_with_ties():
    rng = np.random.default_rng(1)
    for _ in range(20):
        labels = rng.integers(0, 6, 50).astype(float)  # many ties, like STS-B's 0..5 scores
        predictions = labels + rng.normal(0, 1.5, 50)
        predictions[:10] = np.round(predictions[:10])
        assert metrics.pearson(labels, predictions) == pytest.approx(scipy.stats.pearsonr(labels, predictions)[0])
        assert metrics.spearman(labels, predictions) == pytest.approx(scipy.stats.spearmanr(labels, predictions)[0])


def test_task_metric_sets_follow_glue():
    labels, predictions = [1, 0, 1, 1], [1, 0, 0, 1]
    assert set(metrics.compute_metrics("cola", labels, predictions)) == {"mcc"}
    assert set(metrics.compute_metrics("mrpc", labels, predictions)) == {"accuracy", "f1"}
    assert set(metrics.compute_metrics("qqp", labels, predictions)) == {"accuracy", "f1"}
    assert set(metrics.compute_metrics("stsb", [1.0, 2.0, 3.0], [1.5, 2.5, 2.0])) == {"pearson", "spearman"}
    for task in ("sst2", "qnli", "rte", "wnli", "mnli"):
        assert set(metrics.compute_metrics(task, labels, predictions)) == {"accuracy"}
    with pytest.raises(ValueError, match="'squad_v1'"):
        metrics.compute_metrics("squad_v1", labels, predictions)
    with pytest.raises(ValueError, match="shapes"):
        metrics.accuracy([1, 0], [1])


# SQuAD: cases written from the official evaluate-v1.1.py / evaluate-v2.0.py definitions.

def test_normalize_answer_drops_case_punctuation_articles_and_spaces():
    assert metrics.normalize_answer("The  Eiffel Tower!") == "eiffel tower"
    assert metrics.normalize_answer("an apple, a pear") == "apple pear"
    assert metrics.normalize_answer("theory") == "theory"  # "the" only as a whole word
    assert metrics.normalize_answer("\"U.S.A.\"") == "usa"


def test_exact_match_and_f1_by_hand():
    assert metrics.squad_exact_match("the Eiffel tower.", "Eiffel Tower") == 1
    assert metrics.squad_exact_match("Eiffel", "Eiffel Tower") == 0
    # "cat sat on mat" vs "cat on mat": 3 common tokens, precision 3/4, recall 3/3 -> F1 6/7.
    assert metrics.squad_f1("the cat sat on the mat", "a cat on a mat") == pytest.approx(6 / 7)
    assert metrics.squad_f1("dog", "cat") == 0.0
    # Repeated words count as often as both sides have them: common("x b b", "b b b") = 2 -> P 2/3, R 2/3.
    assert metrics.squad_f1("x b b", "b b b") == pytest.approx(2 / 3)
    assert metrics.squad_f1("", "") == 1.0  # v2.0: both empty is a match
    assert metrics.squad_f1("", "Paris") == 0.0


def _dataset(questions):
    return [{"title": "t", "paragraphs": [{"context": "ctx", "qas": [
        {"id": qid, "question": "q?", "answers": [{"text": text, "answer_start": 0} for text in answers]}
        for qid, answers in questions]}]}]


def test_squad_evaluate_takes_the_best_gold_answer_and_scores_no_answer():
    dataset = _dataset([("q1", ["Denver Broncos", "the Broncos"]),  # several gold answers
                        ("q2", ["1990"]),
                        ("q3", []),  # v2.0: unanswerable, gold is ""
                        ("q4", [])])
    predictions = {"q1": "Broncos", "q2": "in 1990 it was", "q3": "", "q4": "something"}
    result = metrics.squad_evaluate(dataset, predictions)
    # q1: EM 1 against "the Broncos"; q2: EM 0, F1 = 2 * (1/4 * 1) / (1/4 + 1) = 0.4; q3: 1; q4: 0.
    assert result["exact"] == pytest.approx(100 * 2 / 4)
    assert result["f1"] == pytest.approx(100 * (1 + 0.4 + 1 + 0) / 4)
    assert result["total"] == 4
    assert result["HasAns_exact"] == pytest.approx(50.0) and result["HasAns_total"] == 2
    assert result["NoAns_exact"] == pytest.approx(50.0) and result["NoAns_f1"] == pytest.approx(50.0)


def test_squad_evaluate_counts_a_missing_prediction_as_zero():
    result = metrics.squad_evaluate(_dataset([("q1", ["Paris"]), ("q2", ["Rome"])]), {"q1": "paris"})
    assert result["exact"] == pytest.approx(50.0) and result["total"] == 2
    assert "HasAns_exact" not in result  # v1.1-style data: no breakdown
