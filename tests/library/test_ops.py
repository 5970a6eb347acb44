"""bertlib.train.gradients on the backend that runs (tests/library/test_backends.py runs this file on JAX and PyTorch too):
gradients against the closed form of a linear least-squares loss and against central finite differences."""

import keras
import numpy as np
import pytest
from keras import ops

from bertlib import BertBackbone, BertConfig
from bertlib.model import BertPretrainer
from bertlib.train.gradients import value_and_gradients


def test_linear_least_squares_matches_its_closed_form():
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(8, 3)).astype("float32"), rng.normal(size=(8, 2)).astype("float32")
    dense = keras.layers.Dense(2)
    dense.build((None, 3))
    unused = keras.layers.Dense(1)
    unused.build((None, 3))
    loss, (kernel, bias, unused_kernel) = value_and_gradients(
        lambda: ops.mean(ops.sum(ops.square(ops.subtract(dense(x), y)), axis=-1)), [dense.kernel, dense.bias, unused.kernel])
    w, b = ops.convert_to_numpy(dense.kernel), ops.convert_to_numpy(dense.bias)
    residual = x @ w + b - y  # d/dW mean_i |x_i W + b - y_i|^2 = (2 / n) x^T r
    assert loss == pytest.approx(float(np.mean(np.sum(residual ** 2, -1))), rel=1e-5)
    np.testing.assert_allclose(kernel, 2 / len(x) * x.T @ residual, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(bias, 2 / len(x) * residual.sum(0), rtol=1e-5, atol=1e-6)
    assert unused_kernel.shape == (3, 1) and not unused_kernel.any()  # no path from the loss: zeros


def test_nonlinear_model_matches_central_differences():
    keras.utils.set_random_seed(1)
    config = BertConfig(num_layers=1, num_heads=2, hidden_dim=8, intermediate_dim=16, vocabulary_size=12,
                        max_sequence_length=6, dropout=0.0)
    backbone = BertBackbone(config)
    inputs = {"token_ids": np.array([[2, 5, 7, 3, 0, 0]], "int32"), "segment_ids": np.zeros((1, 6), "int32"),
              "padding_mask": np.array([[1, 1, 1, 1, 0, 0]], "int32")}
    loss_fn = lambda: ops.sum(ops.tanh(backbone(inputs)["pooled_output"]) ** 2)  # noqa: E731
    kernel = backbone.pooler.kernel
    loss, (gradient,) = value_and_gradients(loss_fn, [kernel])
    original = ops.convert_to_numpy(kernel).astype("float64")
    epsilon = 1e-2
    for index in [(0, 0), (3, 5), (7, 2)]:
        values = []
        for sign in (1, -1):
            moved = original.copy()
            moved[index] += sign * epsilon
            kernel.assign(moved.astype("float32"))
            values.append(float(ops.convert_to_numpy(loss_fn())))
        kernel.assign(original.astype("float32"))
        assert gradient[index] == pytest.approx((values[0] - values[1]) / (2 * epsilon), rel=2e-2, abs=1e-4)
    assert loss == pytest.approx(float(ops.convert_to_numpy(loss_fn())), rel=1e-6)  # the weights are back


def test_pooler_gradient_without_and_with_next_sentence_prediction():
    """Chapter 04's claim, on this backend: masked LM alone sends no gradient to the [CLS] pooler."""
    config = BertConfig(num_layers=1, num_heads=2, hidden_dim=8, intermediate_dim=16, vocabulary_size=20,
                        max_sequence_length=8, dropout=0.0)
    rng = np.random.default_rng(0)
    batch = {"token_ids": rng.integers(5, 20, (2, 8)).astype("int32"), "segment_ids": np.zeros((2, 8), "int32"),
             "padding_mask": np.ones((2, 8), "int32"), "mask_positions": np.array([[1, 2], [3, 4]], "int32")}
    norms = {}
    for next_sentence in (False, True):
        pretrainer = BertPretrainer(BertBackbone(config), next_sentence=next_sentence)

        def loss_fn(pretrainer=pretrainer, next_sentence=next_sentence):
            outputs = pretrainer(batch, training=False)
            loss = ops.mean(keras.losses.sparse_categorical_crossentropy(
                np.array([[5, 6], [7, 8]]), outputs["mlm_logits"], from_logits=True))
            if next_sentence:
                loss = loss + ops.mean(keras.losses.sparse_categorical_crossentropy(
                    np.array([0, 1]), outputs["nsp_logits"], from_logits=True))
            return loss

        _, (gradient,) = value_and_gradients(loss_fn, [pretrainer.backbone.pooler.kernel])
        norms[next_sentence] = float(np.linalg.norm(gradient))
    assert norms[False] == 0 and norms[True] > 1e-6


def test_refuses_frozen_variables():
    dense = keras.layers.Dense(2)
    dense.build((None, 3))
    dense.trainable = False
    with pytest.raises(ValueError, match="needs trainable variables; these are not: \\['dense.*kernel'"):
        value_and_gradients(lambda: ops.sum(dense(np.ones((1, 3), "float32"))), [dense.kernel])
