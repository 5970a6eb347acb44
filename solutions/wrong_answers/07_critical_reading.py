"""Wrong answers to the exercises of solutions/07_critical_reading.ipynb (see 01_problem_setting.py)."""

WRONG_ANSWERS = {
    "7.1": {
        "the minority share": [(".max() / len(labels)", ".min() / len(labels)")],
        "a count, not a share": [(".max() / len(labels)", ".max()")],
        "the share of label 1": [("np.bincount(labels).max() / len(labels)", "np.mean(labels)")],
        "constant 0.5": '''def majority_accuracy(labels):
    return 0.5
''',
    },
    "7.2": {
        "ties go to the larger label": [("int(np.bincount(labels_by_premise[premise]).argmax())",
                                         "int(len(np.bincount(labels_by_premise[premise])) - 1 - "
                                         "np.bincount(labels_by_premise[premise])[::-1].argmax())")],
        "the last train label of the premise": [("int(np.bincount(labels_by_premise[premise]).argmax())",
                                                 "labels_by_premise[premise][-1]")],
        "matched on the hypothesis": [("zip(dev.texts_a, dev.labels)", "zip(dev.texts_b, dev.labels)")],
        "hard-coded result": '''def copy_premise_label_accuracy(train, dev):
    return 5 / 65, 65
''',
    },
    "7.3": {
        "ratios inverted (GPT / BERT)": '''ratios = {"text": 800e6 / 3_300e6, "batch": 32_000 / 128_000, "words_processed": 32_000 / 128_000}
''',
        "Wikipedia alone as BERT's text": [("3_300e6 / 800e6", "2_500e6 / 800e6")],
        "words processed = the text ratio": [('"words_processed": (128_000 * 1_000_000) / (32_000 * 1_000_000)',
                                              '"words_processed": 3_300e6 / 800e6')],
        "batch in sequences, both 512": [('"batch": 128_000 / 32_000', '"batch": 512 / 512')],
    },
    "7.4": {
        "no 1/sqrt(d) scaling": [(" / np.sqrt(query.shape[-1])", "")],
        "scaled by d": [("np.sqrt(query.shape[-1])", "query.shape[-1]")],
        "softmax over the heads": [("weights /= weights.sum(-1, keepdims=True)", "weights /= weights.sum(0, keepdims=True)")],
        "uniform attention: the mean of the values": '''def cached_attention_step(query, keys, values):
    return values.mean(axis=1)
''',
    },
    "7.5": {
        "[UNK] per character": [('tokens.count("[UNK]") / len(tokens)', 'tokens.count("[UNK]") / sum(len(text) for text in texts)')],
        "words split on spaces": [("tokenizer.tokenize(text)", "text.split()")],
        "share of texts with an [UNK]": '''def unk_rate(texts):
    return sum("[UNK]" in tokenizer.tokenize(text) for text in texts) / len(texts)
''',
        "[UNK] counted in the first text only": [("for text in texts for token", "for text in texts[:1] for token")],
    },
}
