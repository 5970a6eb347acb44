"""Wrong answers to the exercises of solutions/01_problem_setting.ipynb; each must fail its exercise's checks.

`bertlib exercises test` runs them (see coursekit/coursekit/exercises.py). A wrong answer is the whole solution cell,
or a list of (old, new) replacements applied to the reference solution cell.
"""

WRONG_ANSWERS = {
    "1.1": {
        "padding mask broadcast on the query axis": [("padding_mask[:, None, None, :]", "padding_mask[:, None, :, None]")],
        "causal mask looks at the future (triu)": [("np.tril(", "np.triu(")],
        "causal flag ignored": [("if causal:", "if False:")],
        "causal mask without the diagonal": [("np.tril(np.ones((seq, seq), dtype=bool))",
                                              "np.tril(np.ones((seq, seq), dtype=bool), -1)")],
        "shape only: everything may attend": '''def attention_mask(padding_mask, causal=False):
    batch, seq = np.shape(padding_mask)
    return np.ones((batch, 1, seq, seq), dtype=bool)
''',
    },
    "1.2": {
        "causal model affects the positions before the change": [("range(changed, sequence_length)",
                                                                  "range(0, changed + 1)")],
        "causal, off by one: the changed position itself left out": [("range(changed, sequence_length)",
                                                                     "range(changed + 1, sequence_length)")],
        "constant: every position, causal or not": [("if causal:", "if False:")],
        "only the changed position moves": '''def positions_affected(changed, sequence_length, causal):
    return [changed]
''',
    },
    "1.3": {
        "constant True": '''def depends_on_itself(num_layers, sequence_length, causal=False):
    return np.ones(sequence_length, dtype=bool)
''',
        "constant False": '''def depends_on_itself(num_layers, sequence_length, causal=False):
    return np.zeros(sequence_length, dtype=bool)
''',
        "guessed from the layer count, ignoring a length of 1": '''def depends_on_itself(num_layers, sequence_length, causal=False):
    return np.full(sequence_length, num_layers >= 2 and not causal)
''',
        "the mask lets a position see itself": [("no_self = ~np.eye(sequence_length, dtype=bool)",
                                                 "no_self = np.ones((sequence_length, sequence_length), dtype=bool)")],
        "causal mask keeps the diagonal (j <= i)": [
            ("no_self &= np.tril(np.ones((sequence_length, sequence_length), dtype=bool))  # keys j < i only",
             "no_self = np.tril(np.ones((sequence_length, sequence_length), dtype=bool))")],
        "causal flag ignored": [("if causal:", "if False:")],
        "one layer whatever num_layers": [("for _ in range(num_layers):", "for _ in range(1):")],
    },
    "1.4": {
        "ELMo called unidirectional": [('"ELMo": ("shallow", "feature-based")',
                                        '"ELMo": ("unidirectional", "feature-based")')],
        "GPT called feature-based": [('"GPT": ("unidirectional", "fine-tuning")',
                                      '"GPT": ("unidirectional", "feature-based")')],
        "BERT called shallow": [('"BERT": ("deep", "fine-tuning")', '"BERT": ("shallow", "fine-tuning")')],
        "the two F1 numbers swapped": [("squad_f1 = (88.5, 77.8)", "squad_f1 = (77.8, 88.5)")],
        "the No NSP row instead of LTR & No NSP": [("squad_f1 = (88.5, 77.8)", "squad_f1 = (88.5, 87.9)")],
    },
}
