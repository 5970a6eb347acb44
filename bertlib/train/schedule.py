"""The optimizer and learning-rate schedule of appendix A.2.

Adam with lr 1e-4, beta1 0.9, beta2 0.999, L2 weight decay 0.01 (decoupled, as the released code's
`AdamWeightDecayOptimizer`, and not on LayerNorm parameters or biases), warmup over the first 10,000 steps then
linear decay, gradient clipping at global norm 1.0. `bertlib.train.pretraining` and `bertlib.finetune` train with
`make_optimizer`: Keras' own `AdamW`, told which variables to leave undecayed.

Example:

```python
schedule = warmup_linear_decay(1e-4, warmup_steps=10_000, total_steps=1_000_000)
float(schedule(5_000)), float(schedule(10_000))  # 5e-05, then 9.9e-05: the decay line starts at step 0
pretrainer.compile(optimizer=make_optimizer(1e-4, warmup_steps=10_000, total_steps=1_000_000))
```
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

    ```python
    schedule = WarmupLinearDecay(1e-4, 10_000, 1_000_000)
    float(schedule(5_000))  # 5e-05
    ```
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
    optimizer = keras.optimizers.AdamW(
        learning_rate=learning_rate, weight_decay=weight_decay,
        beta_1=0.9, beta_2=0.999, epsilon=1e-6, global_clipnorm=1.0)
    optimizer.exclude_from_weight_decay(var_names=list(NO_WEIGHT_DECAY))
    return optimizer
