"""The hidden references of exercises 2.8, 3.6 and 5.7 (bertlib_course.exercise_refs) against independent code:
keras-hub's pre-LN TransformerEncoder, bertlib's layers, and Keras' own losses and GELU."""

import keras
import numpy as np
import pytest
from keras import ops

from bertlib import MultiHeadSelfAttention, TransformerEncoderBlock
from bertlib_course import exercise_refs as refs
from bertlib_course.checks import CheckFailed


def test_the_pre_ln_reference_equals_keras_hubs_normalize_first_encoder():
    keras_hub = pytest.importorskip("keras_hub")
    x, padding_mask, num_heads, w = refs.random_pre_ln_inputs(np.random.default_rng(0), num_heads=2, hidden=8, seq=5)
    hidden, head_dim = 8, 4
    encoder = keras_hub.layers.TransformerEncoder(
        intermediate_dim=16, num_heads=num_heads, dropout=0.0, layer_norm_epsilon=1e-12, normalize_first=True,
        activation=lambda t: keras.activations.gelu(t, approximate=False))
    encoder.build((None, None, hidden))
    attention = encoder._self_attention_layer
    split = np.split(w[2], 3, axis=-1)
    split_bias = np.split(w[3], 3)
    for dense, kernel, bias in zip((attention._query_dense, attention._key_dense, attention._value_dense), split,
                                   split_bias):
        dense.kernel.assign(kernel.reshape(hidden, num_heads, head_dim))
        dense.bias.assign(bias.reshape(num_heads, head_dim))
    attention._output_dense.kernel.assign(w[4].reshape(num_heads, head_dim, hidden))
    attention._output_dense.bias.assign(w[5])
    encoder._self_attention_layer_norm.set_weights(w[0:2])
    encoder._feedforward_layer_norm.set_weights(w[6:8])
    encoder._feedforward_intermediate_dense.set_weights(w[8:10])
    encoder._feedforward_output_dense.set_weights(w[10:12])
    expected = ops.convert_to_numpy(encoder(x, padding_mask=padding_mask.astype(bool)))
    got = refs.pre_ln_steps(x, padding_mask, num_heads, w)["output"]
    real = padding_mask.astype(bool)  # keras-hub also masks padded queries; compare the real positions
    np.testing.assert_allclose(got[real], expected[real], rtol=1e-4, atol=1e-4)


def test_the_post_ln_control_equals_bertlibs_block_and_the_attention_bertlibs_layer():
    x, padding_mask, num_heads, w = refs.random_pre_ln_inputs(np.random.default_rng(1), num_heads=4, hidden=16, seq=6)
    attention = MultiHeadSelfAttention(num_heads=num_heads, dropout=0.0)
    attention.build(x.shape)
    attention.set_weights(w[2:6])
    np.testing.assert_allclose(refs._attention(x.astype("float64"), padding_mask, num_heads,
                                               *(np.asarray(v, "float64") for v in w[2:6])),
                               ops.convert_to_numpy(attention(x, padding_mask=padding_mask)), rtol=1e-4, atol=1e-4)
    block = TransformerEncoderBlock(num_heads=num_heads, intermediate_dim=32, dropout=0.0)
    block.build(x.shape)
    block.set_weights([*w[2:6], *w[0:2], *w[8:12], *w[6:8]])  # bertlib's order: attention, LN, FFN, LN
    np.testing.assert_allclose(refs.pre_ln_steps(x, padding_mask, num_heads, w, post_ln=True)["output"],
                               ops.convert_to_numpy(block(x, padding_mask=padding_mask)), rtol=1e-4, atol=1e-4)


def test_the_geglu_reference_equals_the_formula_in_keras_ops():
    x, gate, up, down = refs.random_geglu_inputs(np.random.default_rng(2), hidden=8, intermediate=12)
    expected = ops.matmul(ops.gelu(ops.matmul(x, gate), approximate=False) * ops.matmul(x, up), down)
    np.testing.assert_allclose(refs.geglu_steps(x, gate, up, down)["output"], ops.convert_to_numpy(expected),
                               rtol=1e-4, atol=1e-5)


def test_the_rtd_reference_equals_keras_binary_crossentropy_over_the_real_positions():
    sequence_output, original, corrupted, padding_mask, w = refs.random_rtd_inputs(np.random.default_rng(3))
    steps = refs.rtd_steps(sequence_output, original, corrupted, padding_mask, w)
    assert steps["labels"].sum() > 0 and (steps["labels"] == (original != corrupted)).all()
    per_position = ops.convert_to_numpy(keras.losses.binary_crossentropy(
        steps["labels"][..., None], steps["logits"][..., None], from_logits=True))
    expected = (per_position * padding_mask).sum() / padding_mask.sum()
    np.testing.assert_allclose(steps["loss"], expected, rtol=1e-5)
    dense = ops.convert_to_numpy(ops.gelu(ops.matmul(sequence_output, w[0]) + w[1], approximate=False))
    np.testing.assert_allclose(steps["dense"], dense, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("steps_of, mistakes_of, inputs", [
    (refs.pre_ln_steps, refs.pre_ln_mistakes, refs.random_pre_ln_inputs(np.random.default_rng(4), 2, 8, 5)),
    (refs.geglu_steps, refs.geglu_mistakes, refs.random_geglu_inputs(np.random.default_rng(5))),
    (refs.rtd_steps, refs.rtd_mistakes, refs.random_rtd_inputs(np.random.default_rng(6))),
])
def test_each_known_mistake_is_named_at_the_first_step_it_changes(steps_of, mistakes_of, inputs, capsys):
    expected = steps_of(*inputs)
    refs.check_steps("reference", expected, expected)
    assert "✔ reference: every step" in capsys.readouterr().out
    for what, replay in mistakes_of(*inputs).items():
        first = next(step for step in expected if step in replay
                     and not np.allclose(replay[step], expected[step], rtol=1e-5, atol=1e-5))
        wrong = {**expected, **replay}
        with pytest.raises(CheckFailed) as failure:
            refs.check_steps("answer", wrong, expected, mistakes_of(*inputs))
        assert f"step `{first}`" in str(failure.value) and what in str(failure.value), (what, str(failure.value))


def test_the_compiled_step_check_is_marked_for_the_grader_to_run_in_the_kernel():
    assert refs.check_compiled_step.coursekit_in_kernel is True
