import os

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import pytest  # noqa: E402

from bertlib.io import downloads  # noqa: E402
from bertlib_course import paths  # noqa: E402
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
              "test_course_setup.py", "test_checkpoint.py", "test_data.py")


def pytest_configure(config):
    if hasattr(config.option, "loadscopereorder"):  # pytest-xdist: keep the order below, not its own
        config.option.loadscopereorder = False


def pytest_collection_modifyitems(config, items):
    rank = {name: position for position, name in enumerate(LONG_FILES)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable: a file's tests stay together


# The GLUE tasks the tests read (CI's ../shared/data holds these, QNLI with its dev set only).
GLUE_TEST_TASKS = ("cola", "sst2", "stsb", "wnli", "qnli")


def find_dataset(name):
    """The dataset's folder through `bertlib.io.downloads` (BERTLIB_DATA, ../shared/data, the cache). Tests download
    only from a mirror named by BERTLIB_DATA_MIRROR (a local server), never from the internet; without the data
    the test is skipped with the places looked."""
    try:
        return downloads.find(name, download=bool(os.environ.get("BERTLIB_DATA_MIRROR")))
    except downloads.DataNotFoundError as error:
        pytest.skip(f"real data unavailable: {str(error).splitlines()[0]} "
                    f"(set BERTLIB_DATA, or BERTLIB_DATA_MIRROR, see README 'Data')")


@pytest.fixture(scope="session")
def glue_dir(tmp_path_factory):
    """One GLUE folder holding every task the tests read (`glue_dir / "SST-2" / "dev.tsv"`)."""
    folders = {name: find_dataset(name) for name in GLUE_TEST_TASKS}
    parents = {folder.parent for folder in folders.values()}
    if len(parents) == 1:
        return parents.pop()
    joined = tmp_path_factory.mktemp("glue")  # tasks found in different places: one folder of links to them
    for folder in folders.values():
        (joined / folder.name).symlink_to(folder, target_is_directory=True)
    return joined


@pytest.fixture(scope="session")
def squad_dir():
    """The folder of `dev-v2.0-small.json`, the 14-question SQuAD v2.0 file kept for format tests (not a
    registry dataset: it is searched in the same places, BERTLIB_DATA and ../shared/data, without download)."""
    looked = []
    for label, root in downloads.places():
        if root is not None and (root / "squad" / "dev-v2.0-small.json").is_file():
            return root / "squad"
        looked.append(f"{label}: {root / 'squad' if root else 'not set'}")
    pytest.skip(f"real data unavailable: squad/dev-v2.0-small.json is in none of {looked}")


@pytest.fixture(scope="session")
def minilm_dir():
    try:
        return paths.minilm_dir()
    except FileNotFoundError as error:
        pytest.skip(str(error))
