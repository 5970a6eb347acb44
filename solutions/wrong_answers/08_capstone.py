"""Wrong answers to the exercises of solutions/08_capstone.ipynb (see 01_problem_setting.py)."""

REFERENCE_AUDIT = """audit = {
    CONTRIBUTIONS[0]: (3, "§5.1: LTR & No NSP loses 10.7 SQuAD F1; our toy MLM encoder beat LTR on a right-context probe."),
    CONTRIBUTIONS[1]: (3, "§4: one backbone and a one-layer head for GLUE, SQuAD and SWAG."),
    CONTRIBUTIONS[2]: (1, "§5.1: a clear loss on QNLI only; NSP is solvable from topic cues and later dropped by RoBERTa."),
    CONTRIBUTIONS[3]: (3, "§5.2: accuracy rises monotonically with size on MRPC, MNLI and the LM."),
    CONTRIBUTIONS[4]: (2, "C.1 is one figure; our toy rerun shows both halves."),
}"""

WRONG_ANSWERS = {
    "8.1": {
        "the keep rate itself": [("keep_rate / visible", "keep_rate")],
        "0.0 instead of None": [("None if visible <= 0 else", "0.0 if visible <= 0 else")],
        "the random share of the visible words": [("else keep_rate / visible", "else random_rate / visible")],
        "division by zero when never visible": [("None if visible <= 0 else keep_rate / visible", "keep_rate / visible")],
    },
    "8.2": {
        "without [MASK]: 0/100/0": [('"mask": (0.0, 0.5)', '"mask": (0.0, 1.0)')],
        "without keep: 90/10/0": [('"keep": (0.8, 0.2)', '"keep": (0.9, 0.1)')],
        "random and keep swapped": [('"random": (0.8, 0.0), "keep": (0.8, 0.2)', '"random": (0.8, 0.2), "keep": (0.8, 0.0)')],
        "always the paper's recipe": [("}[without]", "}[None]")],
    },
    "8.3": {
        "epochs from 512-token steps": [("1_000_000 * 128_000 / 3.3e9", "1_000_000 * 256 * 512 / 3.3e9")],
        "gain over GPT from the pre-OpenAI row": [("gain_over_gpt = 82.1 - 75.1", "gain_over_gpt = 82.1 - 74.0")],
        "random share 10%": [("random_share = 0.15 * 0.10", "random_share = 0.10")],
        "hand estimate without embeddings": [(
            "12 * num_layers * hidden_dim ** 2 + (vocabulary_size + positions + segments) * hidden_dim",
            "12 * num_layers * hidden_dim ** 2")],
        "tokens per batch at 128": [("batch_tokens = 256 * 512", "batch_tokens = 256 * 128")],
    },
    "8.4": {
        "attention cost without n": [("4 * n * hidden_dim", "4 * hidden_dim ** 2")],
        "not relative to all-512": [(" / flops_per_step(512, hidden_dim)", "")],
        "shares ignored": [("share * flops_per_step(n, hidden_dim)", "flops_per_step(n, hidden_dim)")],
        "cost per token, not per step": [("return batch * n * (", "return batch * (")],
    },
    "8.5": {
        "mean over padding too": [("(sequence_output * mask).sum(axis=1) / mask.sum(axis=1)", "sequence_output.mean(axis=1)")],
        "[CLS] read at the last position": [("sequence_output[:, 0]", "sequence_output[:, -1]")],
        "a sum, not a mean": [(" / mask.sum(axis=1)", "")],
        "divided by the sequence length": [("/ mask.sum(axis=1)", "/ sequence_output.shape[1]")],
    },
    "8.6": {
        "'All fine, nothing to add.' five times": [(REFERENCE_AUDIT, """audit = {
    CONTRIBUTIONS[0]: (2, "All fine, nothing to add."),
    CONTRIBUTIONS[1]: (2, "All fine, nothing to add."),
    CONTRIBUTIONS[2]: (1, "All fine, nothing to add."),
    CONTRIBUTIONS[3]: (2, "All fine, nothing to add."),
    CONTRIBUTIONS[4]: (2, "All fine, nothing to add."),
}""")],
        "NSP given three stars": [("CONTRIBUTIONS[2]: (1,", "CONTRIBUTIONS[2]: (3,")],
        "a contribution left out": [(
            '    CONTRIBUTIONS[1]: (3, "§4: one backbone and a one-layer head for GLUE, SQuAD and SWAG."),\n', "")],
        "five stars": [("CONTRIBUTIONS[1]: (3,", "CONTRIBUTIONS[1]: (5,")],
        "the same reason copied five times": [(REFERENCE_AUDIT, """audit = {
    CONTRIBUTIONS[0]: (3, "See section 5.1 of the paper for this one."),
    CONTRIBUTIONS[1]: (3, "See section 5.1 of the paper for this one."),
    CONTRIBUTIONS[2]: (1, "See section 5.1 of the paper for this one."),
    CONTRIBUTIONS[3]: (3, "See section 5.1 of the paper for this one."),
    CONTRIBUTIONS[4]: (2, "See section 5.1 of the paper for this one."),
}""")],
        "vague reasons that name no evidence": [(REFERENCE_AUDIT, """audit = {
    CONTRIBUTIONS[0]: (3, "Clearly the main Advance of the paper overall."),
    CONTRIBUTIONS[1]: (3, "A single model does All the tasks, which is nice."),
    CONTRIBUTIONS[2]: (1, "Authors of later work did not keep it at All."),
    CONTRIBUTIONS[3]: (3, "Bigger models Always seem to do better on these."),
    CONTRIBUTIONS[4]: (2, "Apparently true, though I have not checked it."),
}""")],
    },
}
