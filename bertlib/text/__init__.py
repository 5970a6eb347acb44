"""From text to pretraining batches: `tokenizer` (BERT's basic tokenizer and WordPiece), `vocabulary` (its trainer),
`corpora` (documents of sentences), `nsp` (sentence pairs, §3.1 task 2), `masking` (the 80/10/10 rule, §3.1
task 1, A.1) and `data` (tf.data pipelines and TFRecords, `bertlib data`). No module here uses Keras."""

from bertlib._lazy import attach

__getattr__, __dir__, __all__ = attach(__name__, {
    "WordPieceTokenizer": "tokenizer",
    "train_wordpiece_vocab": "vocabulary",
    "MaskedLMMasker": "masking",
    "create_nsp_instances": "nsp",
})
