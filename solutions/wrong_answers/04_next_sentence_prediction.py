"""Wrong answers to the exercises of solutions/04_next_sentence_prediction.ipynb (see 01_problem_setting.py)."""

WRONG_ANSWERS = {
    "4.1": {
        "the chapter's [0] * (len(A) + 2) + [1] * (len(B) + 1), B read to the end of the row": '''def segments_of(token_ids):
    segment_ids, padding_mask = [], []
    for row in np.asarray(token_ids).tolist():
        len_a = row.index(SEP) - 1
        len_b = len(row) - len_a - 3
        segment_ids.append([0] * (len_a + 2) + [1] * (len_b + 1))
        padding_mask.append([int(token != tokenizer.pad_id) for token in row])
    return {"segment_ids": np.array(segment_ids, np.int32), "padding_mask": np.array(padding_mask, np.int32)}
''',
        "two arrays returned, as the chapter's two lists": [(
            'return {"segment_ids": segment_ids.astype(np.int32), "padding_mask": padding_mask.astype(np.int32)}',
            "return segment_ids.astype(np.int32), padding_mask.astype(np.int32)")],
        "padding in segment 1": [("segment_ids = seps_before == 1", "segment_ids = seps_before >= 1")],
        "the first [SEP] in segment B, the last in A": [("segment_ids = seps_before == 1",
                                                         "segment_ids = np.cumsum(is_sep, axis=1) == 1")],
        "the last [SEP] in segment A": [("segment_ids = seps_before == 1", "segment_ids = (seps_before == 1) & ~is_sep")],
        "padding mask 0 on [CLS] and [SEP] too": [("padding_mask = token_ids != tokenizer.pad_id",
                                                   "padding_mask = ~np.isin(token_ids, [tokenizer.pad_id, CLS, SEP])")],
    },
    "4.2": {
        "ties shorten A": [("len(tokens_a) > len(tokens_b)", "len(tokens_a) >= len(tokens_b)")],
        "front and back swapped": [("del longer[0]\n        else:\n            longer.pop()",
                                    "longer.pop()\n        else:\n            del longer[0]")],
        "one token too many removed": [("> max_num_tokens", ">= max_num_tokens")],
        "always the last token, no draw": [("if rng.random() < 0.5:", "if False:")],
        "the lists changed in place but not returned": [("    return tokens_a, tokens_b\n", "")],
        "the longer list of the start shortened throughout": [
            ("    while len(tokens_a) + len(tokens_b) > max_num_tokens:\n"
             "        longer = tokens_a if len(tokens_a) > len(tokens_b) else tokens_b\n",
             "    longer = tokens_a if len(tokens_a) > len(tokens_b) else tokens_b\n"
             "    while len(tokens_a) + len(tokens_b) > max_num_tokens:\n")],
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
        "the chapter's accuracy copied as is": '''def nsp_accuracy(nsp_logits, is_random_next):
    return float(np.mean(np.argmax(nsp_logits, axis=-1) == np.asarray(is_random_next, dtype=int)))
''',
        "classes flipped: 1 = IsNext": [("for label, name in enumerate((\"IsNext\", \"NotNext\"))",
                                         "for label, name in enumerate((\"NotNext\", \"IsNext\"))")],
        "per-class precision instead of per-class accuracy": [(
            "float(np.mean(predicted[labels == label] == label))", "float(np.mean(labels[predicted == label] == label))")],
        "balanced = overall": [('"balanced": (per_class["IsNext"] + per_class["NotNext"]) / 2',
                                '"balanced": float(np.mean(predicted == labels))')],
        "NotNext when its logit is positive, not the arg-max": [("predicted = np.argmax(nsp_logits, axis=-1)",
                                                                  "predicted = (np.asarray(nsp_logits)[:, 1] > 0).astype(int)")],
        "counts, not shares": [("float(np.mean(predicted[labels == label] == label))",
                                "float(np.sum(predicted[labels == label] == label))")],
        "balanced weighted by class size": [('"balanced": (per_class["IsNext"] + per_class["NotNext"]) / 2',
                                             '"balanced": float(np.mean(labels == 0)) * per_class["IsNext"] '
                                             '+ float(np.mean(labels == 1)) * per_class["NotNext"]')],
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
    "4.6": {
        "padding included in the mean": [(
            "return ops.sum(sequence_output * mask, axis=1) / ops.maximum(ops.sum(mask, axis=1), 1.0)",
            "return ops.mean(sequence_output, axis=1)")],
        "the [CLS] vector instead of the mean": [(
            "return ops.sum(sequence_output * mask, axis=1) / ops.maximum(ops.sum(mask, axis=1), 1.0)",
            "return sequence_output[:, 0]")],
        "the sum, not the mean": [(" / ops.maximum(ops.sum(mask, axis=1), 1.0)", "")],
        "divided by the sequence length": [("ops.maximum(ops.sum(mask, axis=1), 1.0)", "sequence_output.shape[1]")],
        "[CLS] left out of the mean": [(
            "return ops.sum(sequence_output * mask, axis=1) / ops.maximum(ops.sum(mask, axis=1), 1.0)",
            "return ops.sum((sequence_output * mask)[:, 1:], axis=1) / (ops.sum(mask, axis=1) - 1.0)")],
        "no tanh in the pooler": [('keras.layers.Dense(hidden, activation="tanh", name="pooler")',
                                   'keras.layers.Dense(hidden, name="pooler")')],
        "call pools [CLS], not pool's mean": [("self.pooler(self.pool(sequence_output, padding_mask))",
                                               "self.pooler(sequence_output[:, 0])")],
        "the classifier built before the pooler": [(
            '        self.pooler = keras.layers.Dense(hidden, activation="tanh", name="pooler")\n'
            '        self.pooler.build((None, hidden))\n',
            ""), ("        self.classifier.build((None, hidden))\n",
                  '        self.classifier.build((None, hidden))\n'
                  '        self.pooler = keras.layers.Dense(hidden, activation="tanh", name="pooler")\n'
                  '        self.pooler.build((None, hidden))\n')],
        "no classifier: the pooled vector's first two values": [(
            "return self.classifier(self.pooler(self.pool(sequence_output, padding_mask)))",
            "return self.pooler(self.pool(sequence_output, padding_mask))[:, :2]")],
        "not a keras Layer": [("class MeanPooledNSPHead(keras.layers.Layer):", "class MeanPooledNSPHead:")],
        "padding_mask read with numpy (right on arrays, breaks in a compiled step)": [(
            "mask = ops.cast(padding_mask, sequence_output.dtype)[:, :, None]",
            'mask = np.asarray(padding_mask, "float32")[:, :, None]')],
    },
}
