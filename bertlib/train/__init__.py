"""Pretraining (A.2): `settings` (settings objects that make their own command line), `distribute` (where a
run is placed: TPU, GPUs, CPU; one code path per backend), `schedule` (the paper's optimizer and learning-rate
schedule), `precision` (the dtype policy by device), `phases` (the corpus and the data of each sequence-length
phase), `callbacks` (step count, NaN stop, progress, checkpoints), `pretraining` (the run's settings, the
resumable run and `bertlib pretrain`) and `gradients` (a loss's gradient on any backend)."""

from bertlib._lazy import attach

__getattr__, __dir__, __all__ = attach(__name__, {
    "PretrainSettings": "pretraining",
    "pretrain": "pretraining",
    "make_optimizer": "schedule",
    "warmup_linear_decay": "schedule",
    "WarmupLinearDecay": "schedule",
    "distributed": "distribute",
    "value_and_gradients": "gradients",
})
