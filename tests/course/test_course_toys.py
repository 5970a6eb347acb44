"""`bertlib_course.toys`: the ring language is the walk the chapters describe, and a restarted model is a fresh one."""

import json
import os
import random
import subprocess
import sys
import textwrap

import keras
import numpy as np

from bertlib import BertBackbone, BertConfig, BertPretrainer
from bertlib.train import schedule
from bertlib_course import toys
from tools.repo_paths import REPO_ROOT


def test_ring_sentences_are_walks_of_one_to_three_steps():
    tokenizer = toys.ring_tokenizer()
    sentences = toys.ring_sentences(500, seed=3)
    token_ids = sentences["token_ids"]
    assert token_ids.shape == (500, 16) and token_ids.dtype == np.int32
    assert (token_ids[:, 0] == tokenizer.cls_id).all() and (token_ids[:, -1] == tokenizer.sep_id).all()
    words = token_ids[:, 1:-1] - tokenizer.token_to_id("w00")
    assert words.min() >= 0 and words.max() < 40
    assert set(np.unique(np.diff(words, axis=1) % 40)) == {1, 2, 3}
    assert (sentences["padding_mask"] == 1).all() and (sentences["segment_ids"] == 0).all()
    assert np.array_equal(toys.ring_sentences(500, seed=3)["token_ids"], token_ids)  # seeded


def test_initial_weights_are_a_fresh_model_of_that_seed_and_leave_the_random_state_alone():
    config = BertConfig(num_layers=1, num_heads=2, hidden_dim=8, intermediate_dim=16, vocabulary_size=45,
                        max_sequence_length=16)
    random.seed(123)
    before = random.random()
    random.seed(123)
    weights = toys.initial_weights(config, seed=1)
    assert random.random() == before
    keras.utils.set_random_seed(1)
    fresh = BertPretrainer(BertBackbone(config), next_sentence=False).get_weights()
    assert all(np.array_equal(a, b) for a, b in zip(weights, fresh))
    assert not np.array_equal(weights[0], toys.initial_weights(config, seed=2)[0])


def test_restart_puts_the_weights_back_and_zeroes_the_optimizer():
    config = BertConfig(num_layers=1, num_heads=2, hidden_dim=8, intermediate_dim=16, vocabulary_size=45,
                        max_sequence_length=16, dropout=0.0)
    model = BertPretrainer(BertBackbone(config), next_sentence=False)
    model.compile(optimizer=schedule.make_optimizer(1e-2, 1, 10))
    start = model.get_weights()
    model.optimizer.build(model.trainable_variables)  # the moments and the step counter, as after a fit
    for variable in model.optimizer.variables:
        variable.assign(np.ones(variable.shape, variable.dtype))
    model.set_weights([w + 1 for w in start])
    toys.restart(model, start)
    assert all(np.array_equal(a, b) for a, b in zip(model.get_weights(), start))
    assert all(not np.any(keras.ops.convert_to_numpy(variable)) for variable in model.optimizer.variables)


# The dropout-free tiny pretrainer and ring-language run the compile tests train (also in a PyTorch process, below).
RING_CONFIG = BertConfig(num_layers=2, num_heads=2, hidden_dim=16, intermediate_dim=32, vocabulary_size=45,
                         max_sequence_length=16, dropout=0.0)


def ring_pretrainer(**compile_options):
    """A fresh `BertPretrainer` of `RING_CONFIG`, compiled for a 20-step run with `compile_options`."""
    model = BertPretrainer(BertBackbone(RING_CONFIG), next_sentence=False)
    model.compile(optimizer=schedule.make_optimizer(2e-3, 2, 20), **compile_options)
    return model


def train_ring_steps(model, start):
    """`model` from the weights `start` through 20 steps (2 epochs of 10) on the same ring-language batches; the
    weights it ends at."""
    from bertlib.model import pretraining_batch
    from bertlib.text import data
    from bertlib.text.masking import MaskedLMMasker

    masker = MaskedLMMasker.from_tokenizer(toys.ring_tokenizer(), max_predictions=2, seed=0)
    toys.restart(model, start)
    batches = data.pretraining_dataset(toys.ring_sentences(640, seed=0), 32, masker, seed=0).map(
        lambda features: pretraining_batch(features, next_sentence=False))
    model.fit(batches, steps_per_epoch=10, epochs=2, verbose=0)
    return model.get_weights()


def test_fast_compile_trains_the_same_steps_as_kerass_defaults():
    """The options change how the step runs, not what it computes: 20 steps of a dropout-free tiny pretrainer from
    the same weights on the same batches end at the same weights (to float32 rounding), with either compile."""
    options = toys.fast_compile(steps_per_call=5)
    if keras.backend.backend() == "tensorflow":
        assert options == {"jit_compile": True, "steps_per_execution": 5}
        assert toys.fast_compile(5, xla=False) == {"steps_per_execution": 5}
    else:
        assert options == toys.fast_compile(5, xla=False) == {}  # JAX compiles every step; PyTorch: one a call
    start = toys.initial_weights(RING_CONFIG, seed=0)
    trained = [train_ring_steps(ring_pretrainer(**compile_options), start) for compile_options in ({}, options)]
    assert not all(np.array_equal(a, b) for a, b in zip(trained[0], start))  # it trained
    for default, fast in zip(*trained):
        np.testing.assert_allclose(fast, default, rtol=1e-4, atol=1e-5)


def test_one_cpu_thread_on_pytorch_trains_the_same_steps_and_gives_the_threads_back():
    """On PyTorch the block runs on one thread and the process gets its threads back after it, also when the block
    raises; 20 steps of a dropout-free tiny pretrainer inside it end where the same steps on both threads end. On
    TensorFlow (this process) the block runs as it is."""
    with toys.one_cpu_thread():
        pass  # a no-op here: TensorFlow's pools are fixed when it starts
    script = """
        import json
        import bertlib_course as course
        course.setup(seed=0)
        import numpy as np, torch
        from bertlib_course import toys
        from tests.course.test_course_toys import RING_CONFIG, ring_pretrainer, train_ring_steps

        start = toys.initial_weights(RING_CONFIG, seed=0)
        model = ring_pretrainer()
        threads = {"before": torch.get_num_threads()}
        on_both = train_ring_steps(model, start)
        with toys.one_cpu_thread():
            threads["inside"] = torch.get_num_threads()
            on_one = train_ring_steps(model, start)
        threads["after"] = torch.get_num_threads()
        try:
            with toys.one_cpu_thread():
                raise KeyboardInterrupt  # a learner stops the cell
        except KeyboardInterrupt:
            threads["after an interrupt"] = torch.get_num_threads()
        gap = max(float(np.abs(a - b).max()) for a, b in zip(on_both, on_one))
        moved = max(float(np.abs(a - b).max()) for a, b in zip(on_both, start))
        print(json.dumps({"threads": threads, "gap": gap, "moved": moved}))
    """
    environment = {key: value for key, value in os.environ.items()
                   if key not in ("TF_NUM_INTRAOP_THREADS", "TF_NUM_INTEROP_THREADS")}
    # two threads before the block, whatever this machine has (and whatever share `make test` gives a worker)
    environment.update(KERAS_BACKEND="torch", PYTHONPATH=str(REPO_ROOT), OMP_NUM_THREADS="2")
    completed = subprocess.run([sys.executable, "-c", textwrap.dedent(script)], capture_output=True, text=True,
                               env=environment, cwd=REPO_ROOT, timeout=300)
    assert completed.returncode == 0, completed.stderr[-3000:]
    result = json.loads(completed.stdout.splitlines()[-1])
    assert result["threads"] == {"before": 2, "inside": 1, "after": 2, "after an interrupt": 2}
    assert result["moved"] > 1e-3  # it trained
    assert result["gap"] < 1e-5, result  # the same steps: only float32 sums may round differently
