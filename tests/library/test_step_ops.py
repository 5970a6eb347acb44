"""`bertlib.model.ops`, the model's faster formulations, each against the plain computation it replaces."""

import copy

import keras
import numpy as np
import pytest

from bertlib.model.ops import MaskedLMLoss, gather_positions, top1_accuracy, top1_accuracy_metric


@pytest.mark.parametrize("shape", [(4, 3, 50), (6, 2)])
def test_top1_accuracy_is_keras_sparse_categorical_accuracy(shape):
    rng = np.random.default_rng(0)
    logits = rng.normal(size=shape).astype("float32")  # continuous: no ties
    labels = rng.integers(0, shape[-1], shape[:-1])
    labels.reshape(-1)[::2] = logits.reshape(-1, shape[-1])[::2].argmax(-1)  # half of them right
    weights = rng.random(shape[:-1]).astype("float32")
    ours, keras_metric = top1_accuracy_metric(), keras.metrics.SparseCategoricalAccuracy()
    ours.update_state(labels, logits, sample_weight=weights)
    keras_metric.update_state(labels, logits, sample_weight=weights)
    expected = np.sum(weights * (logits.argmax(-1) == labels)) / np.sum(weights)
    assert 0.3 < expected < 1
    assert float(ours.result()) == pytest.approx(float(keras_metric.result()), abs=1e-6)
    assert float(ours.result()) == pytest.approx(expected, abs=1e-6)


def test_top1_accuracy_takes_column_labels():
    logits = np.array([[0.1, 2.0], [3.0, -1.0], [0.5, 0.4]], "float32")
    values = keras.ops.convert_to_numpy(top1_accuracy(np.array([[1], [1], [0]]), logits))
    np.testing.assert_array_equal(values.reshape(-1), [1.0, 0.0, 1.0])


@pytest.mark.parametrize("axis", [1, 2])
def test_gather_positions_is_take_along_axis(axis):
    rng = np.random.default_rng(1)
    x = rng.normal(size=(3, 4, 7, 5)).astype("float32")
    positions = rng.integers(0, x.shape[axis], (3, 6))  # repeats included
    index = positions.reshape((3,) + (1,) * (axis - 1) + (6,) + (1,) * (x.ndim - axis - 1))
    expected = np.take_along_axis(x, index, axis=axis)
    np.testing.assert_array_equal(keras.ops.convert_to_numpy(gather_positions(x, positions, axis=axis)), expected)


def train_tiny_pretrainer(**compile_kwargs):
    """(history, weights) of a 1-layer pretrainer after 3 epochs on a fixed random batch set, MLM + NSP, some
    masked-LM slots weighted 0; `compile_kwargs` beside `make_optimizer`'s AdamW (none: the defaults)."""
    from bertlib import BertBackbone, BertConfig, BertPretrainer
    from bertlib.train import schedule

    rng = np.random.default_rng(2)
    x = {"token_ids": rng.integers(5, 40, (32, 12)).astype("int32"), "segment_ids": np.zeros((32, 12), "int32"),
         "padding_mask": np.ones((32, 12), "int32"),
         "mask_positions": np.sort(rng.choice(np.arange(1, 11), (32, 3)), axis=1).astype("int32")}
    y = {"mlm_logits": rng.integers(5, 40, (32, 3)).astype("int32"), "nsp_logits": rng.integers(0, 2, (32,))}
    w = {"mlm_logits": (rng.random((32, 3)) > 0.2).astype("float32"), "nsp_logits": np.ones(32, "float32")}
    keras.utils.set_random_seed(0)
    config = BertConfig(num_layers=1, num_heads=2, hidden_dim=16, intermediate_dim=32, vocabulary_size=40,
                        max_sequence_length=12, dropout=0.0)
    model = BertPretrainer(BertBackbone(config))
    model.compile(optimizer=schedule.make_optimizer(1e-2, 1, 10), **compile_kwargs)
    history = model.fit(x, y, sample_weight=w, batch_size=8, epochs=3, verbose=0, shuffle=False).history
    return history, model.get_weights()


def test_pretrainer_history_keeps_keras_accuracy_values():
    """The default metrics give the history keys and values Keras' SparseCategoricalAccuracy gives."""
    ours, _ = train_tiny_pretrainer()
    theirs, _ = train_tiny_pretrainer(
        weighted_metrics={"mlm_logits": [keras.metrics.SparseCategoricalAccuracy(name="accuracy")]},
        metrics={"nsp_logits": [keras.metrics.SparseCategoricalAccuracy(name="accuracy")]})
    assert {"mlm_logits_accuracy", "nsp_logits_accuracy"} <= set(ours) and set(ours) == set(theirs)
    assert max(ours["mlm_logits_accuracy"]) > 0  # something was learned, so the comparison can fail
    for key in ours:
        np.testing.assert_allclose(ours[key], theirs[key], rtol=1e-6, err_msg=key)


def test_masked_lm_loss_is_keras_sparse_categorical_crossentropy():
    """The pretrainer's loss on (rows, vocabulary) logits: the values of Keras' loss on the 3-D logits."""
    rng = np.random.default_rng(3)
    logits = rng.normal(scale=3.0, size=(5, 4, 37)).astype("float32")
    labels = rng.integers(0, 37, (5, 4))
    weights = (rng.random((5, 4)) > 0.3).astype("float32")  # padding slots (weight 0) count for nothing
    keras_loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True, reduction="mean_with_sample_weight")
    expected = -np.sum(weights * (logits - np.log(np.exp(logits).sum(-1, keepdims=True)))[
        np.arange(5)[:, None], np.arange(4), labels]) / weights.sum()
    ours = float(MaskedLMLoss()(labels, logits, sample_weight=weights))
    assert ours == pytest.approx(float(keras_loss(labels, logits, sample_weight=weights)), rel=1e-6)
    assert ours == pytest.approx(expected, rel=1e-5)
    per_slot = keras.ops.convert_to_numpy(MaskedLMLoss(reduction=None)(labels, logits))
    np.testing.assert_allclose(per_slot, keras.ops.convert_to_numpy(
        keras.losses.sparse_categorical_crossentropy(labels, logits, from_logits=True)), rtol=1e-6)
    assert per_slot.shape == (5, 4)


def test_pretrainer_loss_trains_as_keras_loss():
    """Training with the default loss ends where Keras' `SparseCategoricalCrossentropy` ends: on TensorFlow bit for
    bit (its loss flattens the logits to rows itself, so the stored chapters' numbers stay), on JAX and PyTorch to
    float32 rounding (another fusion or kernel)."""
    ours, our_weights = train_tiny_pretrainer()
    theirs, their_weights = train_tiny_pretrainer(loss={
        "mlm_logits": keras.losses.SparseCategoricalCrossentropy(
            from_logits=True, reduction="mean_with_sample_weight", name="mlm_loss"),
        "nsp_logits": keras.losses.SparseCategoricalCrossentropy(from_logits=True, name="nsp_loss")})
    assert set(ours) == set(theirs) and ours["loss"][-1] < ours["loss"][0]  # it trained: the comparison can fail
    exact = keras.backend.backend() == "tensorflow"
    for key in ours:
        if exact:
            assert ours[key] == theirs[key], key
        else:
            np.testing.assert_allclose(ours[key], theirs[key], rtol=1e-5, err_msg=key)
    for mine, reference in zip(our_weights, their_weights):
        np.testing.assert_allclose(mine, reference, rtol=0 if exact else 1e-4, atol=0 if exact else 1e-6)


def test_make_optimizer_is_keras_adamw_that_skips_layer_norm_and_biases():
    """A.2's optimizer is Keras' own AdamW (no subclass on private API): decoupled decay on weight matrices, none
    on LayerNorm's gamma and beta or on biases (the released code's exclusions)."""
    from bertlib.train import schedule

    optimizer = schedule.make_optimizer(schedule.WarmupLinearDecay(0.1, 0, 10), weight_decay=0.5)
    assert isinstance(optimizer, keras.optimizers.AdamW) and type(optimizer).__module__.startswith("keras.")
    assert (optimizer.beta_1, optimizer.beta_2, optimizer.epsilon, optimizer.global_clipnorm) == (0.9, 0.999, 1e-6, 1.0)
    layer, norm = keras.layers.Dense(3), keras.layers.LayerNormalization()
    layer.build((None, 2))
    norm.build((None, 3))
    variables = [layer.kernel, layer.bias, norm.gamma, norm.beta]
    for variable in variables:
        variable.assign(np.full(variable.shape, 2.0, "float32"))
    optimizer.apply([keras.ops.zeros(v.shape) for v in variables], variables)  # a zero gradient: decay alone
    kernel, bias, gamma, beta = (keras.ops.convert_to_numpy(v) for v in variables)
    np.testing.assert_allclose(kernel, 2.0 * (1 - 0.1 * 0.5), rtol=1e-6)  # w <- w - lr * decay * w
    assert np.all(bias == 2.0) and np.all(gamma == 2.0) and np.all(beta == 2.0)


def test_a_pretrainer_saved_with_bertlib_0_2s_adamw_gets_keras_adamw():
    """bertlib 0.2 saved `pretrainer.keras` with its own AdamW subclass (registered as `bertlib>AdamW`, Keras'
    update and config); such a file's optimizer loads as Keras' AdamW, its decay exclusions restored."""
    from bertlib import BertBackbone, BertConfig, BertPretrainer
    from bertlib.train import schedule

    config = BertConfig(num_layers=1, num_heads=2, hidden_dim=8, intermediate_dim=16, vocabulary_size=20,
                        max_sequence_length=8)
    keras_form = keras.saving.serialize_keras_object(schedule.make_optimizer(1e-3, 0, 10))
    saved = {**copy.deepcopy(keras_form), "module": "bertlib.train.schedule", "registered_name": "bertlib>AdamW"}
    pretrainer = BertPretrainer(BertBackbone(config))
    pretrainer.compile_from_config({"optimizer": saved})
    assert isinstance(pretrainer.optimizer, keras.optimizers.AdamW)
    assert keras.saving.serialize_keras_object(pretrainer.optimizer) == keras_form
    bias = pretrainer.backbone.pooler.bias
    kernel = pretrainer.backbone.pooler.kernel
    before = keras.ops.convert_to_numpy(kernel).copy()
    bias.assign(np.ones(bias.shape, "float32"))
    pretrainer.optimizer.apply([keras.ops.zeros(v.shape) for v in (kernel, bias)], [kernel, bias])
    assert np.all(keras.ops.convert_to_numpy(bias) == 1.0)
    assert np.abs(keras.ops.convert_to_numpy(kernel) - before).max() > 0  # decayed
