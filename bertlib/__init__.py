"""bertlib: a small, readable Keras 3 BERT, grown chapter by chapter in the course notebooks.

Read it in the paper's order: `config` -> `layers` (embeddings, attention, encoder block) -> `model`
(backbone, masked-LM and next-sentence heads) -> `checkpoint`; then the data side (`tokenizer`, `corpora`,
`masking`, `nsp`, `data`) and the training side (`training`, `distribute`, `finetune`).

Names are imported lazily, so `import bertlib.tokenizer` or the `bertlib grade` command do not load Keras.

A `.keras` file saved from bertlib's layers and models loads after `import bertlib` alone: Keras finds custom classes
in its registry of serializable objects, so bertlib registers its classes when Keras is imported (at once when it
already is, else right after Keras' own import, by a one-shot import hook; when that import is bertlib.layers'
own, at the end of bertlib.layers, since bertlib.model needs its layers). That registration is the only thing
importing bertlib does beyond defining names; CPU threads, seeds and logging are calls a program makes.
"""

import importlib
import importlib.abc
import sys
import warnings

__version__ = "0.2.0"

_EXPORTS = {
    "BertConfig": "bertlib.config",
    "BertEmbedding": "bertlib.layers",
    "MultiHeadSelfAttention": "bertlib.layers",
    "TransformerEncoderBlock": "bertlib.layers",
    "BertBackbone": "bertlib.model",
    "BertPretrainer": "bertlib.model",
    "MaskedLMHead": "bertlib.model",
    "NextSentenceHead": "bertlib.model",
    "pretraining_batch": "bertlib.model",
    "load_hf_checkpoint": "bertlib.checkpoint",
    "save_hf_checkpoint": "bertlib.checkpoint",
    "WordPieceTokenizer": "bertlib.tokenizer",
    "train_wordpiece_vocab": "bertlib.tokenizer",
    "MaskedLMMasker": "bertlib.masking",
    "create_nsp_instances": "bertlib.nsp",
    "pretrain": "bertlib.training",
    "finetune": "bertlib.finetune",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name):
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    try:  # submodules: bertlib.course, bertlib.resources, ...
        return importlib.import_module(f"bertlib.{name}")
    except ModuleNotFoundError as error:
        if error.name != f"bertlib.{name}":
            raise
        raise AttributeError(f"module 'bertlib' has no attribute {name!r}") from None


def __dir__():
    return sorted([*globals(), *_EXPORTS])


def register_keras_serializables():
    """Register every bertlib layer and model with Keras' serialization (imports Keras and `bertlib.model`)."""
    importlib.import_module("bertlib.model")  # and bertlib.layers: their @register_keras_serializable run


# The modules `register_keras_serializables` imports. When one of them is itself importing Keras (the first
# bertlib import of the process was `import bertlib.layers`), it is half-run and bertlib.model could not import
# its layers yet: the hook leaves it, and bertlib.layers registers everything at its own end.
_SERIALIZABLE_MODULES = ("bertlib.layers", "bertlib.model")


class _RegisterAfterKerasImport(importlib.abc.MetaPathFinder):
    """Finds nothing itself: when `keras` is first imported, it lets Keras load as usual and then registers
    bertlib's classes, and removes itself from `sys.meta_path`."""

    def find_spec(self, name, path=None, target=None):
        if name != "keras":
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None:
                break
        else:
            return None
        if spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return None
        sys.meta_path.remove(self)  # one shot; the import machinery stops looking once a spec is returned
        spec.loader = _ThenRegister(spec.loader)
        return spec


class _ThenRegister(importlib.abc.Loader):
    def __init__(self, loader):
        self.loader = loader

    def create_module(self, spec):
        return self.loader.create_module(spec)

    def exec_module(self, module):
        module.__spec__.loader = module.__loader__ = self.loader  # leave no trace on the keras module
        self.loader.exec_module(module)
        if any(name in sys.modules for name in _SERIALIZABLE_MODULES):
            return  # imported by one of them, which is half-run: bertlib.layers registers at its end
        try:
            register_keras_serializables()
        except Exception as error:  # noqa: BLE001 - Keras itself must still import
            warnings.warn(f"bertlib could not register its Keras layers ({type(error).__name__}: {error}); "
                          "call bertlib.register_keras_serializables() before loading a bertlib .keras file.",
                          stacklevel=2)

    def __getattr__(self, name):  # everything else a loader offers (resources, source) is the real loader's
        return getattr(self.loader, name)


if "keras" in sys.modules:
    register_keras_serializables()
elif not any(isinstance(finder, _RegisterAfterKerasImport) for finder in sys.meta_path):
    sys.meta_path.insert(0, _RegisterAfterKerasImport())
