"""Wrong answers to the exercises of solutions/04_next_sentence_prediction.ipynb (see 01_problem_setting.py)."""

WRONG_ANSWERS = {
    "4.1": {
        "first [SEP] in segment B": [("[0] * (len(tokens_a) + 2) + [1] * (len(tokens_b) + 1)",
                                      "[0] * (len(tokens_a) + 1) + [1] * (len(tokens_b) + 2)")],
        "every segment id 0": [("[1] * (len(tokens_b) + 1)", "[0] * (len(tokens_b) + 1)")],
        "A and B swapped": [("[CLS] + list(tokens_a) + [SEP] + list(tokens_b) + [SEP]",
                             "[CLS] + list(tokens_b) + [SEP] + list(tokens_a) + [SEP]")],
        "no [CLS]": [("token_ids = [CLS] + list(tokens_a)", "token_ids = list(tokens_a)"),
                     ("[0] * (len(tokens_a) + 2)", "[0] * (len(tokens_a) + 1)")],
    },
    "4.2": {
        "ties shorten A": [("len(tokens_a) > len(tokens_b)", "len(tokens_a) >= len(tokens_b)")],
        "front and back swapped": [("del longer[0]\n        else:\n            longer.pop()",
                                    "longer.pop()\n        else:\n            del longer[0]")],
        "one token too many removed": [("> max_num_tokens", ">= max_num_tokens")],
        "always the last token, no draw": [("if rng.random() < 0.5:", "if False:")],
    },
    "4.3": {
        "flipped labels: 1 = IsNext": [("pairs.append((a, rng.choice(other), 1))", "pairs.append((a, rng.choice(other), 0))"),
                                       ("pairs.append((a, b, 0))", "pairs.append((a, b, 1))")],
        "every pair random": [("if rng.random() < 0.5:", "if True:")],
        "label drawn but B never replaced": [("pairs.append((a, rng.choice(other), 1))", "pairs.append((a, b, 1))")],
        "random B from any document, its own included": [
            ("rng.choice([d for j, d in enumerate(documents) if j != index])", "rng.choice(documents)")],
    },
    "4.4": {
        "classes flipped": [("== np.asarray(is_random_next, dtype=int)", "!= np.asarray(is_random_next, dtype=int)")],
        "a count, not a share": [("float(np.mean(", "float(np.sum(")],
        "constant 0.5": '''def nsp_accuracy(nsp_logits, is_random_next):
    return 0.5
''',
        "arg-min instead of arg-max": [("np.argmax(nsp_logits, axis=-1)", "np.argmin(nsp_logits, axis=-1)")],
    },
    "4.5": {
        "a made-up table whose differences are right": [(
            '"QNLI": (88.4, 84.9), "MNLI": (84.4, 83.9), "SQuAD": (88.5, 87.9), "MRPC": (86.7, 86.5), "SST-2": (92.7, 92.6)',
            '"QNLI": (90.0, 86.5), "MNLI": (80.0, 79.5), "SQuAD": (70.0, 69.4), "MRPC": (60.0, 59.8), "SST-2": (50.0, 49.9)')],
        "least hurt instead of most": [("return max(table", "return min(table")],
        "with and without swapped": [(
            '"QNLI": (88.4, 84.9), "MNLI": (84.4, 83.9), "SQuAD": (88.5, 87.9), "MRPC": (86.7, 86.5), "SST-2": (92.7, 92.6)',
            '"QNLI": (84.9, 88.4), "MNLI": (83.9, 84.4), "SQuAD": (87.9, 88.5), "MRPC": (86.5, 86.7), "SST-2": (92.6, 92.7)')],
        "most hurt = the highest score": [("key=lambda task: table[task][0] - table[task][1]", "key=lambda task: table[task][0]")],
    },
}
