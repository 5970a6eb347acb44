"""Where our own folders are: the repository checkout and CI's `shared/` folder beside it. For tests and tools only.

Nothing a learner runs imports this module: the course runtime (`bertlib_course`, shipped as a wheel) knows no
repository, and finds data the generic way, through `$BERTLIB_DATA` (`bertlib.io.downloads`). CI's copy of the
datasets reaches it there: the Makefile and `tests/conftest.py` put `shared_data_dir()` into `$BERTLIB_DATA`.

Tests import it as `tools.repo_paths` (they already import tools); a tool run as a script puts the checkout on
`sys.path` first, as `tools/serve_mirror.py` does.
"""

import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]  # the checkout holding notebooks/, solutions/, tests/, tools/


def shared_path():
    """Where CI's `shared/` folder is expected: `$BERTLIB_SHARED`, else beside the repository (the Makefile's
    `BERTLIB_SHARED ?= ../shared`)."""
    return Path(os.environ.get("BERTLIB_SHARED", REPO_ROOT.parent / "shared"))


def shared_dir():
    """The `shared/` folder beside the repository (or `$BERTLIB_SHARED`), or None when it is absent."""
    path = shared_path()
    return path if path.is_dir() else None


def shared_data_dir():
    """`shared/data`, CI's copy of the datasets (laid out as `bertlib.io.downloads` expects), or None."""
    shared = shared_dir()
    return shared / "data" if shared and (shared / "data").is_dir() else None
