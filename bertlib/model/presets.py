"""Presets in keras-hub's sense: `BertBackbone.from_preset` / `save_to_preset` and the tokenizer's.

A preset is a folder, laid out as keras-hub lays out its own (`keras_hub.src.utils.preset_utils`):

    config.json                       keras.saving.serialize_keras_object(backbone), less build/compile config
    model.weights.h5                  backbone.save_weights
    metadata.json                     keras_version, bertlib_version, parameter_count, date_saved
    tokenizer.json                    the tokenizer's options (module / class_name / config, as keras-hub's)
    assets/tokenizer/vocabulary.txt   the vocabulary, one piece per line

`from_preset` also takes the names of `BertConfig.preset` (random weights). Nothing is downloaded: bertlib
has no preset hub. A Hugging Face BERT folder is named as such and sent to `load_hf_checkpoint`, not read:
`bertlib.model.checkpoint` builds on `bertlib.model.backbone` (it makes the backbone and maps its weights), so a backbone
method that called it would close an import cycle, which bertlib's tests forbid (lazy imports
included). The tokenizer's `from_preset` does read a Hugging Face folder (vocab.txt, tokenizer_config.json).

A preset folder is written whole, to a temporary sibling folder that is then renamed, so a reader sees the old
folder or the new one, never half of one; a folder that is not empty is replaced only when asked to.
"""

import datetime
import json
import os
import shutil
import tempfile
from pathlib import Path

from bertlib.model.config import BertConfig

CONFIG_FILE = "config.json"
WEIGHTS_FILE = "model.weights.h5"
METADATA_FILE = "metadata.json"
TOKENIZER_FILE = "tokenizer.json"
VOCABULARY_FILE = "assets/tokenizer/vocabulary.txt"
EXPECTED = f"a preset folder written by save_to_preset ({CONFIG_FILE}, {WEIGHTS_FILE})"


# Writing ----------------------------------------------------------------------------------------------------

def write_preset(preset_dir, writers, overwrite=False):
    """Write the files of `writers` ({relative path: function(path) writing it}) as the folder `preset_dir`.

    They are written into a temporary sibling folder, which then takes `preset_dir`'s place: an existing
    folder is moved aside first and removed only once the new one is in place. Refuses a file, and a folder
    that is not empty unless `overwrite`.
    """
    target = Path(preset_dir)
    if target.exists() and not target.is_dir():
        raise FileExistsError(f"{target} is a file; save_to_preset writes a preset folder there.")
    held = sorted(path.name for path in target.iterdir()) if target.is_dir() else []
    if held and not overwrite:
        raise FileExistsError(f"{target} is not empty (it holds {held[:5]}); save_to_preset writes a whole "
                              "preset folder and overwrites nothing: choose a new or empty folder, or pass "
                              "overwrite=True to replace this one.")
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{target.name}.writing-"))
    try:
        for name, write in writers.items():
            path = staging / name
            path.parent.mkdir(parents=True, exist_ok=True)
            write(path)
            with open(path, "rb+") as file:  # on disk before the rename makes it visible
                os.fsync(file.fileno())
        _move_into_place(staging, target)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return target


def _move_into_place(staging, target):
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(staging, 0o777 & ~umask)  # mkdtemp makes the folder private; give it the usual mode
    if not target.exists():
        os.rename(staging, target)
        return
    old = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{target.name}.old-"))
    os.rename(target, old / target.name)
    try:
        os.rename(staging, target)
    except BaseException:
        os.rename(old / target.name, target)  # the old preset comes back rather than no preset at all
        raise
    shutil.rmtree(old)


def _json_writer(values):
    return lambda path: path.write_text(json.dumps(values, indent=4) + "\n", encoding="utf-8")


def _pop_everywhere(config, keys):
    """`config` without `keys` at any depth (keras-hub leaves out build_config and compile_config)."""
    return {key: _pop_everywhere(value, keys) if isinstance(value, dict) else value
            for key, value in config.items() if key not in keys}


def tokenizer_writers(tokenizer):
    config = {"module": "bertlib.text.tokenizer", "class_name": type(tokenizer).__name__,
              "config": {"lowercase": tokenizer.lowercase, "strip_accents": tokenizer.strip_accents,
                         "never_split": list(tokenizer.never_split), "split_cjk": tokenizer.split_cjk},
              "registered_name": None}  # a plain Python class: nothing registered with Keras
    vocabulary = "".join(token + "\n" for token in tokenizer.vocabulary)
    return {TOKENIZER_FILE: _json_writer(config),
            VOCABULARY_FILE: lambda path: path.write_text(vocabulary, encoding="utf-8", newline="\n")}


def save_backbone(backbone, preset_dir, tokenizer=None, overwrite=False):
    """`BertBackbone.save_to_preset`: config.json, model.weights.h5, metadata.json (and the tokenizer's)."""
    import keras

    import bertlib

    if tokenizer is not None and tokenizer.vocabulary_size != backbone.config.vocabulary_size:
        raise ValueError(f"The tokenizer has {tokenizer.vocabulary_size} pieces but the backbone's embedding "
                         f"has {backbone.config.vocabulary_size} rows; a preset pairs a model with its own "
                         "vocabulary. Nothing was written.")
    config = keras.saving.serialize_keras_object(backbone)
    config = _pop_everywhere(config, ("build_config", "compile_config"))
    metadata = {"keras_version": keras.version(), "bertlib_version": bertlib.__version__,
                "parameter_count": backbone.count_params(),
                "date_saved": datetime.datetime.now().strftime("%Y-%m-%d@%H:%M:%S")}
    writers = {CONFIG_FILE: _json_writer(config), WEIGHTS_FILE: lambda path: backbone.save_weights(path),
               METADATA_FILE: _json_writer(metadata)}
    if tokenizer is not None:
        writers.update(tokenizer_writers(tokenizer))
    return write_preset(preset_dir, writers, overwrite=overwrite)


# Reading ----------------------------------------------------------------------------------------------------

def _read_json(path):
    try:
        return json.loads(path.read_text(encoding="utf-8-sig"))
    except json.JSONDecodeError as error:
        raise ValueError(f"{path} is not valid JSON: {error}") from error


def _folder(preset, owner, expected):
    folder = Path(preset)
    if not folder.is_dir():
        raise FileNotFoundError(f"{owner}.from_preset: {str(preset)!r} is not a folder{expected}.")
    return folder


def load_backbone(cls, preset, load_weights=True, dtype=None):
    """`BertBackbone.from_preset` (see its docstring)."""
    if isinstance(preset, str) and preset in BertConfig.preset_names():
        return cls(BertConfig.preset(preset), dtype=dtype)
    folder = _folder(preset, cls.__name__,
                     f" nor a built-in preset {BertConfig.preset_names()}; expected {EXPECTED}")
    config_file = folder / CONFIG_FILE
    if not config_file.is_file():
        held = sorted(path.name for path in folder.iterdir())
        raise FileNotFoundError(f"{config_file} not found ({folder} holds {held[:5]}); expected {EXPECTED}.")
    config = _read_json(config_file)
    if isinstance(config, dict) and "model_type" in config:
        raise ValueError(f"{folder} is a Hugging Face folder (model_type={config['model_type']!r} in "
                         f"{CONFIG_FILE}), not a preset: read it with load_hf_checkpoint({str(folder)!r}), "
                         "and call save_to_preset on the result to make a preset of it.")
    if not isinstance(config, dict) or "class_name" not in config:
        raise ValueError(f"{config_file} is not a Keras config (module, class_name, config); expected "
                         f"{EXPECTED}.")
    return _load_keras_preset(cls, folder, config, load_weights, dtype)


def _load_keras_preset(cls, folder, config, load_weights, dtype):
    import keras

    name = config.get("registered_name") or config["class_name"]
    found = keras.saving.get_registered_object(name)
    if not (isinstance(found, type) and issubclass(found, cls)):
        hint = ""
        if str(name).startswith("keras_hub>"):
            hint = (" It is a keras-hub preset: its model.weights.h5 is keyed by keras-hub's own layer tree "
                    "(reversible_embedding, transformer_encoder/_self_attention_layer/query_dense with "
                    "(hidden, heads, head_dim) kernels), not bertlib's (bert_embedding, one fused "
                    "query/key/value kernel), and bertlib maps its weights to Hugging Face names only. "
                    "Load it with keras_hub.")
        raise ValueError(f"{folder / CONFIG_FILE} describes {name!r}, not a "
                         f"{keras.saving.get_registered_name(cls)!r} preset.{hint}")
    values = dict(config.get("config", {}))
    if dtype is not None:
        values["dtype"] = dtype
    try:
        backbone = found.from_config(values)
    except (TypeError, ValueError) as error:
        raise ValueError(f"{folder / CONFIG_FILE}: {error}") from error
    if load_weights:
        weights_file = folder / WEIGHTS_FILE
        if not weights_file.is_file():
            raise FileNotFoundError(f"{weights_file} not found: {folder} holds a config but no weights "
                                    "(pass load_weights=False for random weights).")
        backbone.load_weights(weights_file)
    return backbone


def load_tokenizer(cls, preset):
    """`WordPieceTokenizer.from_preset` (see its docstring)."""
    folder = _folder(preset, cls.__name__, f"; expected one holding {TOKENIZER_FILE} and {VOCABULARY_FILE} "
                     "(written by save_to_preset) or a Hugging Face vocab.txt")
    config_file = folder / TOKENIZER_FILE
    config = _read_json(config_file) if config_file.is_file() else {}
    if "class_name" in config:  # else a Hugging Face tokenizer.json (the `tokenizers` library's), if any
        if (config.get("module"), config["class_name"]) != ("bertlib.text.tokenizer", cls.__name__):
            name = config.get("registered_name") or config["class_name"]
            raise ValueError(f"{config_file} describes {name!r}, not a bertlib {cls.__name__}; its "
                             f"vocabulary is {folder / VOCABULARY_FILE}, which from_vocab_file reads "
                             "(with that tokenizer's options).")
        vocabulary_file = folder / VOCABULARY_FILE
        if not vocabulary_file.is_file():
            raise FileNotFoundError(f"{vocabulary_file} not found: {config_file} needs its vocabulary.")
        try:
            return cls.from_vocab_file(vocabulary_file, **config.get("config", {}))
        except TypeError as error:
            raise ValueError(f"{config_file} holds options {cls.__name__} does not take: {error}") from error
    if (folder / "vocab.txt").is_file():
        return cls.from_vocab_file(folder / "vocab.txt", **_hf_tokenizer_options(folder))
    raise FileNotFoundError(f"{folder} holds no tokenizer: expected {TOKENIZER_FILE} and {VOCABULARY_FILE} "
                            "(written by save_to_preset) or a Hugging Face vocab.txt.")


def _hf_tokenizer_options(folder):
    """The options of a Hugging Face `tokenizer_config.json` (BertTokenizer's defaults when it is absent)."""
    config_file = folder / "tokenizer_config.json"
    values = _read_json(config_file) if config_file.is_file() else {}
    return {"lowercase": values.get("do_lower_case", True), "strip_accents": values.get("strip_accents"),
            "split_cjk": values.get("tokenize_chinese_chars", True),
            "never_split": values.get("never_split") or ()}
