"""What Keras 3 leaves to each backend, for the few places the course needs it: one function, one
implementation per backend (TensorFlow, JAX, PyTorch), the same answer on each.

- `value_and_gradients(loss_fn, variables)`: a loss and its gradient with respect to some variables, to look at
  (chapter 04 asks whether the pooler gets any gradient when next-sentence prediction is off). Training goes
  through `model.fit`, which already does this on every backend.

Example:
>>> loss, (kernel_gradient,) = value_and_gradients(lambda: ops.mean(model(x) ** 2), [dense.kernel])
"""

import keras
import numpy as np


def value_and_gradients(loss_fn, variables):
    """The value of `loss_fn()` and its gradient with respect to each of `variables`, as numpy arrays.

    Args:
        loss_fn: callable without arguments returning a scalar tensor computed from the variables' current
            values, e.g. `lambda: ops.mean(keras.losses.sparse_categorical_crossentropy(y, model(x), True))`.
            It is called once (on JAX, once while JAX traces it).
        variables: list of trainable `keras.Variable`s (e.g. `model.trainable_variables`, `dense.kernel`).

    Returns:
        (loss, gradients): the loss as a float and one float32 numpy array per variable, of the variable's
        shape. A variable the loss does not depend on gets zeros everywhere: no gradient reaches it (TensorFlow
        and PyTorch say None there, JAX zeros; all three mean the same for training).
    """
    variables = list(variables)
    frozen = [variable.path for variable in variables if not variable.trainable]
    if frozen:
        raise ValueError(f"value_and_gradients needs trainable variables; these are not: {frozen}. "
                         "Set `layer.trainable = True` first, or leave them out.")
    backend = keras.backend.backend()
    if backend == "tensorflow":
        loss, gradients = _tensorflow(loss_fn, variables)
    elif backend == "jax":
        loss, gradients = _jax(loss_fn, variables)
    elif backend == "torch":
        loss, gradients = _torch(loss_fn, variables)
    else:
        raise RuntimeError(f"value_and_gradients supports the tensorflow, jax and torch backends, not {backend!r}.")
    loss = float(keras.ops.convert_to_numpy(loss))
    gradients = [np.zeros(variable.shape, "float32") if gradient is None
                 else keras.ops.convert_to_numpy(gradient).astype("float32")
                 for variable, gradient in zip(variables, gradients)]
    return loss, gradients


def _tensorflow(loss_fn, variables):
    import tensorflow as tf

    with tf.GradientTape() as tape:  # trainable variables are watched by default
        loss = loss_fn()
    return loss, tape.gradient(loss, variables)


def _jax(loss_fn, variables):
    import jax

    def loss_of(values):  # JAX differentiates functions of arrays: read the variables from `values`
        with keras.StatelessScope(state_mapping=list(zip(variables, values))):
            return loss_fn()

    return jax.value_and_grad(loss_of)([variable.value for variable in variables])


def _torch(loss_fn, variables):
    import torch

    with torch.enable_grad():
        loss = loss_fn()
        if not loss.requires_grad:  # it depends on none of the variables
            return loss, [None] * len(variables)
        gradients = torch.autograd.grad(loss, [variable.value for variable in variables], allow_unused=True)
    return loss, gradients
