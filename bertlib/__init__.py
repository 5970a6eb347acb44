"""bertlib: a small, readable Keras 3 BERT, on TensorFlow, JAX and PyTorch.

Its folders are its layers, each importing only from those below it (tests/test_architecture.py):

- `bertlib.io`: files written atomically, folder locks, the cache folder, datasets by name;
- `bertlib.model`: config -> layers (embeddings, attention, encoder block) -> backbone (encoder, masked-LM and
  next-sentence heads, pretrainer) -> checkpoint (Hugging Face weights) and presets (keras-hub's);
- `bertlib.text`: tokenizer, corpora, next-sentence pairs, masking, tf.data pipelines;
- `bertlib.train`: settings, placement (`distribute`), callbacks, the pretraining run;
- `bertlib.finetune`: tasks (GLUE, SQuAD, SWAG) with their heads, metrics, the fine-tuning loop.

Names are imported lazily, so `import bertlib.text.tokenizer` or `bertlib download` do not load Keras.

A `.keras` file saved from bertlib's layers and models loads after `import bertlib` alone: Keras finds custom classes
in its registry of serializable objects, so bertlib registers its classes when Keras is imported (at once when it
already is, else right after Keras' own import, by a one-shot import hook; when that import is bertlib.model.layers'
own, at the end of bertlib.model.layers, since the backbone needs its layers). That registration is the only thing
importing bertlib does beyond defining names; CPU threads, seeds and logging are calls a program makes.
"""

import importlib
import importlib.abc
import sys
import warnings

from bertlib._lazy import attach

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
    "pretraining_batch": "bertlib.model.backbone",
    "load_hf_checkpoint": "bertlib.model.checkpoint",
    "save_hf_checkpoint": "bertlib.model.checkpoint",
    "WordPieceTokenizer": "bertlib.text.tokenizer",
    "train_wordpiece_vocab": "bertlib.text.vocabulary",
    "MaskedLMMasker": "bertlib.text.masking",
    "create_nsp_instances": "bertlib.text.nsp",
    "pretrain": "bertlib.train.pretraining",
}

# The names above, and the subpackages (bertlib.model, bertlib.text, ...), imported when first asked for.
__getattr__, __dir__, __all__ = attach(__name__, {name: module.removeprefix("bertlib.")
                                                  for name, module in _EXPORTS.items()})


def register_keras_serializables():
    """Register every bertlib layer and model with Keras' serialization (imports Keras and the backbone)."""
    importlib.import_module("bertlib.model.backbone")  # and its layers: their @register_keras_serializable run


# The modules `register_keras_serializables` imports. When one of them is itself importing Keras (the first
# bertlib import of the process was `import bertlib.model.layers`), it is half-run and bertlib.model.backbone could not import
# its layers yet: the hook leaves it, and bertlib.model.layers registers everything at its own end.
_SERIALIZABLE_MODULES = ("bertlib.model.layers", "bertlib.model.backbone")


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
            return  # imported by one of them, which is half-run: bertlib.model.layers registers at its end
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
