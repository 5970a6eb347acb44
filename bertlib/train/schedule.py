"""The optimizer and learning-rate schedule of appendix A.2.

Adam with lr 1e-4, beta1 0.9, beta2 0.999, L2 weight decay 0.01 (decoupled, as the released code's
`AdamWeightDecayOptimizer`, and not on LayerNorm parameters or biases), warmup over the first 10,000 steps then
linear decay, gradient clipping at global norm 1.0. `bertlib.train.pretraining` and `bertlib.finetune` train with
`make_optimizer`.

Example:
>>> optimizer = make_optimizer(1e-4, warmup_steps=10_000, total_steps=1_000_000)
>>> float(warmup_linear_decay(1e-4, 10_000, 1_000_000)(5_000))
5e-05
"""

import keras
from keras import ops

from bertlib.model.backbone import NO_WEIGHT_DECAY


@keras.saving.register_keras_serializable(package="bertlib")
class WarmupLinearDecay(keras.optimizers.schedules.LearningRateSchedule):
    """Linear warmup from 0 to `peak`, then linear decay to 0 at `total_steps` (A.2; the original
    `optimization.py`).

    As in the original code, the decay line is `peak * (1 - step / total_steps)` from step 0, and during the
    first `warmup_steps` the rate is `peak * step / warmup_steps` instead; so at the end of warmup the rate
    steps from `peak` down to `peak * (1 - warmup_steps / total_steps)` (1% below peak for the paper's
    10k / 1M).

    Args:
        peak: float, the rate after warmup (1e-4 in the paper).
        warmup_steps: int, steps of linear warmup (10,000 in the paper); 0 for none.
        total_steps: int, the step where the rate reaches 0 (1,000,000 in the paper).

    Example:
    >>> schedule = WarmupLinearDecay(1e-4, 10_000, 1_000_000)
    >>> float(schedule(5_000))
    5e-05
    """

    def __init__(self, peak, warmup_steps, total_steps):
        if not peak > 0:
            raise ValueError(f"The peak learning rate must be positive, got {peak!r}.")
        if not 0 < total_steps:
            raise ValueError(f"total_steps must be positive, got {total_steps!r}.")
        if not 0 <= warmup_steps <= total_steps:
            raise ValueError(f"warmup_steps ({warmup_steps}) must be between 0 and total_steps "
                             f"({total_steps}); otherwise the rate never reaches its peak.")
        self.peak = float(peak)
        self.warmup_steps = int(warmup_steps)
        self.total_steps = int(total_steps)

    def __call__(self, step):
        step = ops.cast(step, "float32")
        # (total - step) / total rather than 1 - step / total: exact in float32 near the end of a 1M-step run
        decayed = self.peak * (self.total_steps - ops.minimum(step, self.total_steps)) / self.total_steps
        if self.warmup_steps == 0:
            return decayed
        warmup = self.peak * step / self.warmup_steps
        return ops.where(step < self.warmup_steps, warmup, decayed)

    def get_config(self):
        return {"peak": self.peak, "warmup_steps": self.warmup_steps, "total_steps": self.total_steps}


@keras.saving.register_keras_serializable(package="bertlib")
class AdamW(keras.optimizers.AdamW):
    """`keras.optimizers.AdamW` with the same update, its per-step scalars computed once a step.

    Keras evaluates the learning-rate schedule again for every variable's weight decay, and the bias corrections
    (two `pow`s of the step) again for every variable's update: in a TensorFlow graph that was two thirds of
    the tiny course model's ~1,700 ops a step (bench/RESULTS.md, issue 37). Here the learning rate and
    alpha = lr sqrt(1 - beta_2^t) / (1 - beta_1^t) are computed once per `apply` and shared; the moment and
    weight updates are Keras' own expressions, so the numbers are Keras' too. Saved optimizers keep the name
    `adam_w` (checkpoint keys unchanged). An embedding lookup's sparse gradient is made dense once per step.
    """

    _step_scalars = None  # per `apply` call: {"learning_rate": ..., ("alpha", dtype): ...}

    def apply(self, grads, trainable_variables=None):
        self._step_scalars = {}
        # A lookup's gradient (TensorFlow's IndexedSlices) made dense once, not once in the clipnorm and again in
        # the update (the same numbers).
        grads = [None if grad is None else ops.convert_to_tensor(grad) for grad in grads]
        try:
            return super().apply(grads, trainable_variables)
        finally:
            self._step_scalars = None

    def _shared(self, key, compute):
        if self._step_scalars is None:  # outside `apply`: nothing to share
            return compute()
        if key not in self._step_scalars:
            self._step_scalars[key] = compute()
        return self._step_scalars[key]

    def _get_current_learning_rate(self):
        return self._shared("learning_rate", super()._get_current_learning_rate)

    def _alpha(self, learning_rate, dtype):
        step = ops.cast(self.iterations + 1, dtype)
        beta_1_power = ops.power(ops.cast(self.beta_1, dtype), step)
        beta_2_power = ops.power(ops.cast(self.beta_2, dtype), step)
        return ops.cast(learning_rate, dtype) * ops.sqrt(1 - beta_2_power) / (1 - beta_1_power)

    def update_step(self, gradient, variable, learning_rate):
        if self.amsgrad:
            return super().update_step(gradient, variable, learning_rate)
        alpha = self._shared(("alpha", variable.dtype), lambda: self._alpha(learning_rate, variable.dtype))
        gradient = ops.cast(gradient, variable.dtype)
        m = self._momentums[self._get_variable_index(variable)]
        v = self._velocities[self._get_variable_index(variable)]
        self.assign_add(m, ops.multiply(ops.subtract(gradient, m), 1 - self.beta_1))
        self.assign_add(v, ops.multiply(ops.subtract(ops.square(gradient), v), 1 - self.beta_2))
        self.assign_sub(variable, ops.divide(ops.multiply(m, alpha), ops.add(ops.sqrt(v), self.epsilon)))


def warmup_linear_decay(peak, warmup_steps, total_steps):
    """The paper's schedule as a serializable `keras.optimizers.schedules.LearningRateSchedule`."""
    return WarmupLinearDecay(peak, warmup_steps, total_steps)


def make_optimizer(learning_rate=1e-4, warmup_steps=10_000, total_steps=1_000_000, weight_decay=0.01):
    """The optimizer of A.2: AdamW (beta1 0.9, beta2 0.999, epsilon 1e-6), decay 0.01, clip at norm 1.0.

    `learning_rate` is the peak of `warmup_linear_decay(learning_rate, warmup_steps, total_steps)` (or a
    ready `LearningRateSchedule`, then `warmup_steps` and `total_steps` are unused). Weight
    decay is decoupled (subtracted from the weights, not added to the gradient), as in the released code, and
    skips LayerNorm scales/offsets and biases (`NO_WEIGHT_DECAY`). One difference: Keras' Adam corrects the
    bias of its moment estimates, the released optimizer does not; it matters only in the first few
    hundred steps, where warmup keeps the rate small anyway.
    """
    if isinstance(weight_decay, bool) or not isinstance(weight_decay, (int, float)) or not weight_decay >= 0:
        raise ValueError(f"weight_decay must be a number >= 0 (the paper: 0.01), got {weight_decay!r}; a "
                         "negative decay would push the weights away from zero.")
    if not isinstance(learning_rate, keras.optimizers.schedules.LearningRateSchedule):
        learning_rate = warmup_linear_decay(learning_rate, warmup_steps, total_steps)
    # Keras' PyTorch AdamW already updates every variable in a few `torch._foreach` calls, which a subclass
    # would lose (Keras picks it by exact class), so PyTorch keeps Keras' own class.
    adamw = keras.optimizers.AdamW if keras.backend.backend() == "torch" else AdamW
    optimizer = adamw(
        learning_rate=learning_rate, weight_decay=weight_decay,
        beta_1=0.9, beta_2=0.999, epsilon=1e-6, global_clipnorm=1.0)
    optimizer.exclude_from_weight_decay(var_names=list(NO_WEIGHT_DECAY))
    return optimizer
