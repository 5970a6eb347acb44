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
        "the chapter's token masker copied as is": '''def mask_tokens(token_ids, rng):
    eligible = ~np.isin(token_ids, SPECIAL_IDS)
    keys = np.where(eligible, rng.random(token_ids.shape), 2.0)
    rank = np.argsort(np.argsort(keys, axis=1, kind="stable"), axis=1)
    num_tokens = (token_ids != 0).sum(axis=1)  # [CLS] and [SEP] count, padding does not
    budget = np.minimum(MAX_PREDICTIONS, np.maximum(1, np.rint(num_tokens * 0.15)))
    budget = np.where(eligible.any(axis=1), budget, 0)
    selected = eligible & (rank < budget[:, None])
    branch = rng.random(token_ids.shape)
    random_tokens = REPLACEMENT_IDS[rng.integers(len(REPLACEMENT_IDS), size=token_ids.shape)]
    replaced = np.where(branch < 0.8, MASK_ID, np.where(branch < 0.9, random_tokens, token_ids))
    masked = np.where(selected, replaced, token_ids)
    order = np.argsort(~selected, axis=1, kind="stable")
    order = np.pad(order, ((0, 0), (0, max(0, MAX_PREDICTIONS - order.shape[1]))))[:, :MAX_PREDICTIONS]
    weights = np.arange(MAX_PREDICTIONS) < selected.sum(axis=1, keepdims=True)
    positions = np.where(weights, order, 0)
    mask_ids = np.where(weights, np.take_along_axis(token_ids, positions, axis=1), 0)
    return {"token_ids": masked.astype(np.int32), "mask_positions": positions.astype(np.int32),
            "mask_ids": mask_ids.astype(np.int32), "mask_weights": weights.astype(np.float32)}
''',
        "a word's key read at its last piece": [("key=lambda word: keys[row, word[0]]", "key=lambda word: keys[row, word[-1]]")],
        "the walk stops at the first word that does not fit": [(
            "            if taken + len(word) <= budget[row]:  # a word that does not fit is skipped\n"
            "                selected[row, word] = True\n"
            "                taken += len(word)",
            "            if taken + len(word) > budget[row]:\n"
            "                break\n"
            "            selected[row, word] = True\n"
            "            taken += len(word)")],
        "the budget counted in words, not tokens": [("if taken + len(word) <= budget[row]:", "if taken + 1 <= budget[row]:"),
                                                   ("taken += len(word)", "taken += 1")],
        "a '##' piece after [SEP] joined to the word before it": [
            ("if continuation[row, position] and words and words[-1][-1] == position - 1:",
             "if continuation[row, position] and words:")],
        "the 80/10/10 branch drawn once per word": [(
            "                selected[row, word] = True\n",
            "                selected[row, word] = True\n                branch[row, word] = branch[row, word[0]]\n")],
        "random tokens drawn from the whole vocabulary": [(
            "REPLACEMENT_IDS[rng.integers(len(REPLACEMENT_IDS), size=token_ids.shape)]",
            "rng.integers(VOCABULARY_SIZE, size=token_ids.shape)")],
        "budget over the eligible tokens only": [("np.rint(num_tokens * 0.15)", "np.rint(eligible.sum(axis=1) * 0.15)")],
    },
    "3.3": {
        "the chapter's shares copied as is, no word measured": '''def measure_shares(original_ids, masked):
    slots = masked["mask_weights"] > 0
    shown = np.take_along_axis(masked["token_ids"], masked["mask_positions"], axis=1)[slots]
    original = masked["mask_ids"][slots]
    tokens = original_ids != 0  # the budget's base: [CLS] and [SEP] count, padding does not
    return {"selected": slots.sum() / tokens.sum(), "mask": np.mean(shown == MASK_ID),
            "random": np.mean((shown != MASK_ID) & (shown != original)), "unchanged": np.mean(shown == original)}
''',
        "constants, nothing measured": '''def measure_shares(original_ids, masked):
    return {"selected": 0.15, "mask": 0.8, "random": 0.1, "unchanged": 0.1, "whole_words": 1.0}
''',
        "every token its own word ('##' ignored)": [(
            "starts = eligible & ~(np.isin(original_ids, CONTINUATION_IDS) & after_eligible)", "starts = eligible")],
        "a '##' piece after [SEP] joined to the word before it": [(
            "after_eligible = np.pad(eligible[:, :-1], ((0, 0), (1, 0)))",
            "after_eligible = np.pad(np.ones_like(eligible)[:, :-1], ((0, 0), (1, 0)))")],
        "whole words over all words, touched or not": [("np.mean(picked[touched] == pieces[touched])",
                                                        "np.mean(picked == pieces)")],
        "whole words counted per selected token": [("np.mean(picked[touched] == pieces[touched])",
                                                    "np.mean((picked == pieces)[word[selected]])")],
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
    "3.6": {
        "the tanh approximation of GELU": [('activation="gelu", name="dense"',
                                            'activation=lambda t: keras.activations.gelu(t, approximate=True), '
                                            'name="dense"')],
        "no GELU on the dense layer": [('activation="gelu", name="dense"', 'name="dense"')],
        "the classifier's axis of 1 kept: logits (batch, seq, 1)": [
            ("logits = ops.squeeze(self.classifier(dense), axis=-1)", "logits = self.classifier(dense)")],
        "labels inverted: 1.0 for an original token": [("ops.not_equal(original_ids, corrupted_ids)",
                                                        "ops.equal(original_ids, corrupted_ids)")],
        "the loss averaged over every position, padding included": [("loss = ops.sum(losses * real) / ops.sum(real)",
                                                                     "loss = ops.mean(losses)")],
        "the loss over the replaced tokens only, as MLM's over its masked ones": [
            ("loss = ops.sum(losses * real) / ops.sum(real)",
             "loss = ops.sum(losses * real * labels) / ops.sum(real * labels)")],
        "the loss summed, not averaged": [("loss = ops.sum(losses * real) / ops.sum(real)",
                                           "loss = ops.sum(losses * real)")],
        "a softmax cross-entropy over the positions, not a sigmoid per position": [
            ("losses = ops.relu(logits) - logits * labels + ops.log1p(ops.exp(-ops.abs(logits)))",
             "losses = -labels * ops.log_softmax(logits, axis=-1)")],
        "the sign of the logit flipped (positive says original)": [
            ("losses = ops.relu(logits) - logits * labels", "losses = ops.relu(-logits) + logits * labels")],
        "labels and mask in numpy (right on arrays, breaks in a compiled step)": [
            ("labels = ops.cast(ops.not_equal(original_ids, corrupted_ids), logits.dtype)",
             'labels = (np.asarray(original_ids) != np.asarray(corrupted_ids)).astype("float32")'),
            ("real = ops.cast(padding_mask, logits.dtype)", 'real = np.asarray(padding_mask, "float32")')],
    },
}
