"""Wrong answers to the exercises of solutions/02_architecture_and_input.ipynb (see 01_problem_setting.py)."""

WRONG_ANSWERS = {
    "2.1": {
        "no pooler": [("backbone = embeddings + num_layers * block + H * H + H", "backbone = embeddings + num_layers * block")],
        "one LayerNorm per block": [("block = 4 * (H * H + H) + 2 * H + (H * F + F)", "block = 4 * (H * H + H) + (H * F + F)")],
        "projections without biases": [("4 * (H * H + H)", "4 * H * H")],
        "no embedding LayerNorm": [("* H + 2 * H\n", "* H\n")],
        "decoder counted although tied": [("(0 if tied else V * H)", "V * H")],
        "no LayerNorm in the MLM head": [("+ 2 * H + V +", "+ V +")],
        "no output bias": [("+ 2 * H + V +", "+ 2 * H +")],
        "NSP head with one output": [("return backbone + mlm_head + (2 * H + 2)", "return backbone + mlm_head + (H + 1)")],
        "backbone only": [("return backbone + mlm_head + (2 * H + 2)", "return backbone")],
        "rounding_tells True": [("rounding_tells = False", "rounding_tells = True")],
        "the 12 L H^2 estimate": '''def pretrainer_params(num_layers, hidden_dim, intermediate_dim, vocabulary_size=30522, max_positions=512,
                      segments=2, tied=True):
    return 12 * num_layers * hidden_dim ** 2 + (vocabulary_size + max_positions + segments) * hidden_dim


large_30k = 340
rounding_tells = False
''',
    },
    "2.2": {
        "continuation pieces without ##": [('piece = word[start:end] if start == 0 else "##" + word[start:end]',
                                            "piece = word[start:end]")],
        "an unmatched remainder becomes one [UNK] piece": [('return ["[UNK]"]', 'pieces.append("[UNK]")\n            break')],
        "shortest match first": '''def greedy_wordpiece(word, vocabulary):
    pieces, start = [], 0
    while start < len(word):
        for end in range(start + 1, len(word) + 1):
            piece = word[start:end] if start == 0 else "##" + word[start:end]
            if piece in vocabulary:
                break
        else:
            return ["[UNK]"]
        pieces.append(piece)
        start = end
    return pieces
''',
        "whole word or [UNK]": '''def greedy_wordpiece(word, vocabulary):
    return [word] if word in vocabulary else ["[UNK]"]
''',
    },
    "2.3": {
        "first [SEP] in segment 1": [("[0] * (len(ids_a) + 2) + [1] * (len(ids_b) + 1)",
                                      "[0] * (len(ids_a) + 1) + [1] * (len(ids_b) + 2)")],
        "padding in segment 1": [("segment_ids + [0] * padding", "segment_ids + [1] * padding")],
        "padding mask all ones": [("[1] * len(token_ids) + [0] * padding", "[1] * sequence_length")],
        "A and B swapped": [("[cls_id, *ids_a, sep_id, *ids_b, sep_id]", "[cls_id, *ids_b, sep_id, *ids_a, sep_id]")],
        "A truncated first": [("(ids_a if len(ids_a) > len(ids_b) else ids_b).pop()", "(ids_a if ids_a else ids_b).pop()")],
        "tie shortens A": [("len(ids_a) > len(ids_b) else", "len(ids_a) >= len(ids_b) else")],
        "drop from the front": [(".pop()", ".pop(0)")],
        "no truncation": [("while len(ids_a) + len(ids_b) > sequence_length - 3:", "while False:")],
    },
    "2.4": {
        "padding mask broadcast on the query axis": [("padding_mask[:, None, None, :]", "padding_mask[:, None, :, None]")],
        "no 1/sqrt(d) scaling": [(" / math.sqrt(head_dim)", "")],
        "scaled by sqrt(H) instead of sqrt(d)": [("math.sqrt(head_dim)", "math.sqrt(hidden)")],
        "heads split by reshape alone": [("t.reshape(batch, seq, num_heads, head_dim).transpose(0, 2, 1, 3)",
                                          "t.reshape(batch, num_heads, seq, head_dim)")],
        "keys and values swapped": [("query, key, value = np.split", "query, value, key = np.split")],
        "no output projection": [("return context @ output_kernel + output_bias", "return context")],
        "returns (output, probabilities) like the chapter": [
            ("return context @ output_kernel + output_bias", "return context @ output_kernel + output_bias, probabilities")],
        "causal ignored": [("if causal:", "if False:")],
        "causal looks right (triu)": [("np.tril(", "np.triu(")],
        "causal without the diagonal": [("np.tril(np.ones((seq, seq), dtype=bool))",
                                         "np.tril(np.ones((seq, seq), dtype=bool), -1)")],
        "mask after the softmax": [("    scores = np.where(visible, scores, -1e9)\n", ""),
                                   ("    context = (probabilities @ value)",
                                    "    probabilities = np.where(visible, probabilities, 0.0)\n"
                                    "    context = (probabilities @ value)")],
    },
    "2.5": {
        "FFN width H": [("ffn_width_base = 4 * 768", "ffn_width_base = 768")],
        "a sentence embedding too": [('{"token", "position", "segment"}', '{"token", "position", "segment", "sentence"}')],
        "no segment embedding": [('{"token", "position", "segment"}', '{"token", "position"}')],
        "LARGE as 330M": [("base_and_large = (110, 340)", "base_and_large = (110, 330)")],
        "exact counts in millions": [("base_and_large = (110, 340)", "base_and_large = (109, 335)")],
        "LARGE's FFN with BASE's H": [("large_ffn_width = 4 * 1024", "large_ffn_width = 4 * 768")],
        "LARGE's FFN width H": [("large_ffn_width = 4 * 1024", "large_ffn_width = 1024")],
    },
    "2.6": {
        "the tanh GELU": [("return 0.5 * x * (1.0 + erf(x / np.sqrt(2.0)))",
                           "return 0.5 * x * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (x + 0.044715 * x ** 3)))")],
        "pooler without tanh": [("np.tanh(sequence_output[:, 0] @ kernel + bias)", "sequence_output[:, 0] @ kernel + bias")],
        "pooler on the last position": [("np.tanh(sequence_output[:, 0]", "np.tanh(sequence_output[:, -1]")],
        "untied decoder: a matrix of its own": [(
            "return x @ token_embeddings.T + output_bias",
            "return x @ np.random.default_rng(0).normal(scale=0.02, size=token_embeddings.shape).T + output_bias")],
        "decoder without its bias": [("return x @ token_embeddings.T + output_bias", "return x @ token_embeddings.T")],
        "no LayerNorm in the head": [(
            "    x = (x - x.mean(axis=-1, keepdims=True)) / np.sqrt(x.var(axis=-1, keepdims=True) + 1e-12) * gamma + beta\n", "")],
        "ReLU in the head": [("gelu(hidden @ transform_kernel + transform_bias)",
                              "np.maximum(0.0, hidden @ transform_kernel + transform_bias)")],
        "every position decoded": [("hidden = np.take_along_axis(sequence_output, mask_positions[..., None], axis=1)",
                                    "hidden = sequence_output")],
        "the first row's positions for every row": [(
            "np.take_along_axis(sequence_output, mask_positions[..., None], axis=1)",
            "sequence_output[:, mask_positions[0]]")],
    },
    "2.7": {
        "no causal mask": [("visible = (positions[:, None] >= positions[None, :])[None, None]",
                            "visible = ops.ones((1, 1, seq, seq)) > 0")],
        "causal mask reversed (keys after the query)": [("positions[:, None] >= positions[None, :]",
                                                         "positions[:, None] <= positions[None, :]")],
        "causal mask without the diagonal": [("positions[:, None] >= positions[None, :]",
                                              "positions[:, None] > positions[None, :]")],
        "padding mask on the query axis": [('ops.cast(padding_mask, "bool")[:, None, None, :]',
                                            'ops.cast(padding_mask, "bool")[:, None, :, None]')],
        "padding mask ignored": [("if padding_mask is not None:", "if False:")],
        "no 1/sqrt(d) scaling": [(" / math.sqrt(self.head_dim)", "")],
        "softmax over the queries": [("ops.where(visible, scores, -1e9), axis=-1)",
                                      "ops.where(visible, scores, -1e9), axis=-2)")],
        "mask after the softmax": [("probabilities = ops.softmax(ops.where(visible, scores, -1e9), axis=-1)",
                                    "probabilities = ops.where(visible, ops.softmax(scores, axis=-1), 0.0)")],
        "keys and values swapped": [("query, key, value = ops.unstack", "query, value, key = ops.unstack")],
        "the weights never set": [("    layer.set_weights(weights)\n", "")],
        "numpy's np.tril for the causal mask (right on arrays, breaks in a compiled step)": [(
            "positions = ops.arange(seq)\n        visible = (positions[:, None] >= positions[None, :])[None, None]",
            "visible = np.tril(np.ones((x.shape[1], x.shape[1]), dtype=bool))[None, None]")],
    },
    "2.8": {
        "BERT's post-LN order (a LayerNorm after each residual sum)": [
            ("attention_input = self.attention_layer_norm(x)  # (batch, seq, H)",
             "attention_input = x"),
            ("attended = x + self.attention(attention_input, padding_mask=padding_mask)",
             "attended = self.attention_layer_norm(x + self.attention(attention_input, padding_mask=padding_mask))"),
            ("ffn_input = self.ffn_layer_norm(attended)", "ffn_input = attended"),
            ("output = attended + self.ffn_output(self.intermediate(ffn_input))",
             "output = self.ffn_layer_norm(attended + self.ffn_output(self.intermediate(ffn_input)))")],
        "the residual from the normalised input, LN(x) + Attention(LN(x))": [
            ("attended = x + self.attention(", "attended = attention_input + self.attention(")],
        "a final LayerNorm on the output": [
            ("output = attended + self.ffn_output(self.intermediate(ffn_input))",
             "output = self.ffn_layer_norm(attended + self.ffn_output(self.intermediate(ffn_input)))")],
        "one LayerNorm for both branches": [("ffn_input = self.ffn_layer_norm(attended)",
                                             "ffn_input = self.attention_layer_norm(attended)")],
        "the padding mask left out": [("self.attention(attention_input, padding_mask=padding_mask)",
                                       "self.attention(attention_input)")],
        "the tanh approximation of GELU": [('activation="gelu"',
                                            "activation=lambda t: keras.activations.gelu(t, approximate=True)")],
        "no residual around the feed-forward": [
            ("output = attended + self.ffn_output(", "output = self.ffn_output(")],
        "the LayerNorms built after the attention": [
            ("for layer in (self.attention_layer_norm, self.attention, self.ffn_layer_norm, self.intermediate):",
             "for layer in (self.attention, self.attention_layer_norm, self.ffn_layer_norm, self.intermediate):"),
            ('        self.attention_layer_norm = keras.layers.LayerNormalization(epsilon=1e-12, '
             'name="attention_layer_norm")\n'
             '        self.attention = MultiHeadSelfAttention(num_heads=self.num_heads, dropout=0.0, name="attention")',
             '        self.attention = MultiHeadSelfAttention(num_heads=self.num_heads, dropout=0.0, name="attention")\n'
             '        self.attention_layer_norm = keras.layers.LayerNormalization(epsilon=1e-12, '
             'name="attention_layer_norm")')],
        "the residual sums in numpy (right on arrays, breaks in a compiled step)": [
            ("attended = x + self.attention(attention_input, padding_mask=padding_mask)",
             "attended = np.asarray(x) + np.asarray(self.attention(attention_input, padding_mask=padding_mask))")],
    },
}
