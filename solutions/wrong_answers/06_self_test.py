"""Wrong answers to the exercises of solutions/06_self_test.ipynb (see 01_problem_setting.py)."""

WRONG_ANSWERS = {
    "6.1": {
        "ceil instead of rint": [("np.rint(num_eligible * selection_rate)", "np.ceil(num_eligible * selection_rate)")],
        "no cap at max_predictions": [("min(max_predictions, ", "min(10 ** 9, ")],
        "expected masks without the 80%": [("sequence_length * selection_rate * mask_token_rate",
                                            "sequence_length * selection_rate")],
        "[CLS] and [SEP] counted as eligible": [("np.rint(num_eligible * selection_rate)",
                                                 "np.rint((num_eligible + 2) * selection_rate)")],
        "halves rounded up": [("np.rint(num_eligible * selection_rate)", "np.floor(num_eligible * selection_rate + 0.5)")],
    },
    "6.2": {
        "mask share without the 80%": [('"mask_share": 0.8 * rate', '"mask_share": rate')],
        "one neighbour only": [("(1 - rate) ** 2", "(1 - rate)")],
        "signal not rounded": [("predictions_per_sequence(sequence_length, rate, max_predictions=sequence_length)",
                                "rate * sequence_length")],
        "signal capped at 20 predictions": [("max_predictions=sequence_length", "max_predictions=20")],
    },
    "6.3": {
        "right-to-left mask equal to left-to-right": [("left.T.copy()", "left.copy()")],
        "either side instead of both": [("mask[i, :i].any() and mask[i, i + 1:].any()", "mask[i, :i].any() or mask[i, i + 1:].any()")],
        "masks without the diagonal": [("np.tril(np.ones((n, n), dtype=bool))", "np.tril(np.ones((n, n), dtype=bool), -1)")],
        "a row's own position counted as a side": [("mask[i, :i].any() and mask[i, i + 1:].any()",
                                                    "mask[i, :i + 1].any() and mask[i, i:].any()")],
    },
    "6.4": {
        "return 0.75": '''import itertools


def best_additive_xor_accuracy(values=(-2.0, -1.0, 1.0, 2.0)):
    return 0.75
''',
        "AND instead of XOR": [("bool(a ^ b)", "bool(a & b)")],
        "the values ignored: signs only": [("itertools.product(values, repeat=4)", "itertools.product((-1.0, 1.0), repeat=4)")],
        "divided by three cases": [("correct / 4", "correct / 3")],
    },
    "6.5": {
        "share of the new error, not the previous": [("gain / (100 - (score - gain))", "gain / (100 - score)")],
        "relative gain": [("gain / (100 - (score - gain))", "gain / (score - gain)")],
        "the largest share instead of the smallest": [("smallest = min(", "smallest = max(")],
        "a constant name": [("smallest = min(ABSTRACT, key=lambda name: error_reduction(*ABSTRACT[name]))", 'smallest = "GLUE"')],
    },
}
