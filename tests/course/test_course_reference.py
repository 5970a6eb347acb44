"""`bertlib_course.reference.decoder_step`: a causal model run one token at a time with a key-value cache gives
the same hidden states as the whole sequence run at once (by the reference and by a bertlib backbone)."""

import keras
import numpy as np
import pytest

from bertlib import BertBackbone, BertConfig
from bertlib.model.checkpoint import hf_weights
from bertlib_course import reference


def causal_config(**overrides):
    return BertConfig(**{**dict(num_layers=2, num_heads=2, hidden_dim=16, intermediate_dim=32, vocabulary_size=50,
                                max_sequence_length=16, dropout=0.0, causal=True), **overrides})


def whole(weights, config, token_ids):
    inputs = {"token_ids": token_ids, "segment_ids": np.zeros_like(token_ids), "padding_mask": np.ones_like(token_ids)}
    return reference.bert(weights, config, inputs)["sequence_output"]


def test_cached_steps_equal_the_whole_causal_sequence():
    config = causal_config()
    backbone = BertBackbone(config)
    weights = hf_weights(backbone)
    token_ids = np.random.default_rng(0).integers(5, 50, size=(2, 9))
    hidden, cache = reference.decoder_step(weights, config, token_ids[:, :4])  # the prompt at once
    rows = [hidden]
    for position in range(4, 9):  # then one token at a time
        hidden, cache = reference.decoder_step(weights, config, token_ids[:, position:position + 1], cache)
        rows.append(hidden)
    stepped = np.concatenate(rows, axis=1)
    np.testing.assert_allclose(stepped, whole(weights, config, token_ids), atol=1e-10)
    inputs = {"token_ids": token_ids.astype("int32"), "segment_ids": np.zeros((2, 9), "int32"),
              "padding_mask": np.ones((2, 9), "int32")}
    keras_output = keras.ops.convert_to_numpy(backbone(inputs)["sequence_output"])
    np.testing.assert_allclose(stepped, keras_output, atol=1e-5)
    assert len(cache) == 2 and cache[0]["key"].shape == cache[1]["value"].shape == (2, 9, 16)


def test_the_cache_is_what_makes_the_step_right():
    # Without the earlier keys and values (a fresh cache), the last token's state is a different one.
    config = causal_config()
    weights = hf_weights(BertBackbone(config))
    token_ids = np.random.default_rng(1).integers(5, 50, size=(1, 6))
    _, cache = reference.decoder_step(weights, config, token_ids[:, :5])
    with_cache, _ = reference.decoder_step(weights, config, token_ids[:, 5:], cache)
    expected = whole(weights, config, token_ids)[:, 5:]
    np.testing.assert_allclose(with_cache, expected, atol=1e-10)
    without, _ = reference.decoder_step(weights, config, token_ids[:, 5:])
    assert np.abs(without - expected).max() > 1e-3


def test_a_bidirectional_model_has_no_cache():
    config = causal_config(causal=False)
    with pytest.raises(ValueError, match="causal"):
        reference.decoder_step(hf_weights(BertBackbone(config)), config, np.array([[5, 6]]))
