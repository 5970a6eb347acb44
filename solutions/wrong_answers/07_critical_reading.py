"""Wrong answers to the exercises of solutions/07_critical_reading.ipynb (see 01_problem_setting.py)."""

WRONG_ANSWERS = {
    "7.1": {
        "the minority share": [(".max() / len(labels)", ".min() / len(labels)")],
        "the share of label 0": [("np.bincount(labels).max() / len(labels)", "np.bincount(labels)[0] / len(labels)")],
        "the share of label 1": [("np.bincount(labels).max() / len(labels)", "np.mean(labels)")],
        "constant 0.5": [("return np.bincount(labels).max() / len(labels)", "return 0.5")],
        "min_correct: P(X > k) instead of P(X >= k)": [("range(k, n + 1)", "range(k + 1, n + 1)")],
        "min_correct: a two-sided test": [("if tail(k) < alpha", "if 2 * tail(k) < alpha")],
        "min_correct: the majority's expected count, not significance": [(
            "return next((k for k in range(n + 1) if tail(k) < alpha), n + 1)", "return math.ceil(n * base_rate)")],
    },
    "7.2": {
        "ties go to the larger label": [("int(np.bincount(labels_by_premise[premise]).argmax())",
                                         "int(len(np.bincount(labels_by_premise[premise])) - 1 - "
                                         "np.bincount(labels_by_premise[premise])[::-1].argmax())")],
        "the last train label of the premise": [("int(np.bincount(labels_by_premise[premise]).argmax())",
                                                 "labels_by_premise[premise][-1]")],
        "matched on the hypothesis": [("zip(dev.texts_a, dev.labels)", "zip(dev.texts_b, dev.labels)")],
        "hard-coded result": [("return float(np.mean(hits)), len(hits)", "return 5 / 65, 65")],
        "anti-copy: unseen premises skipped": [
            ("if premise in train_labels else 0 for premise in dev.texts_a]",
             "for premise in dev.texts_a if premise in train_labels]"),
            ("return float(np.mean(np.array(predicted) == dev.labels))",
             "return float(np.mean(np.array(predicted) == dev.labels[[p in train_labels for p in dev.texts_a]]))")],
        "anti-copy: copies instead of flipping": [("1 - int(np.bincount(train_labels", "int(np.bincount(train_labels")],
        "anti-copy: ties to the smaller label": [(
            "1 - int(np.bincount(train_labels[premise], minlength=2).argmax())",
            "int(np.bincount(train_labels[premise], minlength=2).argmin())")],
        "anti-copy: unseen premises predicted 1": [("else 0 for premise", "else 1 for premise")],
        # The chapter's Counter.most_common(1): on a tie the label seen first wins, not the smaller one.
        "ties to the label seen first (the chapter's Counter.most_common)": [
            ("def copy_premise_label_accuracy(train, dev):", "from collections import Counter\n\n\n"
                                                             "def copy_premise_label_accuracy(train, dev):"),
            ("int(np.bincount(labels_by_premise[premise]).argmax())",
             "Counter(labels_by_premise[premise]).most_common(1)[0][0]")],
        "anti-copy: ties to the opposite of the label seen first (Counter.most_common)": [
            ("def copy_premise_label_accuracy(train, dev):", "from collections import Counter\n\n\n"
                                                             "def copy_premise_label_accuracy(train, dev):"),
            ("1 - int(np.bincount(train_labels[premise], minlength=2).argmax())",
             "1 - Counter(train_labels[premise]).most_common(1)[0][0]")],
    },
    "7.3": {
        "ratios inverted (GPT / BERT)": [("3_300e6 / 800e6", "800e6 / 3_300e6"), ("128_000 / 32_000", "32_000 / 128_000"),
                                         ("(128_000 * 1_000_000) / (32_000 * 1_000_000)",
                                          "(32_000 * 1_000_000) / (128_000 * 1_000_000)"),
                                         ("(256 * 512) / (64 * 512)", "(64 * 512) / (256 * 512)")],
        "Wikipedia alone as BERT's text": [("3_300e6 / 800e6", "2_500e6 / 800e6")],
        "words processed = the text ratio": [('"words_processed": (128_000 * 1_000_000) / (32_000 * 1_000_000)',
                                              '"words_processed": 3_300e6 / 800e6')],
        "batch in sequences, both 512": [('"batch": 128_000 / 32_000', '"batch": 512 / 512')],
        "GPT's batch as 32 sequences of 512": [("(64 * 512)", "(32 * 512)")],
        "A.4's words taken for words": [("bert_batch_words = round(256 * 512 / 1.185)", "bert_batch_words = 128_000")],
        "tokens multiplied by tokens per word": [("round(256 * 512 / 1.185)", "round(256 * 512 * 1.185)")],
    },
    "7.4": {
        "no 1/sqrt(d) scaling": [(" / np.sqrt(query.shape[-1])", "")],
        "scaled by d": [("np.sqrt(query.shape[-1])", "query.shape[-1]")],
        "softmax over the heads": [("weights /= weights.sum(-1, keepdims=True)", "weights /= weights.sum(0, keepdims=True)")],
        "uniform attention: the mean of the values": [(
            'return np.einsum("ht,htd->hd", weights, values)', "return values.mean(axis=1)")],
        "cache: keys only": [("return 2 * layers * tokens", "return layers * tokens")],
        "cache: float32 in the answer": [("kv_cache_bytes(12, 768, 512) / 2**20",
                                          "kv_cache_bytes(12, 768, 512, bytes_per_value=4) / 2**20")],
        "cache: the heads counted again": [("* hidden * batch *", "* hidden * 12 * batch *")],
        "cache: MB, not MiB": [("/ 2**20", "/ 1e6")],
    },
    "7.5": {
        "[UNK] per character": [('tokens.count("[UNK]") / len(tokens)', 'tokens.count("[UNK]") / sum(len(text) for text in texts)')],
        "words split on spaces": [("for token in tokenizer.tokenize(text)]", "for token in text.split()]")],
        "share of texts with an [UNK]": [('tokens = [token for text in texts for token in tokenizer.tokenize(text)]\n'
                                          '    return tokens.count("[UNK]") / len(tokens)',
                                          'return sum("[UNK]" in tokenizer.tokenize(text) for text in texts) / len(texts)')],
        "[UNK] counted in the first text only": [("for text in texts for token", "for text in texts[:1] for token")],
        "missing: not distinct": [("return sorted({character for text in texts for character in text",
                                   "return sorted([character for text in texts for character in text"),
                                  ('== ["[UNK]"]})', '== ["[UNK]"]])')],
        "missing: symbols counted too": [("if is_cjk(character) and tokenizer", "if tokenizer")],
        "missing: the characters that are in the vocabulary": [('tokenizer.tokenize(character) == ["[UNK]"]',
                                                                'tokenizer.tokenize(character) != ["[UNK]"]')],
    },
}

# Answers that are right another way than the reference (`bertlib exercises test` wants each to pass the public
# checks and the hidden tests alike): the value unrounded, where the reference rounds it as the question says.
RIGHT_ANSWERS = {
    "7.4": {"base_cache_mib unrounded": [("base_cache_mib = round(kv_cache_bytes(12, 768, 512) / 2**20, 1)",
                                          "base_cache_mib = kv_cache_bytes(12, 768, 512) / 2**20")]},
    "7.5": {"missing_share unrounded (0.7069 for 0.71)": [(
        "missing_share = round(len(missing_characters(CHINESE)) / len({c for text in CHINESE for c in text if is_cjk(c)}), 2)",
        "missing_share = len(missing_characters(CHINESE)) / len({c for text in CHINESE for c in text if is_cjk(c)})")]},
}
