"""Layers, backbone and heads, against brute force and the numpy reference (`bertlib.model.reference`, run on the
layers' weights through `bertlib.model.checkpoint.hf_weights`). Runs unchanged on the TensorFlow and JAX backends (see
test_backends.py)."""

import itertools
import math

import keras
import numpy as np
import pytest

from bertlib import (
    BertBackbone,
    BertConfig,
    BertEmbedding,
    BertPretrainer,
    MaskedLMHead,
    MultiHeadSelfAttention,
    NextSentenceHead,
    TransformerEncoderBlock,
    pretraining_batch,
)
from bertlib.model import reference
from bertlib.model.checkpoint import hf_weights
from tests.helpers import run_layer_test

RNG = np.random.default_rng(0)
BATCH, SEQ, HIDDEN, HEADS = 2, 6, 8, 2
PADDING = np.array([[1] * SEQ, [1] * 4 + [0] * 2], "int32")


def small_config(**overrides):
    return BertConfig(**{**dict(num_layers=2, num_heads=2, hidden_dim=16, intermediate_dim=32,
                                vocabulary_size=50, max_sequence_length=16, dropout=0.0), **overrides})


def random_inputs(config, batch=BATCH, seq=SEQ, seed=0):
    rng = np.random.default_rng(seed)
    padding = np.ones((batch, seq), "int32")
    padding[-1, seq - 2:] = 0
    return {"token_ids": rng.integers(5, config.vocabulary_size, (batch, seq)).astype("int32"),
            "segment_ids": (np.arange(seq)[None] >= seq // 2).astype("int32").repeat(batch, 0),
            "padding_mask": padding}


def test_embedding_layer(tmp_path):
    token_ids = RNG.integers(0, 20, (BATCH, SEQ)).astype("int32")
    segment_ids = np.zeros((BATCH, SEQ), "int32")
    run_layer_test(BertEmbedding, dict(vocabulary_size=20, hidden_dim=HIDDEN, max_sequence_length=10),
                   [token_ids, segment_ids], (BATCH, SEQ, HIDDEN), expected_num_weights=5, tmp_path=tmp_path)


def test_embedding_is_sum_of_three_tables_then_layer_norm():
    layer = BertEmbedding(vocabulary_size=20, hidden_dim=HIDDEN, max_sequence_length=10, dropout=0.0)
    token_ids = RNG.integers(0, 20, (BATCH, SEQ)).astype("int32")
    segment_ids = (np.arange(SEQ) >= 3).astype("int32")[None].repeat(BATCH, 0)
    out = keras.ops.convert_to_numpy(layer(token_ids, segment_ids))
    np.testing.assert_allclose(out, reference.embeddings(hf_weights(layer), token_ids, segment_ids), atol=1e-5)


def test_attention_layer(tmp_path):
    x = RNG.normal(size=(BATCH, SEQ, HIDDEN)).astype("float32")
    run_layer_test(MultiHeadSelfAttention, dict(num_heads=HEADS), [x], (BATCH, SEQ, HIDDEN),
                   expected_num_weights=4, call_kwargs={"padding_mask": PADDING}, tmp_path=tmp_path)


def numpy_attention(layer, x, padding_mask):
    """Brute force, one head and one query at a time."""
    kernel, bias = layer.query_key_value.kernel.numpy(), layer.query_key_value.bias.numpy()
    qkv = x @ kernel + bias
    q, k, v = np.split(qkv, 3, axis=-1)
    d = layer.head_dim
    context = np.zeros_like(q)
    for b in range(x.shape[0]):
        for h in range(layer.num_heads):
            cols = slice(h * d, (h + 1) * d)
            for i in range(x.shape[1]):
                scores = np.array([q[b, i, cols] @ k[b, j, cols] / math.sqrt(d) if padding_mask[b, j] else -np.inf
                                   for j in range(x.shape[1])])
                weights = np.exp(scores - scores.max())
                weights /= weights.sum()
                context[b, i, cols] = weights @ v[b, :, cols]
    return context @ layer.output_dense.kernel.numpy() + layer.output_dense.bias.numpy()


@pytest.mark.parametrize("implementation", ["explicit", "fused"])
def test_attention_matches_brute_force_and_the_reference(implementation):
    layer = MultiHeadSelfAttention(HEADS, dropout=0.0, implementation=implementation)
    x = RNG.normal(size=(BATCH, SEQ, HIDDEN)).astype("float32")
    out = keras.ops.convert_to_numpy(layer(x, padding_mask=PADDING))
    brute_force = numpy_attention(layer, x, PADDING)
    np.testing.assert_allclose(out, brute_force, atol=1e-5)
    weights = hf_weights(layer)
    np.testing.assert_allclose(reference.self_attention(weights, x.astype("float64"), PADDING, HEADS), brute_force,
                               atol=1e-5)


def test_attention_probabilities_ignore_padding_and_sum_to_one():
    layer = MultiHeadSelfAttention(HEADS, dropout=0.0)
    x = RNG.normal(size=(BATCH, SEQ, HIDDEN)).astype("float32")
    _, probabilities = layer(x, padding_mask=PADDING, return_attention_scores=True)
    probabilities = keras.ops.convert_to_numpy(probabilities)
    assert probabilities.shape == (BATCH, HEADS, SEQ, SEQ)
    np.testing.assert_allclose(probabilities.sum(-1), 1.0, atol=1e-6)
    assert np.all(probabilities[1, :, :, 4:] == 0.0)
    assert np.all(probabilities[0] > 0)  # bidirectional: every token sees every real token (§3.1)


def test_encoder_block(tmp_path):
    x = RNG.normal(size=(BATCH, SEQ, HIDDEN)).astype("float32")
    run_layer_test(TransformerEncoderBlock, dict(num_heads=HEADS, intermediate_dim=32),
                   [x], (BATCH, SEQ, HIDDEN), expected_num_weights=12, call_kwargs={"padding_mask": PADDING},
                   tmp_path=tmp_path)


@pytest.mark.parametrize("activation", ["gelu", "gelu_approximate"])
def test_encoder_block_matches_the_reference(activation):
    block = TransformerEncoderBlock(HEADS, 32, dropout=0.0, activation=activation)
    x = RNG.normal(size=(BATCH, SEQ, HIDDEN)).astype("float32")
    block(x, padding_mask=PADDING)
    # Weights larger than the 0.02 initializer, so that the two GELUs differ by more than the tolerance.
    block.set_weights([RNG.normal(scale=0.5, size=w.shape) for w in block.get_weights()])
    out = keras.ops.convert_to_numpy(block(x, padding_mask=PADDING))
    expected = reference.encoder_layer(hf_weights(block), x.astype("float64"), PADDING, HEADS, activation=activation)
    np.testing.assert_allclose(out, expected, atol=1e-5)
    other = "gelu" if activation == "gelu_approximate" else "gelu_approximate"
    assert np.abs(reference.encoder_layer(hf_weights(block), x, PADDING, HEADS, activation=other) - out).max() > 1e-4  # 10x the tolerance


def test_padding_tokens_do_not_change_real_outputs():
    config = small_config()
    backbone = BertBackbone(config)
    inputs = random_inputs(config)
    changed = {**inputs, "token_ids": inputs["token_ids"].copy()}
    changed["token_ids"][-1, -2:] = 7  # padded positions get other token ids
    a = keras.ops.convert_to_numpy(backbone(inputs)["sequence_output"])
    b = keras.ops.convert_to_numpy(backbone(changed)["sequence_output"])
    np.testing.assert_allclose(a[-1, :-2], b[-1, :-2], atol=1e-6)


def test_backbone_outputs_pooler_and_attention_maps():
    config = small_config()
    backbone = BertBackbone(config)
    inputs = random_inputs(config)
    outputs = backbone(inputs)
    sequence = keras.ops.convert_to_numpy(outputs["sequence_output"])
    pooled = keras.ops.convert_to_numpy(outputs["pooled_output"])
    assert sequence.shape == (BATCH, SEQ, config.hidden_dim)
    expected = reference.bert(hf_weights(backbone), config, inputs)
    np.testing.assert_allclose(sequence, expected["sequence_output"], atol=1e-5)
    np.testing.assert_allclose(pooled, expected["pooled_output"], atol=1e-5)
    maps = backbone.attention_probabilities(inputs)
    assert len(maps) == config.num_layers and maps[0].shape == (BATCH, config.num_heads, SEQ, SEQ)


def test_fused_and_explicit_backbones_agree():
    explicit = BertBackbone(small_config())
    fused = BertBackbone(small_config(attention="fused"))
    fused.set_weights(explicit.get_weights())
    inputs = random_inputs(explicit.config)
    np.testing.assert_allclose(keras.ops.convert_to_numpy(fused(inputs)["sequence_output"]),
                               keras.ops.convert_to_numpy(explicit(inputs)["sequence_output"]), atol=1e-5)


def test_backbone_keras_save_load_identical(tmp_path):
    backbone = BertBackbone(small_config(dropout=0.1))
    inputs = random_inputs(backbone.config)
    path = str(tmp_path / "backbone.keras")
    backbone.save(path)
    reloaded = keras.saving.load_model(path)
    assert reloaded.config == backbone.config
    for name in ("sequence_output", "pooled_output"):
        np.testing.assert_array_equal(keras.ops.convert_to_numpy(reloaded(inputs)[name]),
                                      keras.ops.convert_to_numpy(backbone(inputs)[name]))


def pretraining_features(config, predictions=3, seed=0):
    rng = np.random.default_rng(seed)
    features = random_inputs(config, seed=seed)
    features["mask_positions"] = rng.integers(0, SEQ - 2, (BATCH, predictions)).astype("int32")
    features["mask_ids"] = rng.integers(5, config.vocabulary_size, (BATCH, predictions)).astype("int32")
    features["mask_weights"] = np.array([[1, 1, 1], [1, 1, 0]], "float32")
    features["next_sentence_labels"] = np.array([0, 1], "int32")
    return features


def test_masked_lm_head_is_tied_and_gathers_positions():
    config = small_config()
    backbone = BertBackbone(config)
    head = MaskedLMHead(config.vocabulary_size, token_embedding=backbone.token_embedding)
    sequence = RNG.normal(size=(BATCH, SEQ, config.hidden_dim)).astype("float32")
    positions = np.array([[0, 3], [5, 1]], "int32")
    logits = keras.ops.convert_to_numpy(head(sequence, positions))
    assert logits.shape == (BATCH, 2, config.vocabulary_size)
    weights = hf_weights(head)
    np.testing.assert_array_equal(weights["decoder.weight"], backbone.token_embedding.embeddings.numpy())  # tied
    expected = reference.masked_lm_logits(weights, sequence.astype("float64"), positions)
    np.testing.assert_allclose(logits, expected, atol=1e-4)
    # Tied: the head owns only its transform, LayerNorm and bias, not a second (vocabulary, hidden) matrix.
    own = [w for w in head.weights if w is not backbone.token_embedding.embeddings]
    assert sum(int(np.prod(w.shape)) for w in own) == (16 * 16 + 16) + 2 * 16 + config.vocabulary_size


def test_next_sentence_head():
    head = NextSentenceHead()
    assert tuple(head(np.ones((BATCH, 16), "float32")).shape) == (BATCH, 2)


def cross_entropy(logits, labels):
    logits = logits - logits.max(-1, keepdims=True)
    log_probs = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    return -np.take_along_axis(log_probs, labels[..., None], -1)[..., 0]


def test_pretrainer_loss_is_mlm_plus_nsp_and_ignores_zero_weight_slots():
    config = small_config()
    pretrainer = BertPretrainer(BertBackbone(config))
    pretrainer.compile(optimizer="sgd")
    features = pretraining_features(config)
    x, y, sample_weight = pretraining_batch(features)
    outputs = pretrainer(x)
    assert tuple(outputs["mlm_logits"].shape) == (BATCH, 3, config.vocabulary_size)
    assert tuple(outputs["nsp_logits"].shape) == (BATCH, 2)
    mlm = cross_entropy(keras.ops.convert_to_numpy(outputs["mlm_logits"]), features["mask_ids"])
    weights = features["mask_weights"]
    expected_mlm = (mlm * weights).sum() / weights.sum()
    expected_nsp = cross_entropy(keras.ops.convert_to_numpy(outputs["nsp_logits"]),
                                 features["next_sentence_labels"]).mean()
    result = pretrainer.evaluate(x, y, sample_weight=sample_weight, return_dict=True, verbose=0)
    np.testing.assert_allclose(result["loss"], expected_mlm + expected_nsp, rtol=1e-5)
    np.testing.assert_allclose(result["mlm_logits_loss"], expected_mlm, rtol=1e-5)

    # The slot with weight 0 counts for nothing, whatever its label.
    features["mask_ids"][1, 2] = (features["mask_ids"][1, 2] + 1) % config.vocabulary_size
    x, y, sample_weight = pretraining_batch(features)
    again = pretrainer.evaluate(x, y, sample_weight=sample_weight, return_dict=True, verbose=0)
    np.testing.assert_allclose(again["loss"], result["loss"], rtol=1e-6)


@pytest.mark.parametrize("attention,causal", [("explicit", False), ("fused", False), ("explicit", True)])
def test_pretrainer_last_block_at_read_positions_equals_the_full_backbone(attention, causal):
    # The pretrainer computes its last block only at [CLS] and the masked slots; the reference runs the whole
    # backbone and gathers those rows. Padding and a repeated position are included.
    config = small_config(attention=attention, causal=causal)
    backbone = BertBackbone(config)
    features = pretraining_features(config)
    features["padding_mask"][1, SEQ - 2:] = 0
    features["mask_positions"][0] = [4, 1, 4]
    x, _, _ = pretraining_batch(features)
    pretrainer = BertPretrainer(backbone)
    outputs = pretrainer(x)
    full = backbone({name: x[name] for name in ("token_ids", "segment_ids", "padding_mask")})
    sequence = keras.ops.convert_to_numpy(full["sequence_output"])
    gathered = np.take_along_axis(sequence, features["mask_positions"][:, :, None], axis=1)
    np.testing.assert_allclose(keras.ops.convert_to_numpy(outputs["mlm_logits"]),
                               keras.ops.convert_to_numpy(pretrainer.mlm_head(gathered)), atol=1e-5)
    np.testing.assert_allclose(keras.ops.convert_to_numpy(outputs["nsp_logits"]),
                               keras.ops.convert_to_numpy(pretrainer.nsp_head(full["pooled_output"])), atol=1e-5)
    at = backbone.hidden_states_at(x, features["mask_positions"])
    np.testing.assert_allclose(keras.ops.convert_to_numpy(at), gathered, atol=1e-5)


def test_backbone_ignores_extra_keys_of_a_feature_dict():
    # Keras matches dict inputs by sorted key; an extra key such as `mask_positions` must not shift the others.
    backbone = BertBackbone(small_config())
    inputs = random_inputs(small_config())
    expected = keras.ops.convert_to_numpy(backbone(inputs)["sequence_output"])
    features = {**inputs, "mask_positions": np.zeros((BATCH, 3), "int32")}
    np.testing.assert_array_equal(keras.ops.convert_to_numpy(backbone(features)["sequence_output"]), expected)


def test_pretrainer_without_nsp_and_fit_step():
    config = small_config()
    pretrainer = BertPretrainer(BertBackbone(config), next_sentence=False)
    pretrainer.compile(optimizer=keras.optimizers.Adam(1e-2))
    x, y, sample_weight = pretraining_batch(pretraining_features(config), next_sentence=False)
    assert set(pretrainer(x)) == {"mlm_logits"}
    history = pretrainer.fit(x, y, sample_weight=sample_weight, epochs=5, verbose=0).history
    assert history["loss"][-1] < history["loss"][0]


def test_pretrainer_keras_save_load_identical(tmp_path):
    config = small_config(dropout=0.1)
    pretrainer = BertPretrainer(BertBackbone(config))
    pretrainer.compile(optimizer="adam")
    x, y, sample_weight = pretraining_batch(pretraining_features(config))
    pretrainer.fit(x, y, sample_weight=sample_weight, epochs=1, verbose=0)
    path = str(tmp_path / "pretrainer.keras")
    pretrainer.save(path)
    reloaded = keras.saving.load_model(path)
    before, after = pretrainer(x), reloaded(x)
    for name in ("mlm_logits", "nsp_logits"):
        np.testing.assert_array_equal(keras.ops.convert_to_numpy(after[name]),
                                      keras.ops.convert_to_numpy(before[name]))
    assert reloaded.mlm_head.token_embedding is reloaded.backbone.token_embedding


def test_causal_attention_sees_only_the_left():
    config = small_config(causal=True)
    backbone = BertBackbone(config)
    inputs = random_inputs(config)
    maps = backbone.attention_probabilities(inputs)
    assert np.all(np.triu(np.ones((SEQ, SEQ)), k=1)[None, None] * maps[0] == 0)
    changed = {**inputs, "token_ids": inputs["token_ids"].copy()}
    changed["token_ids"][:, 3:] = 9  # the right-hand context changes...
    a = keras.ops.convert_to_numpy(backbone(inputs)["sequence_output"])
    b = keras.ops.convert_to_numpy(backbone(changed)["sequence_output"])
    np.testing.assert_allclose(a[:, :3], b[:, :3], atol=1e-6)  # ...and the left positions cannot tell
    bidirectional = BertBackbone(small_config())
    bidirectional.set_weights(backbone.get_weights())
    a = keras.ops.convert_to_numpy(bidirectional(inputs)["sequence_output"])
    b = keras.ops.convert_to_numpy(bidirectional(changed)["sequence_output"])
    assert np.abs(a[:, :3] - b[:, :3]).max() > 1e-3


# --- the Keras layer contract: heads, inferred width, initializers ----------------------------------------------------

def test_masked_lm_head_layer_keeps_its_tie_in_its_config(tmp_path):
    embedding = keras.layers.Embedding(30, HIDDEN)
    embedding.build((None,))
    sequence = RNG.normal(size=(BATCH, SEQ, HIDDEN)).astype("float32")
    positions = np.array([[0, 3], [5, 1]], "int32")
    run_layer_test(MaskedLMHead, dict(token_embedding=embedding), [sequence, positions], (BATCH, 2, 30),
                          expected_num_weights=6, tmp_path=tmp_path)
    rebuilt = MaskedLMHead.from_config(MaskedLMHead(token_embedding=embedding).get_config())
    assert isinstance(rebuilt.token_embedding, keras.layers.Embedding) and rebuilt.vocabulary_size == 30
    assert rebuilt.token_embedding.output_dim == HIDDEN
    with pytest.raises(ValueError, match="token embedding it is tied to"):
        MaskedLMHead(30)
    with pytest.raises(ValueError, match="vocabulary_size=31 but the tied token embedding has 30 rows"):
        MaskedLMHead(31, token_embedding=embedding)


def test_next_sentence_head_layer(tmp_path):
    pooled = RNG.normal(size=(BATCH, HIDDEN)).astype("float32")
    run_layer_test(NextSentenceHead, {}, [pooled], (BATCH, 2), expected_num_weights=2, tmp_path=tmp_path)


def test_the_width_is_read_from_the_input():
    for width in (8, 12):
        x = RNG.normal(size=(BATCH, SEQ, width)).astype("float32")
        assert tuple(MultiHeadSelfAttention(HEADS)(x).shape) == (BATCH, SEQ, width)
        assert tuple(TransformerEncoderBlock(HEADS, 16)(x).shape) == (BATCH, SEQ, width)
    with pytest.raises(ValueError, match="hidden_dim=7, must be divisible by num_heads=2"):
        MultiHeadSelfAttention(HEADS)(RNG.normal(size=(BATCH, SEQ, 7)).astype("float32"))
    with pytest.raises(ValueError, match="Unrecognized keyword arguments.*hidden_dim"):  # Keras' own refusal
        MultiHeadSelfAttention(num_heads=2, hidden_dim=8)
    with pytest.raises(ValueError, match="Unrecognized keyword arguments.*hidden_dim"):
        TransformerEncoderBlock(num_heads=2, intermediate_dim=32, hidden_dim=8)
    with pytest.raises(TypeError):  # a width given first, (hidden_dim, num_heads, ...), fails, never shifts
        TransformerEncoderBlock(8, 2, 32)


@pytest.mark.parametrize("layer_cls, init_kwargs, input_shape", [
    (MultiHeadSelfAttention, dict(num_heads=HEADS), (BATCH, SEQ, HIDDEN)),
    (TransformerEncoderBlock, dict(num_heads=HEADS, intermediate_dim=16), (BATCH, SEQ, HIDDEN)),
    (NextSentenceHead, {}, (BATCH, HIDDEN)),
])
def test_initializers_are_serialized(layer_cls, init_kwargs, input_shape):
    layer = layer_cls(**init_kwargs, kernel_initializer=keras.initializers.Constant(0.25), bias_initializer="ones")
    config = layer.get_config()
    assert config["kernel_initializer"]["class_name"] == "Constant" and config["bias_initializer"]["class_name"] == "Ones"
    rebuilt = layer_cls.from_config(config)
    rebuilt(np.ones(input_shape, "float32"))
    kernels = [w for w in rebuilt.weights if w.name == "kernel"]
    biases = [w for w in rebuilt.weights if w.name == "bias"]
    assert kernels and all(np.all(keras.ops.convert_to_numpy(w) == 0.25) for w in kernels)
    assert biases and all(np.all(keras.ops.convert_to_numpy(w) == 1.0) for w in biases)
    assert layer_cls(**init_kwargs).get_config()["kernel_initializer"] is None  # BERT's own, made in build()


def test_the_default_initializer_is_berts_truncated_normal():
    """Every weight matrix starts as a normal of standard deviation 0.02 cut at two deviations (the released
    code's `create_initializer`); biases and LayerNorm offsets at 0, LayerNorm scales at 1.

    The cut is checked as a share, not a maximum: Keras's PyTorch backend redraws a value at most four times, so about
    one value in 230,000 (0.0455 ** 4) stays outside the cut, and a 28,000-value maximum failed about once in ten runs.
    An uncut normal would put 4.55% outside."""
    block = TransformerEncoderBlock(num_heads=4, intermediate_dim=256)
    block.build((None, None, 64))
    for kernel in (block.self_attention.query_key_value.kernel, block.intermediate_dense.kernel):
        values = keras.ops.convert_to_numpy(kernel)
        truncated_std = 0.02 * 0.8796  # the standard deviation of a unit normal cut at +-2, times 0.02
        assert np.mean(np.abs(values) > 0.04) < 1e-3 and abs(values.std() - truncated_std) < 0.05 * truncated_std
    assert not keras.ops.convert_to_numpy(block.intermediate_dense.bias).any()
    assert np.all(keras.ops.convert_to_numpy(block.output_layer_norm.gamma) == 1)


def test_every_random_weight_starts_from_its_own_draw():
    """Each weight matrix of a from-scratch backbone draws its own values (keras-hub clones the initializer per
    sublayer). A seeded initializer instance shared between two weights gives them the same values: the position
    table would start as the token table's first rows, the segment table as its first two, the feed-forward's output
    kernel as its input kernel read in another shape. Compared by brute force: every pair of random weights."""
    keras.utils.set_random_seed(0)
    backbone = BertBackbone(BertConfig(vocabulary_size=64, hidden_dim=16, num_layers=2, num_heads=2,
                                       intermediate_dim=32, max_sequence_length=16))
    random = {w.path: keras.ops.convert_to_numpy(w).ravel() for w in backbone.weights
              if w.name not in ("bias", "gamma", "beta")}
    assert len(random) == 1 + 2 + 4 * 2 + 1  # three tables, two kernels in attention and two in the FFN a block, pooler
    prefixes = {path: values[:16] for path, values in random.items()}
    for first, second in itertools.combinations(prefixes, 2):
        assert not np.allclose(prefixes[first], prefixes[second]), f"{first} and {second} start alike"


def test_layer_configs_saved_by_bertlib_0_2_still_load():
    """bertlib 0.2 kept initializers as Keras' serialized dicts, BERT's default spelled out; they still load."""
    saved = {"name": "block", "trainable": True, "dtype": "float32", "num_heads": 2, "intermediate_dim": 16,
             "dropout": 0.1, "layer_norm_epsilon": 1e-12, "attention": "explicit", "activation": "gelu",
             "causal": False, "bias_initializer": "zeros",
             "kernel_initializer": {"module": "keras.initializers", "class_name": "TruncatedNormal",
                                    "config": {"mean": 0.0, "stddev": 0.02, "seed": None}, "registered_name": None}}
    block = TransformerEncoderBlock.from_config(saved)
    assert isinstance(block.kernel_initializer, keras.initializers.TruncatedNormal)
    assert block.kernel_initializer.stddev == 0.02
    assert tuple(block(np.ones((1, 3, 8), "float32")).shape) == (1, 3, 8)


def test_embedding_initializer_is_serialized():
    layer = BertEmbedding(20, HIDDEN, max_sequence_length=10, embeddings_initializer=keras.initializers.Constant(0.5))
    rebuilt = BertEmbedding.from_config(layer.get_config())
    rebuilt(np.zeros((1, 3), "int32"), np.zeros((1, 3), "int32"))
    for table in (rebuilt.token_embedding.embeddings, rebuilt.position_embedding, rebuilt.segment_embedding.embeddings):
        assert np.all(keras.ops.convert_to_numpy(table) == 0.5)


def test_pretrainer_matches_the_reference_under_hugging_face_pretraining_names():
    """`hf_weights(pretrainer)` names the weights as `BertForPreTraining` does (`bert.`, `cls.predictions.`,
    `cls.seq_relationship.`), and the reference's backbone and heads on them give the pretrainer's logits."""
    config = small_config()
    pretrainer = BertPretrainer(BertBackbone(config))
    features = pretraining_features(config)
    x, _, _ = pretraining_batch(features)
    outputs = pretrainer(x)
    weights = hf_weights(pretrainer)
    assert {"bert.pooler.dense.weight", "cls.predictions.decoder.weight", "cls.predictions.bias",
            "cls.seq_relationship.weight"} <= set(weights)
    backbone = reference.bert(weights, config, features)
    mlm = reference.masked_lm_logits(reference.sub(weights, "cls.predictions."), backbone["sequence_output"],
                                     features["mask_positions"])
    nsp = reference.next_sentence_logits(reference.sub(weights, "cls."), backbone["pooled_output"])
    np.testing.assert_allclose(keras.ops.convert_to_numpy(outputs["mlm_logits"]), mlm, atol=1e-4)
    np.testing.assert_allclose(keras.ops.convert_to_numpy(outputs["nsp_logits"]), nsp, atol=1e-5)
