"""bertlib: a small, readable Keras 3 BERT, grown chapter by chapter in the course notebooks.

Read it in the paper's order: `config` -> `layers` (embeddings, attention, encoder block) -> `model`
(backbone, masked-LM and next-sentence heads) -> `checkpoint`; then the data side (`tokenizer`, `corpora`,
`masking`, `nsp`, `data`) and the training side (`training`, `distribute`, `finetune`).

Names are imported lazily, so `import bertlib.tokenizer` or the `bertlib grade` command do not load Keras.
"""

import importlib

__version__ = "0.1.0"

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
