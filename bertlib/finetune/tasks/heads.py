"""The task heads of figure 4: the only new parameters fine-tuning adds to the pretrained encoder (§3.2, §4).

- Sentence (pair) classification and STS-B regression: dropout + dense on the pooled [CLS] vector (§4.1).
- SQuAD: a start vector S and an end vector E dotted with every token's final hidden state (§4.2, §4.3).
- SWAG: one score per (context, ending) pair from the pooled vector, softmax over the four endings (§4.4).
"""

import keras

from bertlib.model.inputs import INPUT_NAMES
from bertlib.model.task import BackboneModel


def _sequence_inputs(shape=(None,)):
    return {name: keras.Input(shape=shape, dtype="int32", name=name) for name in INPUT_NAMES}


@keras.saving.register_keras_serializable(package="bertlib")
class MeanPooling(keras.layers.Layer):
    """The average of the real tokens' final hidden states, padding excluded: (batch, seq, H) -> (batch, H).

    An alternative to the paper's [CLS] pooler. Sentence-embedding checkpoints such as all-MiniLM-L6-v2
    were trained through this average, so their [CLS] pooler was never trained (the capstone compares both).
    """

    def call(self, sequence_output, padding_mask):
        mask = keras.ops.cast(padding_mask, sequence_output.dtype)[:, :, None]  # (batch, seq, 1)
        total = keras.ops.sum(sequence_output * mask, axis=1)
        return total / keras.ops.maximum(keras.ops.sum(mask, axis=1), 1.0)  # (batch, hidden)

    def compute_output_shape(self, sequence_output_shape, padding_mask_shape=None):
        return (sequence_output_shape[0], sequence_output_shape[-1])


POOLINGS = ("cls", "mean")


@keras.saving.register_keras_serializable(package="bertlib")
class BertClassifier(BackboneModel):
    """A sentence or sentence-pair classifier: dropout and one dense layer on the pooled [CLS] vector C (§4.1).

    The paper's only new parameters are "classification layer weights W in R^{K x H}"; the label
    probabilities are softmax(C W^T). With `num_outputs=1` the same head gives STS-B's similarity score.

    Args:
        backbone: `BertBackbone`.
        num_outputs: int. Classes K, or 1 for a regression.
        dropout: float, defaults to 0.1 (§A.3 keeps dropout at 0.1 while fine-tuning).
        pooling: "cls" (the paper's pooled [CLS] vector, default) or "mean" (`MeanPooling`; the backbone's
            pooler is then unused and set non-trainable).

    Example:
    >>> from bertlib import BertBackbone, BertClassifier, BertConfig, WordPieceTokenizer
    >>> inputs = WordPieceTokenizer.bert_uncased().pack_batch(["a gripping film", "dull"], sequence_length=16)
    >>> model = BertClassifier(BertBackbone(BertConfig.preset("tiny")), num_outputs=2)
    >>> tuple(model(inputs).shape)  # (batch, num_outputs): one logit per class
    (2, 2)
    """

    _fields = ("num_outputs", "dropout", "pooling")

    def __init__(self, backbone, num_outputs, dropout=0.1, pooling="cls", **kwargs):
        if pooling not in POOLINGS:
            raise ValueError(f"pooling={pooling!r}; expected one of {POOLINGS}.")
        inputs = _sequence_inputs()
        outputs = backbone(inputs)
        if pooling == "cls":
            pooled = outputs["pooled_output"]  # (batch, hidden)
        else:
            pooled = MeanPooling(name="mean_pooling")(outputs["sequence_output"], inputs["padding_mask"])
            backbone.pooler.trainable = False  # unused, so it gets no gradient (and Keras no warning about it)
        head_dropout = keras.layers.Dropout(dropout, name="head_dropout")
        head = keras.layers.Dense(num_outputs, name="classifier",
                                  kernel_initializer=keras.initializers.TruncatedNormal(stddev=0.02))
        super().__init__(inputs=inputs, outputs=head(head_dropout(pooled)), **kwargs)  # (batch, num_outputs)
        self.backbone = backbone
        self.num_outputs = num_outputs
        self.dropout = dropout
        self.pooling = pooling


@keras.saving.register_keras_serializable(package="bertlib")
class BertSpanExtractor(BackboneModel):
    """SQuAD's head (§4.2): a start vector S and an end vector E, scored against every token's hidden state.

    "The probability of word i being the start of the answer span is computed as a dot product between T_i and
    S followed by a softmax over all of the words in the paragraph", and the same for the end with E. S and E
    are the two columns of one dense layer. Outputs `start_logits` and `end_logits`, each (batch, seq).

    Args:
        backbone: `BertBackbone`.

    Example:
    >>> from bertlib import BertBackbone, BertConfig, BertSpanExtractor, WordPieceTokenizer
    >>> inputs = WordPieceTokenizer.bert_uncased().pack_batch(["who wrote it?"], ["Ada wrote it."],
    ...                                                      sequence_length=32)
    >>> model = BertSpanExtractor(BertBackbone(BertConfig.preset("tiny")))
    >>> tuple(model(inputs)["start_logits"].shape)  # (batch, seq): a start score per token
    (1, 32)
    """

    def __init__(self, backbone, **kwargs):
        inputs = _sequence_inputs()
        sequence_output = backbone(inputs)["sequence_output"]  # (batch, seq, hidden)
        backbone.pooler.trainable = False  # the [CLS] pooler is unused here
        head = keras.layers.Dense(2, name="span_classifier",
                                  kernel_initializer=keras.initializers.TruncatedNormal(stddev=0.02))
        logits = head(sequence_output)  # (batch, seq, 2)
        outputs = {"start_logits": logits[:, :, 0], "end_logits": logits[:, :, 1]}
        super().__init__(inputs=inputs, outputs=outputs, **kwargs)
        self.backbone = backbone


@keras.saving.register_keras_serializable(package="bertlib")
class ChoicesToBatch(keras.layers.Layer):
    """(batch, choices, seq) -> (batch * choices, seq): every choice becomes a sequence of its own."""

    def call(self, inputs):
        return keras.ops.reshape(inputs, (-1, keras.ops.shape(inputs)[-1]))

    def compute_output_shape(self, input_shape):
        return (None, input_shape[-1])


@keras.saving.register_keras_serializable(package="bertlib")
class BertMultipleChoice(BackboneModel):
    """SWAG's head (§4.4): each (context, ending) pair is one sequence; a vector V dotted with its pooled C
    gives one score, and the scores of the four endings go through a softmax.

    Inputs are (batch, choices, seq); the output is (batch, choices) logits.

    Args:
        backbone: `BertBackbone`.
        num_choices: int, defaults to 4.
        dropout: float, defaults to 0.1.

    Example:
    >>> from bertlib import BertBackbone, BertConfig, BertMultipleChoice, WordPieceTokenizer
    >>> endings = ["sits down.", "flies away.", "eats soup.", "reads a book."]
    >>> pairs = WordPieceTokenizer.bert_uncased().pack_batch(["The man"] * 4, endings, sequence_length=16)
    >>> inputs = {name: array.reshape(1, 4, 16) for name, array in pairs.items()}  # (batch, choices, seq)
    >>> model = BertMultipleChoice(BertBackbone(BertConfig.preset("tiny")))
    >>> tuple(model(inputs).shape)  # (batch, choices): a score per ending
    (1, 4)
    """

    _fields = ("num_choices", "dropout")

    def __init__(self, backbone, num_choices=4, dropout=0.1, **kwargs):
        inputs = _sequence_inputs(shape=(num_choices, None))
        choices_to_batch = ChoicesToBatch(name="choices_to_batch")
        flat = {name: choices_to_batch(tensor) for name, tensor in inputs.items()}
        pooled = backbone(flat)["pooled_output"]  # (batch * choices, hidden)
        head_dropout = keras.layers.Dropout(dropout, name="head_dropout")
        head = keras.layers.Dense(1, name="choice_scorer",
                                  kernel_initializer=keras.initializers.TruncatedNormal(stddev=0.02))
        scores = keras.ops.reshape(head(head_dropout(pooled)), (-1, num_choices))  # (batch, choices)
        super().__init__(inputs=inputs, outputs=scores, **kwargs)
        self.backbone = backbone
        self.num_choices = num_choices
        self.dropout = dropout
