"""bertlib_course.compute: the FLOP counts of chapters 05, 05x and 08 against independent counts (the model's own
weight matrices, XLA's cost analysis of attention) and the paper's arithmetic."""

import math

import numpy as np
import pytest

from bertlib import BertBackbone, BertConfig
from bertlib_course import compute


def test_linear_flops_are_two_per_weight_of_every_encoder_matrix():
    # Independent of the formula: the kernels the backbone really holds (fused QKV, output, FFN in and out).
    config = BertConfig.preset("tiny", vocabulary_size=100, max_sequence_length=16)
    backbone = BertBackbone(config)
    kernels = sum(int(np.prod(weight.shape)) for weight in backbone.weights
                  if weight.path.startswith("encoder_block") and weight.path.endswith("kernel"))
    linear, _ = compute.forward_flops_per_sequence(config, 16)
    assert linear == 2 * 16 * kernels


def test_attention_flops_agree_with_xla_cost_analysis():
    jax = pytest.importorskip("jax")
    length, hidden = 48, 32

    def attention(query, key, value):  # QKᵀ then AV, the two products the quadratic term counts
        return jax.numpy.matmul(jax.numpy.matmul(query, key.T), value)

    ones = jax.numpy.ones((length, hidden))
    analysis = jax.jit(attention).lower(ones, ones, ones).compile().cost_analysis()
    analysis = analysis[0] if isinstance(analysis, (list, tuple)) else analysis
    config = BertConfig(num_layers=1, num_heads=4, hidden_dim=hidden, intermediate_dim=64, vocabulary_size=10)
    _, quadratic = compute.forward_flops_per_sequence(config, length)
    assert quadratic == analysis["flops"]


def test_the_papers_arithmetic():
    base, large = BertConfig.preset("base"), BertConfig.preset("large")
    # 6N x 1.28e11 tokens for BERT_BASE is about 1 petaflop/s-day (the guide's "985" is in teraflop/s-days).
    assert math.isclose(6 * 110e6 * 1.28e11 / compute.PETAFLOP_S_DAY, 0.978, abs_tol=1e-3)
    assert compute.training_flops_per_token(base, 512, 110e6) == 6 * 110e6 + 12 * 12 * 512 * 768
    every_step_at_512 = compute.run_flops(base, 110e6, [(512, 1.0)])
    assert math.isclose(every_step_at_512, 256 * 512 * 1e6 * compute.training_flops_per_token(base, 512, 110e6))
    curriculum = compute.run_flops(base, 110e6, [(128, 0.9), (512, 0.1)])
    assert 3 < every_step_at_512 / curriculum < 3.3   # chapter 05: "about 3 times cheaper"
    linear, quadratic = compute.forward_flops_per_sequence(large, 512)
    assert linear / compute.forward_flops_per_sequence(large, 128)[0] == 4
    assert quadratic / compute.forward_flops_per_sequence(large, 128)[1] == 16


def test_curriculum_cost_lies_between_the_token_and_the_square_ratios():
    assert compute.curriculum_cost([(512, 1.0)], 768) == 1.0
    cost = compute.curriculum_cost([(128, 0.9), (512, 0.1)], 768)
    assert math.isclose(cost, 0.308, abs_tol=1e-3)  # chapter 08's count
    tokens_only = (0.9 * 128 + 0.1 * 512) / 512      # the limit of a huge hidden size
    squares_only = (0.9 * 128**2 + 0.1 * 512**2) / 512**2
    assert squares_only < cost < tokens_only
    assert math.isclose(compute.curriculum_cost([(128, 0.9), (512, 0.1)], 10**6), tokens_only, rel_tol=1e-3)


def test_last_block_saving():
    base, large = BertConfig.preset("base"), BertConfig.preset("large")
    # Reading every row saves only what is not there to save: nothing.
    assert math.isclose(compute.last_block_saving(base, 128, 127), 0.0, abs_tol=1e-12)
    # With no rows read, the last block keeps only keys and values: 1 - (2 H^2 + 0) / block of its share.
    saving = compute.last_block_saving(base, 128, 20)
    assert 0.05 < saving < 1 / 12
    assert compute.last_block_saving(large, 128, 20) < saving  # deeper model: a smaller share


def test_best_cpu_times_warms_up_and_keeps_the_least():
    calls = []
    seconds = compute.best_cpu_times({"a": lambda: calls.append("a"), "b": lambda: calls.append("b")}, repeats=3)
    assert calls == ["a", "b"] + ["a", "b"] * 3   # one warm-up each, then turns
    assert set(seconds) == {"a", "b"} and all(value >= 0 for value in seconds.values())
