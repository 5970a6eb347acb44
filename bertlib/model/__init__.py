"""The model, in the paper's order (§3, Figure 2): `config` (sizes and presets) -> `layers` (embeddings,
self-attention, the encoder block) -> `backbone` (the encoder, the masked-LM and next-sentence heads, the
pretrainer) -> `checkpoint` (Hugging Face weights in and out) and `presets` (keras-hub's preset folders).
Beside them: `inputs` (the model's input names and checks, `pretraining_batch`), `ops` (the speed-ups, each
beside the plain form it replaces), `task` (the base of the models that wrap a backbone) and `reference` (a numpy
BERT the tests compare the model with)."""

from bertlib._lazy import attach

__getattr__, __dir__, __all__ = attach(__name__, {
    "BertConfig": "config",
    "BertEmbedding": "layers",
    "MultiHeadSelfAttention": "layers",
    "TransformerEncoderBlock": "layers",
    "attention_mask_from_padding": "layers",
    "BertBackbone": "backbone",
    "BertPretrainer": "backbone",
    "MaskedLMHead": "backbone",
    "NextSentenceHead": "backbone",
    "pretraining_batch": "inputs",
    "load_hf_checkpoint": "checkpoint",
    "save_hf_checkpoint": "checkpoint",
})
