"""Keras 3's promise, checked: the model, layer and gradient tests pass on JAX and PyTorch too, and one saved model
gives the same numbers on TensorFlow, JAX and PyTorch (chapter 00 on 8 simulated JAX devices: tests/course).

Each backend runs in its own process: Keras picks its backend once, at import.
"""

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from tools.repo_paths import REPO_ROOT as ROOT

BACKENDS = ("tensorflow", "jax", "torch")
# The model, layer, config and gradient tests (tests/library/test_backends.py runs them on every backend but the
# default, which runs them anyway).
PORTABLE_TESTS = ("tests/library/test_model.py", "tests/library/test_config.py", "tests/library/test_ops.py")


def _environment(backend):
    # OpenMP threads that wait passively, as course.setup() has them: spinning ones make PyTorch crawl on a busy machine
    environment = {**os.environ, "KERAS_BACKEND": backend, "TF_CPP_MIN_LOG_LEVEL": "3", "PYTHONPATH": str(ROOT),
                   "OMP_WAIT_POLICY": "PASSIVE"}
    environment.pop("XLA_FLAGS", None)
    return environment


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["jax", "torch"])
def test_model_layer_and_gradient_tests_pass_on(backend):
    pytest.importorskip(backend)
    result = subprocess.run([sys.executable, "-m", "pytest", "-q", "-n", "0", "-p", "no:cacheprovider",
                             *PORTABLE_TESTS], cwd=ROOT, env=_environment(backend), capture_output=True, text=True,
                            timeout=1200)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    assert " passed" in result.stdout and "skipped" not in result.stdout.splitlines()[-1]


SAVE = """
import keras, numpy as np
from bertlib import BertBackbone, BertConfig, BertPretrainer
keras.utils.set_random_seed(0)
config = BertConfig(num_layers=2, num_heads=2, hidden_dim=16, intermediate_dim=32, vocabulary_size=50,
                    max_sequence_length=16, dropout=0.0)
pretrainer = BertPretrainer(BertBackbone(config))
pretrainer.compile(optimizer=keras.optimizers.SGD(0.5))
pretrainer(INPUTS)
pretrainer.save(PATH)
"""

# Loads the file, prints its outputs on fixed inputs, takes one SGD step and prints the weights after it.
LOAD_AND_STEP = """
import json, keras, numpy as np
import bertlib  # noqa: F401  (registers every class a .keras file can hold)
pretrainer = keras.saving.load_model(PATH)
outputs = {name: keras.ops.convert_to_numpy(value).tolist() for name, value in pretrainer(INPUTS).items()}
targets = {"mlm_logits": np.array([[7, 8], [9, 10]], "int32"), "nsp_logits": np.array([0, 1], "int32")}
def weights():
    return {variable.path: keras.ops.convert_to_numpy(variable).tolist() for variable in pretrainer.trainable_variables}
before = weights()
pretrainer.train_on_batch(INPUTS, targets)
print(json.dumps({"backend": keras.backend.backend(), "outputs": outputs, "before": before, "weights": weights()}))
"""

INPUTS = """
import numpy as np
INPUTS = {"token_ids": np.array([[2, 11, 12, 13, 3, 21, 22, 3], [2, 30, 31, 3, 40, 41, 3, 0]], "int32"),
          "segment_ids": np.array([[0, 0, 0, 0, 0, 1, 1, 1], [0, 0, 0, 0, 1, 1, 1, 0]], "int32"),
          "padding_mask": np.array([[1] * 8, [1] * 7 + [0]], "int32"),
          "mask_positions": np.array([[1, 5], [2, 4]], "int32")}
"""


def _run(backend, script, path):
    code = textwrap.dedent(INPUTS) + f"PATH = {str(path)!r}\n" + textwrap.dedent(script)
    completed = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=_environment(backend),
                               capture_output=True, text=True, timeout=600)
    assert completed.returncode == 0, f"{backend}: {completed.stderr[-3000:]}"
    return completed.stdout


@pytest.mark.slow
def test_one_saved_model_gives_the_same_numbers_on_every_backend(tmp_path):
    """A pretrainer saved on TensorFlow: the same MLM and NSP logits on all three backends, and the same weights
    after one SGD step on the same batch (masked LM + NSP loss, no dropout)."""
    for backend in ("jax", "torch"):
        pytest.importorskip(backend)
    path = tmp_path / "pretrainer.keras"
    _run("tensorflow", SAVE, path)
    results = {backend: json.loads(_run(backend, LOAD_AND_STEP, path).splitlines()[-1]) for backend in BACKENDS}
    reference = results["tensorflow"]
    assert reference["weights"] and np.abs(np.asarray(reference["outputs"]["mlm_logits"])).max() > 0
    for backend in ("jax", "torch"):
        assert results[backend]["backend"] == backend
        for name, value in reference["outputs"].items():
            np.testing.assert_allclose(results[backend]["outputs"][name], value, atol=1e-5, err_msg=f"{backend} {name}")
        assert results[backend]["weights"].keys() == reference["weights"].keys()
        for name, value in reference["weights"].items():
            np.testing.assert_allclose(results[backend]["weights"][name], value, atol=1e-5, err_msg=f"{backend} {name}")
    # the step moved the weights, so backends that all skipped it would not pass by agreeing
    assert any(not np.allclose(reference["before"][name], value) for name, value in reference["weights"].items())
