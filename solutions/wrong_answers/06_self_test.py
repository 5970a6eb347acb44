"""Wrong answers to the exercises of solutions/06_self_test.ipynb (see 01_problem_setting.py)."""

WRONG_ANSWERS = {
    "6.1": {
        "ceil instead of rint": [("np.rint(num_tokens * selection_rate)", "np.ceil(num_tokens * selection_rate)")],
        "no cap at max_predictions": [("min(max_predictions, ", "min(10 ** 9, ")],
        "expected masks without the 80%": [("sequence_length * selection_rate * mask_token_rate",
                                            "sequence_length * selection_rate")],
        "[CLS] and [SEP] left out of the budget": [("np.rint(num_tokens * selection_rate)",
                                                    "np.rint((num_tokens - 2) * selection_rate)")],
        "halves rounded up": [("np.rint(num_tokens * selection_rate)", "np.floor(num_tokens * selection_rate + 0.5)")],
        "the count's variance, not its standard deviation": [("float(np.sqrt(sequence_length * p * (1 - p)))",
                                                              "float(sequence_length * p * (1 - p))"),
                                                             ("float(np.sqrt(selected * 0.8 * 0.2))",
                                                              "float(selected * 0.8 * 0.2)")],
        "the exact rule spread like 15% coins": [("selected * 0.8 * 0.2", "sequence_length * 0.15 * 0.85")],
        "the independent rule with the 80% coin only": [("p = 0.15 * 0.8", "p = 0.8")],
        "both rules alike": [('if rule == "independent":', "if True:")],
    },
    "6.2": {
        "mask share without the 80%": [('"mask_share": 0.8 * rate', '"mask_share": rate')],
        "one neighbour only": [('"both_neighbours_intact": (1 - rate) ** 2', '"both_neighbours_intact": (1 - rate)')],
        "signal not rounded": [("predictions_per_sequence(sequence_length, rate, max_predictions=sequence_length)",
                                "rate * sequence_length")],
        "signal capped at 20 predictions": [("max_predictions=sequence_length", "max_predictions=20")],
        "intact targets with one neighbour": [("return sequence_length * rate * (1 - rate) ** 2",
                                               "return sequence_length * rate * (1 - rate)")],
        "the rate with the most targets": [("best_rate = 1 / 3", "best_rate = 0.99")],
        "the paper's 15%": [("best_rate = 1 / 3", "best_rate = 0.15")],
        "the rate that halves the context": [("best_rate = 1 / 3", "best_rate = 0.5")],
        "best_count at the paper's rate": [("best_count = intact_targets(best_rate)", "best_count = intact_targets(0.15)")],
    },
    "6.3": {
        "window exclusive": [("<= window", "< window")],
        "one layer too many": [("reach, layers = np.eye(n, dtype=int), 0", "reach, layers = np.eye(n, dtype=int), 1")],
        "the distance, not the layers": [("return layers if reach[i, j] else None", "return abs(i - j)")],
        "a one-sided window": [("np.abs(positions[:, None] - positions[None, :]) <= window",
                                "positions[None, :] - positions[:, None] <= window")],
        "every layer sees everything": [("return np.abs(positions[:, None] - positions[None, :]) <= window",
                                         "return np.ones((n, n), dtype=bool)")],
        "a position never sees itself": [("reach, layers = np.eye(n, dtype=int), 0",
                                          "reach, layers = window_mask(n, window).astype(int), 1")],
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
        "ascending: the smallest share first": [("reverse=True", "reverse=False")],
        "ranked by the gain itself": [("key=lambda name: error_reduction(*ABSTRACT[name])",
                                       "key=lambda name: ABSTRACT[name][1]")],
        "ranked by the score": [("key=lambda name: error_reduction(*ABSTRACT[name])",
                                 "key=lambda name: ABSTRACT[name][0]")],
        "the guide's three numbers": [(', "SQuAD v2.0": (83.1, 5.1)}', "}")],
    },
}

# Answers that are right another way than the reference (`bertlib exercises test` wants each to pass the public
# checks and the hidden tests alike): the values rounded as the question says, where the reference leaves them unrounded.
RIGHT_ANSWERS = {
    "6.1": {"mask_count_std rounded to 2 decimals": [
        ("return float(np.sqrt(sequence_length * p * (1 - p)))", "return round(float(np.sqrt(sequence_length * p * (1 - p))), 2)"),
        ("return float(np.sqrt(selected * 0.8 * 0.2))", "return round(float(np.sqrt(selected * 0.8 * 0.2)), 2)")]},
    "6.2": {"best_rate to 3 decimals, best_count to 1": [
        ("best_rate = 1 / 3", "best_rate = 0.333"),
        ("best_count = intact_targets(best_rate)", "best_count = round(intact_targets(best_rate), 1)")]},
}
