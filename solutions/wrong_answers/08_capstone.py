"""Wrong answers to the exercises of solutions/08_capstone.ipynb (see 01_problem_setting.py)."""

REFERENCE_AUDIT = """audit = {
    CONTRIBUTIONS[0]: (3, "§5.1: LTR & No NSP loses 10.7 SQuAD F1; our toy MLM encoder beat LTR on a right-context probe."),
    CONTRIBUTIONS[1]: (3, "§4: one backbone and a one-layer head for GLUE, SQuAD and SWAG."),
    CONTRIBUTIONS[2]: (1, "§5.1: a clear loss on QNLI only; NSP is solvable from topic cues and later dropped by RoBERTa."),
    CONTRIBUTIONS[3]: (3, "§5.2: accuracy rises monotonically with size on MRPC, MNLI and the LM."),
    CONTRIBUTIONS[4]: (2, "C.1: 1M steps beat 500k by almost 1.0 MNLI point, shown in one figure; our toy rerun shows both halves."),
}"""

WRONG_ANSWERS = {
    "8.1": {
        "the keep rate itself": [("keep_rate / visible", "keep_rate")],
        "0.0 instead of None": [("None if visible <= 0 else", "0.0 if visible <= 0 else")],
        "the random share of the visible words": [("else keep_rate / visible", "else random_rate / visible")],
        "division by zero when never visible": [("None if visible <= 0 else keep_rate / visible", "keep_rate / visible")],
    },
    "8.2": {
        "SAME and RND swapped (the first edition's MASK/RND/SAME labels)": [
            ("random_token_rate=random / 100", "random_token_rate=same / 100")],
        "the mask share read as per mille": [("mask_token_rate=mask / 100", "mask_token_rate=mask / 1000")],
        "no check that the mixture adds up to 100": [("if mask + same + random != 100:", "if False:")],
        "always the paper's recipe": [("mask_token_rate=mask / 100,", "mask_token_rate=0.8,"),
                                      ("random_token_rate=random / 100,", "random_token_rate=0.1,")],
        "the mixture as fractions, not percent": [("mask_token_rate=mask / 100,", "mask_token_rate=mask,"),
                                                  ("random_token_rate=random / 100,", "random_token_rate=random,")],
    },
    "8.3": {
        "epochs from 512-token steps": [("1_000_000 * 128_000 / 3.3e9", "1_000_000 * 256 * 512 / 3.3e9")],
        "gain over GPT from the pre-OpenAI row": [("gain_over_gpt = 82.1 - 75.1", "gain_over_gpt = 82.1 - 74.0")],
        "random share 10%": [("random_share = 0.15 * 0.10", "random_share = 0.10")],
        "hand estimate without embeddings": [(
            "12 * num_layers * hidden_dim ** 2 + (vocabulary_size + positions + segments) * hidden_dim",
            "12 * num_layers * hidden_dim ** 2")],
        "tokens per batch at 128": [("batch_tokens = 256 * 512", "batch_tokens = 256 * 128")],
        "the Table 1 averages as the leaderboard scores": [("gain_leaderboard = 80.5 - 72.8", "gain_leaderboard = 82.1 - 75.1")],
    },
    "8.4": {
        "attention cost without n": [("4 * n * hidden_dim", "4 * hidden_dim ** 2")],
        "not relative to all-512": [(" / flops_per_step(512, hidden_dim)", "")],
        "shares ignored": [("share * flops_per_step(n, hidden_dim)", "flops_per_step(n, hidden_dim)")],
        "cost per token, not per step": [("return batch * n * (", "return batch * (")],
        "half-cost share: the shares swapped": [("return (0.5 - ratio) / (1 - ratio)", "return 1 - (0.5 - ratio) / (1 - ratio)")],
        "half-cost share from the token count alone (no attention term)": [(
            "ratio = flops_per_step(short, hidden_dim) / flops_per_step(long, hidden_dim)", "ratio = short / long")],
        "half-cost share: half the steps": [("return (0.5 - ratio) / (1 - ratio)", "return 0.5")],
    },
    "8.5": {
        "concatenated with the last layer first": [("np.concatenate(hidden_states[-4:], axis=-1)",
                                                    "np.concatenate(hidden_states[:-5:-1], axis=-1)")],
        "the sum of all layers": [("np.sum(hidden_states[-4:], axis=0)", "np.sum(hidden_states, axis=0)")],
        "second-to-last counted from the first layer": [("return hidden_states[-2]", "return hidden_states[1]")],
        "concatenated along the sequence": [("axis=-1)", "axis=1)")],
        "the mean of the last four, not the sum": [("np.sum(hidden_states[-4:], axis=0)", "np.mean(hidden_states[-4:], axis=0)")],
        "best feature: the second-to-last layer": [('best_feature, behind_fine_tuning = "concat_last_four"',
                                                    'best_feature, behind_fine_tuning = "second_to_last"')],
        "behind fine-tuning BERT_LARGE, not BERT_BASE": [("round(96.4 - 96.1, 1)", "round(96.6 - 96.1, 1)")],
    },
    "8.6": {
        "'See chapter 4' for contribution 1": [(
            'CONTRIBUTIONS[0]: (3, "§5.1: LTR & No NSP loses 10.7 SQuAD F1; our toy MLM encoder beat LTR on a right-context probe."),',
            'CONTRIBUTIONS[0]: (3, "See chapter 4 for this one, it is convincing."),')],
        "'See chapter 4' for NSP: the right chapter, nothing measured": [(
            'CONTRIBUTIONS[2]: (1, "§5.1: a clear loss on QNLI only; NSP is solvable from topic cues and later dropped by RoBERTa."),',
            'CONTRIBUTIONS[2]: (1, "See chapter 4 for this one, really."),')],
        "a made-up figure": [("§5.2: accuracy rises monotonically with size on MRPC, MNLI and the LM.",
                              "§5.2: the biggest model gains 12.5 points on MRPC.")],
        "another contribution's evidence": [(
            "C.1: 1M steps beat 500k by almost 1.0 MNLI point, shown in one figure; our toy rerun shows both halves.",
            "§5.1: the LTR model loses 10.7 SQuAD F1, which shows MLM wins.")],
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

# Answers that are right another way than the reference (`bertlib exercises test` wants each to pass the public
# checks and the hidden tests alike): the values rounded as the question says, or unrounded where the reference rounds.
RIGHT_ANSWERS = {
    "8.3": {"each value rounded as its comment says": [
        ("epochs_of_corpus = 1_000_000 * 128_000 / 3.3e9", "epochs_of_corpus = round(1_000_000 * 128_000 / 3.3e9, 1)"),
        ("random_share = 0.15 * 0.10", "random_share = round(0.15 * 0.10, 4)"),
        ("gain_over_gpt = 82.1 - 75.1", "gain_over_gpt = round(82.1 - 75.1, 1)"),
        ("gain_over_pre_openai = 82.1 - 74.0", "gain_over_pre_openai = round(82.1 - 74.0, 1)"),
        ("gain_leaderboard = 80.5 - 72.8", "gain_leaderboard = round(80.5 - 72.8, 1)")]},
    "8.4": {"base_half unrounded": [("base_half = round(half_cost_share(768), 3)", "base_half = half_cost_share(768)")]},
    "8.5": {"behind_fine_tuning unrounded": [("round(96.4 - 96.1, 1)", "96.4 - 96.1")]},
    "8.6": {"Table 6's size columns quoted (the learner trial of 2026-12-05)": [(
        "§5.2: accuracy rises monotonically with size on MRPC, MNLI and the LM.",
        "§5.2, Table 6: MRPC rises from 79.8 to 87.8 as the model grows from 3 to 24 layers (H = 768 to 1024, "
        "12 to 16 heads).")]},
}
