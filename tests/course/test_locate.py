"""The first-divergence locator: its reference traces end on what bertlib's layers compute, and on planted bugs
(a missing mask, the wrong GELU, an untied decoder, a transposed kernel) it names the right step."""

import math

import keras
import numpy as np
import pytest
from scipy.special import erf

from bertlib import BertBackbone, BertConfig
from bertlib.model import MaskedLMHead
from bertlib.model.layers import BertEmbedding, MultiHeadSelfAttention, TransformerEncoderBlock
from bertlib_course.failure import CheckFailed
from bertlib_course.locate import check_same_activations, first_divergence, steps, trace

HIDDEN, HEADS, SEQ, BATCH = 16, 2, 7, 2
numpy = keras.ops.convert_to_numpy  # a layer's output on any backend


def attention_inputs(seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(BATCH, SEQ, HIDDEN)).astype("float32")
    padding_mask = np.ones((BATCH, SEQ), "int32")
    padding_mask[1, 4:] = 0  # the second row has three padded keys
    return x, padding_mask


def built_attention(seed=0):
    keras.utils.set_random_seed(seed)
    layer = MultiHeadSelfAttention(HEADS, dropout=0.0)
    x, padding_mask = attention_inputs(seed)
    layer(x, padding_mask=padding_mask)
    # Larger weights than the 0.02 initializer, so every mistake moves the numbers well past the tolerance.
    layer.set_weights([np.random.default_rng(seed + 1).normal(scale=0.5, size=w.shape) for w in layer.get_weights()])
    return layer


def built_block(activation="gelu", seed=0):
    keras.utils.set_random_seed(seed)
    block = TransformerEncoderBlock(HEADS, 4 * HIDDEN, dropout=0.0, activation=activation)
    x, padding_mask = attention_inputs(seed)
    block(x, padding_mask=padding_mask)
    block.set_weights([np.random.default_rng(seed + 2).normal(scale=0.5, size=w.shape) + (w.ndim == 1) * 0.5
                       for w in block.get_weights()])
    return block


def numpy_attention(x, padding_mask, layer, mask=True, transposed_output=False, mask_after_softmax=False):
    """A learner's from-scratch attention (chapter 2's), returning its intermediate values by name."""
    qkv_kernel, qkv_bias, output_kernel, output_bias = layer.get_weights()
    batch, seq, hidden = x.shape
    head_dim = hidden // HEADS
    query, key, value = np.split(x @ qkv_kernel + qkv_bias, 3, axis=-1)
    heads = lambda t: t.reshape(batch, seq, HEADS, head_dim).transpose(0, 2, 1, 3)  # noqa: E731
    query, key, value = heads(query), heads(key), heads(value)
    scores = query @ key.transpose(0, 1, 3, 2) / math.sqrt(head_dim)
    masked = np.where(padding_mask[:, None, None, :] == 1, scores, -1e9) if mask and not mask_after_softmax else scores
    weights = np.exp(masked - masked.max(axis=-1, keepdims=True))
    probabilities = weights / weights.sum(axis=-1, keepdims=True)
    if mask_after_softmax:
        probabilities = probabilities * padding_mask[:, None, None, :]
    context = (probabilities @ value).transpose(0, 2, 1, 3).reshape(batch, seq, hidden)
    output = context @ (output_kernel.T if transposed_output else output_kernel) + output_bias
    return {"scores": scores, "probabilities": probabilities, "context": context, "output": output}


# --- the reference traces are what the layers compute ------------------------------------------------------------

def test_attention_trace_matches_the_layer_and_its_attention_scores():
    layer = built_attention()
    x, padding_mask = attention_inputs()
    values = trace(layer, (x, padding_mask))
    assert tuple(values) == steps(layer)
    output, probabilities = layer(x, padding_mask=padding_mask, return_attention_scores=True)
    np.testing.assert_allclose(values["output"], numpy(output), atol=1e-4)
    np.testing.assert_allclose(values["probabilities"], numpy(probabilities), atol=1e-6)
    np.testing.assert_allclose(values["probabilities"][1, :, :, 4:], 0.0)  # padded keys get nothing


@pytest.mark.parametrize("activation", ["gelu", "gelu_approximate"])
def test_block_trace_matches_the_block(activation):
    block = built_block(activation)
    x, padding_mask = attention_inputs()
    values = trace(block, (x, padding_mask))
    assert tuple(values) == steps(block)
    np.testing.assert_allclose(values["output"], numpy(block(x, padding_mask=padding_mask)), atol=1e-4)
    exact = 0.5 * values["intermediate"] * (1 + erf(values["intermediate"] / math.sqrt(2)))
    if activation == "gelu":
        np.testing.assert_allclose(values["activation"], exact, atol=1e-12)
    else:
        assert np.abs(values["activation"] - exact).max() > 1e-4


def test_embedding_head_and_backbone_traces_match_the_layers():
    rng = np.random.default_rng(0)
    config = BertConfig(vocabulary_size=50, num_layers=2, num_heads=2, hidden_dim=16, intermediate_dim=32,
                        max_sequence_length=16, dropout=0.0)
    backbone = BertBackbone(config)
    features = {"token_ids": rng.integers(5, 50, size=(2, 9)).astype("int32"),
                "segment_ids": np.repeat([[0] * 5 + [1] * 4], 2, axis=0).astype("int32"),
                "padding_mask": np.array([[1] * 9, [1] * 6 + [0] * 3], "int32")}
    outputs = backbone(features)
    values = trace(backbone, (features,))
    assert tuple(values) == steps(backbone)
    np.testing.assert_allclose(values["sequence_output"], numpy(outputs["sequence_output"]), atol=1e-4)
    np.testing.assert_allclose(values["pooled_output"], numpy(outputs["pooled_output"]), atol=1e-4)
    assert first_divergence(BertBackbone.from_config(backbone.get_config()), backbone, (features,)) is None

    embedding = backbone.embedding
    np.testing.assert_allclose(trace(embedding, (features["token_ids"], features["segment_ids"]))["output"],
                               numpy(embedding(features["token_ids"], features["segment_ids"])), atol=1e-5)

    head = MaskedLMHead(config.vocabulary_size, token_embedding=backbone.token_embedding)
    positions = np.array([[1, 3], [2, 5]], "int32")
    head(outputs["sequence_output"], positions)
    head.output_bias.assign(rng.normal(size=config.vocabulary_size))
    logits = head(outputs["sequence_output"], positions)
    np.testing.assert_allclose(trace(head, (outputs["sequence_output"], positions))["logits"], numpy(logits),
                               atol=1e-4)


def test_a_correct_learner_has_no_divergence():
    layer = built_attention()
    x, padding_mask = attention_inputs()
    assert first_divergence(lambda x, padding_mask: numpy_attention(x, padding_mask, layer), layer,
                            (x, padding_mask)) is None
    clone = MultiHeadSelfAttention(HEADS, dropout=0.0)
    clone(x, padding_mask=padding_mask)  # other random weights: the locator copies the reference's in
    assert first_divergence(clone, layer, (x, padding_mask)) is None
    check_same_activations("attention", clone, layer, (x, padding_mask))


# --- planted bugs -------------------------------------------------------------------------------------------------

def test_missing_mask_is_found_at_the_softmax():
    layer = built_attention()
    x, padding_mask = attention_inputs()
    divergence = first_divergence(lambda x, m: numpy_attention(x, m, layer, mask=False), layer, (x, padding_mask))
    assert divergence.step == "probabilities" and divergence.matched == ["scores"]
    assert "mask" in divergence.hint and "before the softmax" in divergence.hint
    assert divergence.learner_shape == divergence.reference_shape == (BATCH, HEADS, SEQ, SEQ)
    assert divergence.max_difference > 0.01 and divergence.where[0] == 1  # only the padded row differs

    # Returning only the output still names the mistake, by replaying it on the reference.
    only_output = first_divergence(lambda x, m: numpy_attention(x, m, layer, mask=False)["output"], layer,
                                   (x, padding_mask))
    assert only_output.step == "output" and "`probabilities`" in only_output.hint and "mask" in only_output.hint
    with pytest.raises(CheckFailed, match="probabilities"):
        check_same_activations("attention", lambda x, m: numpy_attention(x, m, layer, mask=False), layer,
                               (x, padding_mask))


def test_mask_after_the_softmax_reports_the_row_sums():
    layer = built_attention()
    x, padding_mask = attention_inputs()
    divergence = first_divergence(lambda x, m: numpy_attention(x, m, layer, mask_after_softmax=True), layer,
                                  (x, padding_mask))
    assert divergence.step == "probabilities" and "after the softmax" in divergence.hint

    # A mistake no replay knows (a wrong softmax temperature): the hint describes the rows instead.
    def too_hot(x, m):
        values = numpy_attention(x, m, layer)
        values["probabilities"] = values["probabilities"] * 1.3
        return values

    divergence = first_divergence(too_hot, layer, (x, padding_mask))
    assert divergence.step == "probabilities" and "row sums are 1.3" in divergence.hint


@pytest.mark.parametrize("reference_activation, learner_activation, named",
                         [("gelu", "gelu_approximate", "tanh approximation"),
                          ("gelu_approximate", "gelu", "exact erf form")])
def test_wrong_gelu_is_found_at_the_activation(reference_activation, learner_activation, named):
    reference = built_block(reference_activation)
    x, padding_mask = attention_inputs()
    # A Keras learner built like bertlib's: its GELU is not a sublayer, so the locator sees `intermediate` match
    # and `ffn_output` differ, and names the unseen step between them.
    learner = TransformerEncoderBlock(HEADS, 4 * HIDDEN, dropout=0.0, activation=learner_activation)
    learner(x, padding_mask=padding_mask)
    divergence = first_divergence(learner, reference, (x, padding_mask))
    assert divergence.step == "ffn_output" and divergence.matched[-1] == "intermediate"
    assert "`activation`" in divergence.hint and named in divergence.hint

    # A function returning its intermediates is caught at the activation itself.
    wrong = trace(learner, (x, padding_mask))
    divergence = first_divergence(lambda x, m: {"intermediate": wrong["intermediate"],
                                                "activation": wrong["activation"]}, reference, (x, padding_mask))
    assert divergence.step == "activation" and named in divergence.hint


def test_untied_decoder_is_found():
    rng = np.random.default_rng(0)
    embedding = keras.layers.Embedding(40, HIDDEN)
    embedding.build((None,))
    head = MaskedLMHead(40, token_embedding=embedding)
    hidden = rng.normal(size=(2, 5, HIDDEN)).astype("float32")
    head(hidden)

    class UntiedHead(MaskedLMHead):
        def build(self, sequence_output_shape, mask_positions_shape=None):
            super().build(sequence_output_shape)
            self.decoder = keras.layers.Dense(self.vocabulary_size, use_bias=False, name="decoder")
            self.decoder.build((None, None, sequence_output_shape[-1]))

        def call(self, sequence_output, mask_positions=None):
            x = self.layer_norm(keras.activations.gelu(self.transform(sequence_output), approximate=False))
            return self.decoder(x) + self.output_bias

    learner = UntiedHead(40, token_embedding=embedding)  # holds the embedding, decodes with its own matrix
    learner(hidden)
    divergence = first_divergence(learner, head, (hidden,))
    assert divergence.step == "weights" and "tied" in divergence.hint and "(16, 40)" in divergence.hint

    # As a function: the head's values match up to the LayerNorm, then the logits do not.
    reference = trace(head, (hidden,))
    decoder = rng.normal(size=(HIDDEN, 40))

    def untied(hidden):
        return {"layer_norm": reference["layer_norm"], "logits": reference["layer_norm"] @ decoder}

    divergence = first_divergence(untied, head, (hidden,))
    assert divergence.step == "logits" and divergence.matched == ["layer_norm"] and "tied" in divergence.hint


def test_transposed_kernel_is_found_at_the_output_projection():
    layer = built_attention()
    x, padding_mask = attention_inputs()
    divergence = first_divergence(lambda x, m: numpy_attention(x, m, layer, transposed_output=True), layer,
                                  (x, padding_mask))
    assert divergence.step == "output" and divergence.matched == ["scores", "probabilities", "context"]
    assert "transposed" in divergence.hint

    # A Keras layer loaded with the kernel in the (out, in) layout of a PyTorch checkpoint, weights kept as they are.
    learner = MultiHeadSelfAttention(HEADS, dropout=0.0)
    learner(x, padding_mask=padding_mask)
    qkv_kernel, qkv_bias, output_kernel, output_bias = layer.get_weights()
    learner.set_weights([qkv_kernel, qkv_bias, output_kernel.T, output_bias])
    divergence = first_divergence(learner, layer, (x, padding_mask), copy_weights=False)
    assert divergence.step == "output" and divergence.matched == ["query_key_value"]
    assert "transposed" in divergence.hint


def test_bad_reference_and_unknown_names_are_explained():
    layer = built_attention()
    x, padding_mask = attention_inputs()
    with pytest.raises(TypeError, match="must be a bertlib layer"):
        first_divergence(lambda x, m: x, keras.layers.Dense(3), (x, padding_mask))
    with pytest.raises(CheckFailed, match="softmax"):  # the learner's mistake: a ✘ message, not a crash
        first_divergence(lambda x, m: {"softmax": x}, layer, (x, padding_mask))
    unbuilt = BertEmbedding(10, 4)
    with pytest.raises(ValueError, match="not built"):
        first_divergence(lambda a, b: a, unbuilt, (np.zeros((1, 2), "int32"), np.zeros((1, 2), "int32")))


def test_a_tuple_a_crash_or_a_ragged_value_from_the_learner_is_a_failed_check_with_a_hint():
    """Issue 24: chapter 2's attention returns (output, probabilities); copied into exercise 2.4 it crashed inside
    the locator with a bare numpy ValueError. Every learner-side error must read as a ✘ line with a hint."""
    layer = built_attention()
    x, padding_mask = attention_inputs()

    def chapter_attention(x, m):
        values = numpy_attention(x, m, layer)
        return values["output"], values["probabilities"]

    with pytest.raises(CheckFailed) as caught:
        check_same_activations("self_attention", chapter_attention, layer, (x, padding_mask))
    text = str(caught.value)
    assert text.startswith("✘ self_attention returned a tuple of 2 values")
    assert f"shape {(BATCH, SEQ, HIDDEN)}" in text and "Hint:" in text and "return only the output" in text

    def crashing(x, m):
        return x.reshape(3, -1, 5)  # a learner's reshape that cannot work

    with pytest.raises(CheckFailed) as caught:
        check_same_activations("self_attention", crashing, layer, (x, padding_mask))
    assert "✘ self_attention: your code raised an error" in str(caught.value) and "ValueError" in str(caught.value)
    assert "Hint:" in str(caught.value)

    ragged = lambda x, m: {"scores": [[1.0, 2.0], [3.0]], "output": x}  # noqa: E731
    with pytest.raises(CheckFailed, match="`scores` should be one array of shape"):
        check_same_activations("self_attention", ragged, layer, (x, padding_mask))

    def stub(x, m):
        raise NotImplementedError("Exercise 2.4: write your code here")

    with pytest.raises(NotImplementedError, match="Exercise 2.4"):  # "not attempted" for the grader
        check_same_activations("self_attention", stub, layer, (x, padding_mask))


def test_a_causal_layer_is_traced_and_a_forgotten_causal_mask_is_named():
    keras.utils.set_random_seed(3)
    layer = MultiHeadSelfAttention(4, dropout=0.0, causal=True)
    x, padding_mask = attention_inputs()
    x = np.concatenate([x, x], axis=-1)  # H = 32: four heads of 8
    layer(x, padding_mask=padding_mask)
    layer.set_weights([np.random.default_rng(4).normal(scale=0.5, size=w.shape) for w in layer.get_weights()])
    expected = numpy(layer(x, padding_mask=padding_mask))
    np.testing.assert_allclose(trace(layer, (x, padding_mask))["output"], expected, rtol=1e-5, atol=1e-4)

    def learner(x, m, causal):
        qkv_kernel, qkv_bias, output_kernel, output_bias = layer.get_weights()
        batch, seq, hidden = x.shape
        query, key, value = (t.reshape(batch, seq, 4, hidden // 4).transpose(0, 2, 1, 3)
                             for t in np.split(x @ qkv_kernel + qkv_bias, 3, axis=-1))
        scores = query @ key.transpose(0, 1, 3, 2) / math.sqrt(hidden // 4)
        visible = (m[:, None, None, :] == 1) & (np.tril(np.ones((seq, seq), bool)) if causal else True)
        scores = np.where(visible, scores, -1e9)
        weights = np.exp(scores - scores.max(-1, keepdims=True))
        probabilities = weights / weights.sum(-1, keepdims=True)
        context = (probabilities @ value).transpose(0, 2, 1, 3).reshape(batch, seq, hidden)
        return context @ output_kernel + output_bias

    assert first_divergence(lambda x, m: learner(x, m, True), layer, (x, padding_mask)) is None
    divergence = first_divergence(lambda x, m: learner(x, m, False), layer, (x, padding_mask))
    assert divergence.step == "output" and "causal" in divergence.hint and "`probabilities`" in divergence.hint


# --- the masker (chapter 03) -------------------------------------------------------------------------------------

def test_masker_divergences_name_the_selection_or_the_branch():
    from bertlib.text.masking import MaskedLMMasker

    special_ids = [0, 1, 2, 3, 4]
    masker = MaskedLMMasker(300, 4, special_ids, max_predictions=8)
    rng = np.random.default_rng(0)
    token_ids = rng.integers(5, 300, size=(4, 40))
    token_ids[:, 0], token_ids[:, 20] = 2, 3
    token_ids[1, 30:] = 0

    assert first_divergence(masker.mask_numpy, masker, (token_ids, 7)) is None

    def selects_specials(token_ids, rng):
        output = masker.mask_numpy(token_ids, rng)
        output["mask_positions"] = output["mask_positions"].copy()
        output["mask_positions"][:, 0] = 0  # [CLS]
        return output

    divergence = first_divergence(selects_specials, masker, (token_ids, 7))
    assert divergence.step == "selected" and "special tokens" in divergence.hint

    def branch_first(token_ids, rng):  # draws the 80/10/10 branch before the selection keys
        branch = rng.random(token_ids.shape)
        output = masker.mask_numpy(token_ids, np.random.default_rng(7))
        shown = output["token_ids"].copy()
        selected = np.zeros(token_ids.shape, bool)
        for row in range(len(token_ids)):
            selected[row, output["mask_positions"][row][output["mask_weights"][row] > 0]] = True
        shown[selected] = np.where(branch[selected] < 0.8, 4, token_ids[selected])
        return {**output, "token_ids": shown}

    divergence = first_divergence(branch_first, masker, (token_ids, 7))
    assert divergence.step == "token_ids" and divergence.matched == ["selected"] and "branch" in divergence.hint

    def twenty_percent(token_ids, rng):  # the wrong selection rate
        reference = MaskedLMMasker(300, 4, special_ids, max_predictions=8, selection_rate=0.2)
        return reference.mask_numpy(token_ids, rng)

    divergence = first_divergence(twenty_percent, masker, (token_ids, 7))
    assert divergence.step == "selected" and "budget" in divergence.hint
    row = int(divergence.hint.split("row ")[1].split(":")[0])
    budget = int(masker.budget(token_ids)[row])  # the released rule: 15% of the row's tokens, [CLS]/[SEP] in
    assert f"the budget is {budget} = " in divergence.hint and "[CLS] and [SEP] count" in divergence.hint
    assert f"x {int((token_ids[row] != 0).sum())} tokens" in divergence.hint


def test_whole_word_masker_divergences_speak_of_words():
    from bertlib.text.masking import MaskedLMMasker

    special_ids, continuation_ids = [0, 1, 2, 3, 4], list(range(200, 300))
    whole_word = MaskedLMMasker(300, 4, special_ids, max_predictions=8, whole_word=True,
                                continuation_token_ids=continuation_ids)
    token_masker = MaskedLMMasker(300, 4, special_ids, max_predictions=8)
    token_ids = np.random.default_rng(0).integers(5, 300, size=(6, 40))
    token_ids[:, 0], token_ids[:, 20] = 2, 3

    assert first_divergence(whole_word.mask_numpy, whole_word, (token_ids, 7)) is None
    divergence = first_divergence(token_masker.mask_numpy, whole_word, (token_ids, 7))  # pieces picked alone
    assert divergence.step == "selected" and "word" in divergence.hint
    assert "the budget is" not in divergence.hint or "tokens, not words" in divergence.hint
