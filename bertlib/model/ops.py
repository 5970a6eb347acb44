"""The model's faster formulations, each beside the plain one it replaces and tested against it. A formulation stays
here only while its bench says it pays (bench: `profile_step.py`, `tiny_pretrain.py`); the model files call these
and read as the paper does.
"""

import keras
from keras import ops


def gather_positions(x, positions, axis=1):
    """x[b, ..., positions[b, i], ...]: each example's rows at `positions` (batch, n), taken along `axis`.

    Plain form: `ops.take_along_axis(x, index, axis)` with `positions` reshaped to broadcast over the other axes.
    That broadcasts the indices to x's whole shape and, on TensorFlow, transposes x there and back, which in the
    course's tiny model cost more than the block's matmuls (bench: `profile_step.py --preset course`). Here: one
    flat `take` over the leading axes, index = b * stride + ... + position.
    """
    shape = ops.shape(x)
    index = ops.cast(positions, "int32")  # (batch, n) -> (batch, 1, ..., n): broadcasts over axes 1..axis-1
    for _ in range(axis - 1):
        index = ops.expand_dims(index, 1)
    stride = shape[axis]
    for dim in range(axis - 1, -1, -1):  # the offset of each leading axis' rows in the flattened x
        offsets = ops.arange(shape[dim], dtype="int32") * stride
        index = index + ops.reshape(offsets, [-1 if d == dim else 1 for d in range(axis + 1)])
        stride = stride * shape[dim]
    flat = ops.reshape(x, (-1, *x.shape[axis + 1:]))  # (batch * ... * seq, rest)
    return ops.take(flat, index, axis=0)  # (batch, ..., n, rest)


@keras.saving.register_keras_serializable(package="bertlib")
class MaskedLMLoss(keras.losses.Loss):
    """The masked-LM loss: the cross-entropy of each slot's logits, averaged over the real slots (weight 1).

    Plain form: `keras.losses.SparseCategoricalCrossentropy(from_logits=True, reduction="mean_with_sample_weight")`
    on the (batch, predictions, vocabulary) logits. Here the logits are seen as (rows, vocabulary): the same values
    (on TensorFlow bit for bit, as its loss flattens the logits itself). On PyTorch, Keras would first move the
    class axis to axis 1, a strided copy and a slower softmax: the loss takes about half the time on rows
    (bench: `tiny_pretrain.py` on PyTorch).
    """

    def __init__(self, reduction="mean_with_sample_weight", name="mlm_loss", dtype=None):
        super().__init__(name=name, reduction=reduction, dtype=dtype)

    def call(self, y_true, y_pred):
        rows = ops.reshape(y_pred, (-1, ops.shape(y_pred)[-1]))  # (batch * predictions, vocabulary)
        losses = ops.sparse_categorical_crossentropy(ops.reshape(y_true, (-1,)), rows, from_logits=True)
        return ops.reshape(losses, ops.shape(y_pred)[:-1])  # (batch, predictions), for the slot weights


def top1_accuracy(y_true, y_pred):
    """1.0 where the label's logit is the largest of its row, else 0.0.

    Plain form: `keras.metrics.sparse_categorical_accuracy` (an argmax compared with the label). Here one max and
    one gather over the logits: Keras' TensorFlow argmax adds five passes over the logits to tell -0.0 from
    +0.0, about 5% of a BERT-sized step (bench: `profile_step.py`). The same accuracy except on exact ties: a
    label whose logit ties the largest counts as right here, and there only if it comes first.
    """
    y_pred = ops.convert_to_tensor(y_pred)
    labels = ops.cast(y_true, "int32")
    if len(labels.shape) == len(y_pred.shape):  # (batch, 1) labels of (batch, classes) logits
        labels = ops.squeeze(labels, -1)
    classes = ops.shape(y_pred)[-1]
    labels = ops.reshape(labels, (-1,))  # one flat gather of the label's logit in each row
    rows = ops.arange(ops.shape(labels)[0], dtype="int32")
    label_logit = ops.reshape(ops.take(ops.reshape(y_pred, (-1,)), rows * classes + labels), ops.shape(y_pred)[:-1])
    return ops.cast(label_logit >= ops.max(y_pred, axis=-1), "float32")


def top1_accuracy_metric(name="accuracy"):
    """The pretrainer's accuracy metric: the (weighted) mean of `top1_accuracy`."""
    return keras.metrics.MeanMetricWrapper(top1_accuracy, name=name)
