"""The layer, backbone and head tests of test_model.py, run again on the JAX backend."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.slow
def test_model_tests_pass_on_jax_backend():
    pytest.importorskip("jax")
    env = {**os.environ, "KERAS_BACKEND": "jax"}
    result = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                             "tests/test_model.py", "tests/test_config.py"],
                            cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    assert " passed" in result.stdout and "skipped" not in result.stdout.splitlines()[-1]
