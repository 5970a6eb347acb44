"""bertlib: a small, readable Keras 3 BERT, on TensorFlow, JAX and PyTorch.

Its folders are its layers, each importing only from those below it:

- `bertlib.io`: files written atomically, folder locks, the cache folder, datasets by name;
- `bertlib.model`: config -> layers (embeddings, attention, encoder block) -> backbone (encoder, masked-LM and
  next-sentence heads, pretrainer) -> checkpoint (Hugging Face weights) and presets (keras-hub's);
- `bertlib.text`: tokenizer, corpora, next-sentence pairs, masking, tf.data pipelines;
- `bertlib.train`: settings, placement (`distribute`), callbacks, the pretraining run;
- `bertlib.finetune`: tasks (GLUE, SQuAD, SWAG) with their task models (`BertClassifier`, ...), metrics, the
  fine-tuning loop.

`import bertlib` imports Keras and every module that defines a class a `.keras` file can hold (the layers, the
backbone and pretrainer, the task models, the learning-rate schedule), as `import keras_hub` does:
their `@keras.saving.register_keras_serializable(package="bertlib")` runs then, so any `.keras` file saved from
bertlib's classes (`bertlib pretrain`'s `backbone.keras` and `pretrainer.keras`, `bertlib finetune`'s
`model.keras`, your own model built on them) loads with `keras.saving.load_model` after `import bertlib`. Other
names (the tokenizer, `pretrain`, ...) are imported when first asked for.

Keras takes its backend once, when it is imported: `KERAS_BACKEND`, else `~/.keras/keras.json`, else TensorFlow.
When `KERAS_BACKEND` is not set and the backend Keras would take is not installed (e.g. `pip install bertlib jax`,
with no TensorFlow), `import bertlib` takes an installed one (JAX, else PyTorch, else TensorFlow), sets
`KERAS_BACKEND` to it and says so in one warning; when none is installed it raises an ImportError naming the pip
commands. Besides that, importing bertlib sets nothing: CPU threads, seeds and logging are calls a program makes.
"""

import importlib
import json
import os
import sys
import warnings

from bertlib._lazy import attach, is_installed

__version__ = "0.2.0"

_EXPORTS = {
    "BertConfig": "bertlib.model.config",
    "BertEmbedding": "bertlib.model.layers",
    "MultiHeadSelfAttention": "bertlib.model.layers",
    "TransformerEncoderBlock": "bertlib.model.layers",
    "BertBackbone": "bertlib.model.backbone",
    "BertPretrainer": "bertlib.model.backbone",
    "MaskedLMHead": "bertlib.model.backbone",
    "NextSentenceHead": "bertlib.model.backbone",
    "pretraining_batch": "bertlib.model.inputs",
    "load_hf_checkpoint": "bertlib.model.checkpoint",
    "save_hf_checkpoint": "bertlib.model.checkpoint",
    "WordPieceTokenizer": "bertlib.text.tokenizer",
    "train_wordpiece_vocab": "bertlib.text.vocabulary",
    "MaskedLMMasker": "bertlib.text.masking",
    "create_nsp_instances": "bertlib.text.nsp",
    "pretrain": "bertlib.train.pretraining",
    "BertClassifier": "bertlib.finetune.tasks.heads",
    "BertSpanExtractor": "bertlib.finetune.tasks.heads",
    "BertMultipleChoice": "bertlib.finetune.tasks.heads",
}

# The names above, and the subpackages (bertlib.model, bertlib.text, ...), imported when first asked for.
__getattr__, __dir__, __all__ = attach(__name__, {name: module.removeprefix("bertlib.")
                                                  for name, module in _EXPORTS.items()})

# Keras' backends (each its package's import name), in the order bertlib takes one when the configured backend is
# not installed.
BACKENDS = ("jax", "torch", "tensorflow")
INSTALL_A_BACKEND = "pip install jax (or: pip install torch, pip install tensorflow)"

# Every module that defines a class with @keras.saving.register_keras_serializable (the package's tests find
# them in the source and check this list).
SERIALIZABLE_MODULES = ("bertlib.model.layers", "bertlib.model.ops", "bertlib.model.backbone",
                        "bertlib.train.schedule", "bertlib.finetune.tasks.heads")


def _configured_backend():
    """(the backend Keras will take, where that choice comes from): `KERAS_BACKEND`, else the keras.json where
    Keras looks for it, else Keras' default, TensorFlow."""
    if os.environ.get("KERAS_BACKEND"):
        return os.environ["KERAS_BACKEND"], "KERAS_BACKEND"
    home = os.path.expanduser("~")
    config = os.path.join(os.environ.get("KERAS_HOME") or os.path.join(home if os.access(home, os.W_OK) else "/tmp",
                                                                       ".keras"), "keras.json")
    try:
        with open(config, encoding="utf-8") as file:
            return json.load(file)["backend"], config
    except (OSError, ValueError, KeyError, TypeError):
        return "tensorflow", "Keras' default"


def _choose_backend():
    """Called before Keras is imported. When `KERAS_BACKEND` is unset and the backend Keras would take (from
    keras.json, or its default TensorFlow) is not installed, set `KERAS_BACKEND` to an installed one and warn;
    when `KERAS_BACKEND` names a backend that is not installed, or none is, raise an ImportError that says what
    to install or set. Returns the backend Keras will take."""
    backend, source = _configured_backend()
    if "keras" in sys.modules or is_installed(backend):
        return backend
    installed = [name for name in BACKENDS if is_installed(name)]
    if source == "KERAS_BACKEND" or not installed:
        raise ImportError(f"bertlib needs a Keras backend: {backend!r} ({source}) is not installed; "
                          + (f"set KERAS_BACKEND to an installed one: {', '.join(installed)}." if installed
                             else f"install one: {INSTALL_A_BACKEND}."))
    os.environ["KERAS_BACKEND"] = installed[0]
    warnings.warn(f"bertlib: {backend} ({source}) is not installed; using the {installed[0]} backend. "
                  "Set KERAS_BACKEND to choose.", stacklevel=3)  # at the import that ran this
    return installed[0]


def _register_serializables():
    """Import every module that defines a bertlib class a `.keras` file can hold: their decorators register them."""
    for module in SERIALIZABLE_MODULES:
        importlib.import_module(module)


_choose_backend()
_register_serializables()
