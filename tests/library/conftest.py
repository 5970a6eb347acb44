"""The library's own fixtures: real datasets, found as bertlib finds them (`bertlib.io.downloads`)."""

import os

import pytest

from bertlib.io import downloads

# The GLUE tasks the tests read (CI's ../shared/data holds these, QNLI with its dev set only).
GLUE_TEST_TASKS = ("cola", "sst2", "stsb", "wnli", "qnli")


def find_dataset(name):
    """The dataset's folder through `bertlib.io.downloads` (BERTLIB_DATA, the cache). Tests download only from a
    mirror named by BERTLIB_DATA_MIRROR (a local server), never from the internet; without the data the test is
    skipped with the places looked."""
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
