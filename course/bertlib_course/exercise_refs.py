"""Hidden references of the exercises where the learner writes a piece the chapters did not print, and the
compiled-step check as the grader runs it.

A check cell compares the learner's piece with a reference here, step by step, and names the first step that
differs (`check_steps`); the solution notebooks hold only the calls, so the learner's copy shows what is checked,
not how the reference computes it. The references are numpy in float64, written from the paper they cite.

`check_compiled_step` is `bertlib_course.checks.check_compiled_step`, marked for the grader (`coursekit grade`) to
run in the learner's kernel: the grader's checker holds stand-ins for the learner's classes, which answer calls with
values and cannot be traced inside `model.fit`, so a check that must see the class in a compiled step runs where
the class is, on the grading machine's backend (see `coursekit.grading.checker`). In a notebook it is the same check.
"""

import numpy as np

from bertlib.model.reference import gelu
from bertlib_course import checks


def check_compiled_step(name, piece_class, inputs=None, make=None, call=None, hint=None):
    """`checks.check_compiled_step`, run by the grader in the learner's kernel (the same arguments)."""
    __tracebackhide__ = True
    checks.check_compiled_step(name, piece_class, inputs, make=make, call=call, hint=hint)


check_compiled_step.coursekit_in_kernel = True  # coursekit.grading.checker.in_kernel, without importing the kit


def check_steps(name, got, expected, mistakes=(), hints=None, rtol=1e-5, atol=1e-5):
    """Compares the learner's named steps with the reference's, in the reference's order; a ✘ names the first
    step that differs, the known mistake its values equal (`mistakes`: {what: {step: values}}) and that step's hint.

    Args:
        name: str. What was called, for the messages.
        got: dict {step: array}, the learner's steps (a step missing from it is a failure at that step).
        expected: dict {step: array}, the reference's steps in order; the last is the output.
        mistakes: dict {what: dict {step: array}}, the steps of known mistakes, replayed on the same inputs.
        hints: dict {step: str}, what to look at when that step is the first to differ.
    """
    __tracebackhide__ = True
    if not isinstance(got, dict):
        checks.check_true(name, False, f"a dict of the steps {list(expected)}", type(got).__name__,
                          hint="return a dict of the named steps")
    steps = list(expected)
    for index, step in enumerate(steps, start=1):
        where = f"{name}: step `{step}` ({index} of {len(steps)})"
        if step not in got:
            checks.check_true(where, False, f"a value under {step!r}", f"the keys {sorted(map(str, got))}",
                              hint=f"return every step by its name: {', '.join(steps)}")
        value = np.asarray(checks.checked_call(f"the array of step {step!r}", np.asarray, got[step], "float64"))
        reference = np.asarray(expected[step], "float64")
        if value.shape == reference.shape and np.allclose(value, reference, rtol=rtol, atol=atol):
            continue
        named = [what for what, replay in dict(mistakes).items() if step in replay
                 and np.shape(replay[step]) == value.shape and np.allclose(value, replay[step], rtol=rtol, atol=atol)]
        shown = (f"shape {value.shape}" if value.shape != reference.shape
                 else f"off by up to {np.abs(value - reference).max():.3g}")
        got_text = f"first divergence here: {shown}" + (f"; equal to {named[0]}" if named else "")
        checks.check_true(where, False, f"the reference's values, shape {reference.shape}", got_text,
                          hint=(hints or {}).get(step))
    print(f"✔ {name}: every step ({', '.join(steps)}) matches the reference")


# ---------------------------------------------------------------------------------------------------------------
# Exercise 5.7: a gated GELU feed-forward (GEGLU; Shazeer 2020, "GLU Variants Improve Transformer", eq. 6).

GEGLU_STEPS = ("gate", "up", "hidden", "output")


def geglu_steps(x, gate_kernel, up_kernel, down_kernel, activation=gelu, combine=np.multiply):
    """FFN_GEGLU(x) = (GELU(x W) ⊗ x V) W2, without biases, in float64: {step: values} in GEGLU_STEPS order.

    `activation` and `combine` replay the known mistakes (the tanh GELU, a ReLU gate, a sum for the product).
    """
    x = np.asarray(x, "float64")
    gate = activation(x @ np.asarray(gate_kernel, "float64"))  # (batch, seq, intermediate)
    up = x @ np.asarray(up_kernel, "float64")  # (batch, seq, intermediate)
    hidden = combine(gate, up)
    return {"gate": gate, "up": up, "hidden": hidden, "output": hidden @ np.asarray(down_kernel, "float64")}


def geglu_mistakes(x, gate_kernel, up_kernel, down_kernel):
    """The steps of the usual mistakes, on the same inputs and weights: {what: {step: values}}."""
    weights = (gate_kernel, up_kernel, down_kernel)
    swapped = geglu_steps(x, up_kernel, gate_kernel, down_kernel)
    return {
        "GELU on the other branch (the gate and up kernels swapped)": {"gate": swapped["up"], "up": swapped["gate"],
                                                                       **{k: swapped[k] for k in ("hidden", "output")}},
        "the tanh approximation of GELU": geglu_steps(x, *weights, activation=lambda v: gelu(v, approximate=True)),
        "a ReLU gate (ReGLU)": geglu_steps(x, *weights, activation=lambda v: np.maximum(v, 0.0)),
        "the sum of the branches, not their product": geglu_steps(x, *weights, combine=np.add),
        "no gate: GELU(x V) W2, BERT's feed-forward": {
            "hidden": gelu(np.asarray(x, "float64") @ np.asarray(up_kernel, "float64"))},
    }


GEGLU_HINTS = {
    "gate": "the gate is GELU(x W) with the first kernel (the layer `gate`), exact GELU (erf), no bias",
    "up": "the other branch is x V with the second kernel (the layer `up`), linear, no bias",
    "hidden": "the two branches meet by an element-wise product: GELU(x W) * (x V)",
    "output": "the product goes through the third kernel (the layer `down`) back to the input's width, no bias",
}


def random_geglu_inputs(rng, hidden=None, intermediate=None):
    """(x, gate_kernel, up_kernel, down_kernel) of random sizes; x of shape (batch, seq, hidden)."""
    hidden = hidden or int(rng.choice([4, 8, 16]))
    intermediate = intermediate or int(rng.choice([6, 12, 24]))
    batch, seq = int(rng.integers(1, 4)), int(rng.integers(1, 9))
    weight = lambda *shape: rng.normal(scale=0.5, size=shape).astype("float32")  # noqa: E731
    return (rng.normal(size=(batch, seq, hidden)).astype("float32"), weight(hidden, intermediate),
            weight(hidden, intermediate), weight(intermediate, hidden))


# ---------------------------------------------------------------------------------------------------------------
# Exercise 3.6: ELECTRA's replaced-token detection (Clark et al. 2020, §2; `_get_discriminator_output` of the
# released run_pretraining.py): a dense layer with GELU, a 1-unit classifier, and a sigmoid cross-entropy at every
# real position.

RTD_STEPS = ("dense", "logits", "labels", "loss")


def sigmoid_cross_entropy(logits, labels):
    """-[y log σ(z) + (1 - y) log(1 - σ(z))], in the stable form TensorFlow's sigmoid_cross_entropy_with_logits uses."""
    return np.maximum(logits, 0.0) - logits * labels + np.log1p(np.exp(-np.abs(logits)))


def rtd_steps(sequence_output, original_ids, corrupted_ids, padding_mask, weights, activation=gelu,
              position_weights=None, labels_of=None):
    """The discriminator's head and loss in float64: {step: values} in RTD_STEPS order.

    `weights` is [dense kernel (H, H), dense bias (H,), classifier kernel (H, 1), classifier bias (1,)].
    `activation`, `position_weights(padding_mask, labels)` and `labels_of(original, corrupted)` replay mistakes.
    """
    dense_kernel, dense_bias, classifier_kernel, classifier_bias = (np.asarray(w, "float64") for w in weights)
    dense = activation(np.asarray(sequence_output, "float64") @ dense_kernel + dense_bias)  # (batch, seq, H)
    logits = (dense @ classifier_kernel + classifier_bias)[..., 0]  # (batch, seq): > 0 says "replaced"
    original, corrupted = np.asarray(original_ids), np.asarray(corrupted_ids)
    labels = (labels_of or (lambda a, b: (a != b).astype("float64")))(original, corrupted)
    real = np.asarray(padding_mask, "float64")
    counted = position_weights(real, labels) if position_weights else real
    loss = (sigmoid_cross_entropy(logits, labels) * counted).sum() / counted.sum()
    return {"dense": dense, "logits": logits, "labels": labels, "loss": np.float64(loss)}


def rtd_mistakes(*inputs):
    """The steps of the usual mistakes, on the same inputs and weights: {what: {step: values}}."""
    return {
        "the tanh approximation of GELU": rtd_steps(*inputs, activation=lambda v: gelu(v, approximate=True)),
        "labels inverted: 1.0 for an original token": rtd_steps(
            *inputs, labels_of=lambda a, b: (a == b).astype("float64")),
        "the loss averaged over every position, padding included": rtd_steps(
            *inputs, position_weights=lambda real, labels: np.ones_like(real)),
        "the loss over the replaced tokens only, as MLM's over its masked ones": rtd_steps(
            *inputs, position_weights=lambda real, labels: real * labels),
        "the loss summed over the real positions, not averaged": {"loss": rtd_steps(*inputs)["loss"]
                                                                  * np.asarray(inputs[3], "float64").sum()},
    }


RTD_HINTS = {
    "dense": "first a Dense(H) with the exact GELU (erf), named `dense`, on every position",
    "logits": "then a Dense(1), named `classifier`, and drop its last axis: one logit per position, (batch, seq)",
    "labels": "a position is replaced (1.0) where the token the discriminator sees differs from the original; "
              "a token the generator sampled back unchanged is original (0.0)",
    "loss": "the sigmoid cross-entropy of each logit against its label, averaged over the real positions "
            "(padding_mask 1) only: every real token counts, replaced or not",
}


def random_rtd_inputs(rng, hidden=None, vocabulary=30, batch=3, seq=None):
    """(sequence_output, original_ids, corrupted_ids, padding_mask, weights), with padding in every row but the
    first, about 15% of the real tokens resampled and some of them resampled to themselves."""
    hidden = hidden or int(rng.choice([4, 8, 16]))
    seq = seq or int(rng.integers(4, 11))
    lengths = rng.integers(2, seq, size=batch)  # every row but the first has padding
    lengths[0] = seq
    padding_mask = (np.arange(seq)[None, :] < lengths[:, None]).astype("int32")
    original = np.where(padding_mask == 1, rng.integers(5, vocabulary, size=(batch, seq)), 0).astype("int32")
    masked = (rng.random((batch, seq)) < 0.3) & (padding_mask == 1)
    sampled = np.where(rng.random((batch, seq)) < 0.3, original, rng.integers(5, vocabulary, size=(batch, seq)))
    corrupted = np.where(masked, sampled, original).astype("int32")  # a sample may equal the original
    weight = lambda *shape: rng.normal(scale=0.5, size=shape).astype("float32")  # noqa: E731
    weights = [weight(hidden, hidden), weight(hidden), weight(hidden, 1), weight(1)]
    return rng.normal(size=(batch, seq, hidden)).astype("float32"), original, corrupted, padding_mask, weights


# ---------------------------------------------------------------------------------------------------------------
# Exercise 2.8: a pre-LayerNorm encoder block (Xiong et al. 2020, "On Layer Normalization in the Transformer
# Architecture", Figure 1(b); GPT-2 §2.3): the LayerNorm moves inside each residual branch.

PRE_LN_STEPS = ("attention_input", "attended", "ffn_input", "output")


def _layer_norm(x, gamma, beta, epsilon=1e-12):
    return (x - x.mean(axis=-1, keepdims=True)) / np.sqrt(x.var(axis=-1, keepdims=True) + epsilon) * gamma + beta


def _attention(x, padding_mask, num_heads, qkv_kernel, qkv_bias, output_kernel, output_bias):
    """bertlib.MultiHeadSelfAttention's computation (one fused Q|K|V projection) in float64, padded keys hidden."""
    batch, seq, hidden = x.shape
    heads = lambda t: t.reshape(batch, seq, num_heads, hidden // num_heads).transpose(0, 2, 1, 3)  # noqa: E731
    query, key, value = (heads(part) for part in np.split(x @ qkv_kernel + qkv_bias, 3, axis=-1))
    scores = query @ key.transpose(0, 1, 3, 2) / np.sqrt(hidden // num_heads)  # (batch, heads, query, key)
    scores = np.where(np.asarray(padding_mask)[:, None, None, :] > 0, scores, -1e9)
    probabilities = np.exp(scores - scores.max(axis=-1, keepdims=True))
    probabilities /= probabilities.sum(axis=-1, keepdims=True)
    context = (probabilities @ value).transpose(0, 2, 1, 3).reshape(batch, seq, hidden)
    return context @ output_kernel + output_bias


def pre_ln_steps(x, padding_mask, num_heads, weights, post_ln=False, activation=gelu):
    """A pre-LN block in float64: {step: values} in PRE_LN_STEPS order.

        h = x + Attention(LN_1(x));  output = h + FFN(LN_2(h)),  FFN(z) = GELU(z W_1 + b_1) W_2 + b_2

    `weights`: the learner's `get_weights()` order: LN_1 (gamma, beta), attention (Q|K|V kernel, bias, output
    kernel, bias), LN_2 (gamma, beta), W_1, b_1, W_2, b_2. `post_ln=True` is BERT's block (the reference's
    control: bertlib.TransformerEncoderBlock); `activation` replays the tanh GELU.
    """
    w = [np.asarray(value, "float64") for value in weights]
    x = np.asarray(x, "float64")
    attention = lambda z: _attention(z, padding_mask, num_heads, *w[2:6])  # noqa: E731
    ffn = lambda z: activation(z @ w[8] + w[9]) @ w[10] + w[11]  # noqa: E731
    if post_ln:  # BERT: LN(x + Attention(x)), then LN(h + FFN(h)), with the same two LayerNorms
        attended = _layer_norm(x + attention(x), w[0], w[1])
        return {"attended": attended, "output": _layer_norm(attended + ffn(attended), w[6], w[7])}
    attention_input = _layer_norm(x, w[0], w[1])
    attended = x + attention(attention_input)  # (batch, seq, H): the residual stream is never normalised
    ffn_input = _layer_norm(attended, w[6], w[7])
    return {"attention_input": attention_input, "attended": attended, "ffn_input": ffn_input,
            "output": attended + ffn(ffn_input)}


def pre_ln_mistakes(x, padding_mask, num_heads, weights):
    """The steps of the usual mistakes, on the same inputs and weights: {what: {step: values}}."""
    w = [np.asarray(value, "float64") for value in weights]
    x64 = np.asarray(x, "float64")
    normalised = _layer_norm(x64, w[0], w[1])
    from_normalised = normalised + _attention(normalised, padding_mask, num_heads, *w[2:6])
    return {
        "BERT's post-LN block (a LayerNorm after each residual sum)": pre_ln_steps(x, padding_mask, num_heads,
                                                                                  weights, post_ln=True),
        "the residual taken from the normalised input, LN(x) + Attention(LN(x))": {"attended": from_normalised},
        "the tanh approximation of GELU": pre_ln_steps(x, padding_mask, num_heads, weights,
                                                       activation=lambda v: gelu(v, approximate=True)),
        "the padding mask left out": {"attended": x64 + _attention(normalised, np.ones_like(padding_mask),
                                                                   num_heads, *w[2:6])},
    }


PRE_LN_HINTS = {
    "attention_input": "the first LayerNorm (attention_layer_norm) comes first, on the block's input x",
    "attended": "attention on LN(x), with the padding mask, added to x itself: x + Attention(LN(x)); no LayerNorm "
                "after the sum",
    "ffn_input": "the second LayerNorm (ffn_layer_norm) on the sum h, before the feed-forward",
    "output": "h + FFN(LN(h)), FFN = Dense(intermediate, exact GELU) then Dense(H); no LayerNorm after the sum",
}


def random_pre_ln_inputs(rng, num_heads=None, hidden=None, seq=None):
    """(x, padding_mask, num_heads, weights): padding in every row but the first, weights in get_weights() order."""
    num_heads = num_heads or int(rng.choice([1, 2, 4]))
    hidden = hidden or 4 * num_heads * int(rng.integers(1, 3))
    seq, batch, intermediate = seq or int(rng.integers(2, 8)), 3, 2 * hidden
    lengths = rng.integers(1, seq, size=batch)  # every row but the first has padding
    lengths[0] = seq
    padding_mask = (np.arange(seq)[None, :] < lengths[:, None]).astype("int32")
    weight = lambda *shape: rng.normal(scale=0.4, size=shape).astype("float32")  # noqa: E731
    weights = [1 + weight(hidden), weight(hidden), weight(hidden, 3 * hidden), weight(3 * hidden),
               weight(hidden, hidden), weight(hidden), 1 + weight(hidden), weight(hidden),
               weight(hidden, intermediate), weight(intermediate), weight(intermediate, hidden), weight(hidden)]
    return 2 * rng.normal(size=(batch, seq, hidden)).astype("float32") + 1, padding_mask, num_heads, weights
