"""Wrong answers to the exercises of solutions/03_masked_lm.ipynb (see 01_problem_setting.py)."""

WRONG_ANSWERS = {
    "3.1": {
        "a wrong 'random' entry": [('"random": selected * random_rate', '"random": selected * 0.2')],
        "random share without the 15%": [("random_share = 0.15 * 0.10", "random_share = 0.10")],
        "unchanged as 10% of all tokens": [('"unchanged": selected * (1 - mask_rate - random_rate)',
                                            '"unchanged": length * 0.1')],
        "only [MASK] positions in the loss": [('"loss": selected,', '"loss": selected * mask_rate,')],
    },
    "3.2": {
        "random tokens drawn from the whole vocabulary": [(
            "REPLACEMENT_IDS[rng.integers(len(REPLACEMENT_IDS), size=token_ids.shape)]",
            "rng.integers(VOCABULARY_SIZE, size=token_ids.shape)")],
        "[CLS] and [SEP] may be selected": [("eligible = ~np.isin(token_ids, SPECIAL_IDS)", "eligible = token_ids != 0")],
        "10% [MASK] and 80% random": [("np.where(branch < 0.8, MASK_ID", "np.where(branch < 0.1, MASK_ID")],
        "budget truncated instead of rounded": [("np.rint(num_tokens * 0.15)", "np.floor(num_tokens * 0.15)")],
        "no minimum of one prediction": [("np.maximum(1, np.rint(num_tokens * 0.15))", "np.rint(num_tokens * 0.15)")],
        "budget over the eligible tokens only": [("np.rint(num_tokens * 0.15)", "np.rint(eligible.sum(axis=1) * 0.15)")],
        "padding counted in the budget": [("num_tokens = (token_ids != 0).sum(axis=1)",
                                           "num_tokens = np.full(len(token_ids), token_ids.shape[1])")],
        "ids unmasked: the original tokens returned": [("masked = np.where(selected, replaced, token_ids)",
                                                        "masked = token_ids")],
    },
    "3.3": {
        "constants, nothing measured": '''def measure_shares(original_ids, masked):
    return {"selected": 0.15, "mask": 0.8, "random": 0.1, "unchanged": 0.1}
''',
        "random share counts unchanged tokens too": [('"random": np.mean((shown != MASK_ID) & (shown != original))',
                                                       '"random": np.mean(shown != MASK_ID)')],
        "selected over all positions, padding included": [("slots.sum() / tokens.sum()", "slots.sum() / original_ids.size")],
        "selected over the eligible tokens only": [("slots.sum() / tokens.sum()",
                                                     "slots.sum() / (~np.isin(original_ids, SPECIAL_IDS)).sum()")],
        "shown tokens read at the first positions": [(
            'np.take_along_axis(masked["token_ids"], masked["mask_positions"], axis=1)',
            'masked["token_ids"][:, :masked["mask_positions"].shape[1]]')],
    },
    "3.4": {
        "the left-to-right targets": [("token_ids[:, :-1].astype(np.int32)", "token_ids[:, 1:].astype(np.int32)")],
        "slots at 0 ... seq - 2": [("np.arange(1, length, dtype=np.int32)", "np.arange(length - 1, dtype=np.int32)")],
        "a slot on the first padding position": [("padding_mask[:, 1:]", "padding_mask[:, :-1]")],
        "every weight 1": [("padding_mask[:, 1:].astype(np.float32)", "np.ones((count, length - 1), np.float32)")],
    },
    "3.5": {
        "a dict with made-up keys": [("answers = [True, False, True, False, True]", """answers = {
    "statement one": True,
    "statement two": False,
    "statement three": True,
    "statement four": False,
    "statement five": True,
}""")],
        "everything True": [("answers = [True, False, True, False, True]", "answers = [True] * 5")],
        "the random branch as the cloze-keeper": [("answers = [True, False, True, False, True]",
                                                   "answers = [True, True, True, False, True]")],
        "every answer flipped": [("answers = [True, False, True, False, True]", "answers = [False, True, False, True, False]")],
        "the words instead of booleans": [("answers = [True, False, True, False, True]",
                                           'answers = ["True", "False", "True", "False", "True"]')],
    },
}
