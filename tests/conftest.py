import os

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import pytest  # noqa: E402

from bertlib import resources  # noqa: E402


@pytest.fixture(scope="session")
def shared_dir():
    path = resources.shared_dir()
    if path is None:
        pytest.skip("../shared is absent (set BERTLIB_SHARED to its path): real GLUE/SQuAD data unavailable")
    return path


@pytest.fixture(scope="session")
def glue_dir(shared_dir):
    path = resources.glue_dir()
    if path is None:
        pytest.skip(f"{shared_dir}/data/glue is absent: real GLUE data unavailable")
    return path


@pytest.fixture(scope="session")
def squad_dir(shared_dir):
    path = resources.squad_dir()
    if path is None:
        pytest.skip(f"{shared_dir}/data/squad is absent: real SQuAD data unavailable")
    return path


@pytest.fixture(scope="session")
def minilm_dir():
    try:
        return resources.minilm_dir()
    except FileNotFoundError as error:
        pytest.skip(str(error))
