"""The BERT backbone and its two pretraining heads (§3, §3.1 masked LM, §3.2 next sentence, appendix A.2)."""

import keras
import numpy as np
from keras import ops

from bertlib.model.config import BertConfig
from bertlib.model.layers import (
    BertEmbedding,
    TransformerEncoderBlock,
    check_padding_mask_values,
    concrete_values,
    gather_positions,
    make_initializer,
    plain,
    serialize_initializer,
    weight_initializer,
)

# Variables that AdamW must not decay (A.2; the released code skips LayerNorm and biases). Keras matches the
# patterns against `variable.name`: LayerNorm's `gamma`/`beta`, every `bias` and the masked-LM `output_bias`.
NO_WEIGHT_DECAY = ("gamma", "beta", "bias")
INPUT_NAMES = ("token_ids", "segment_ids", "padding_mask")


@keras.saving.register_keras_serializable(package="bertlib")
class BertBackbone(keras.Model):
    """The BERT encoder: embeddings, `num_layers` encoder blocks and the tanh pooler on [CLS] (§3).

    Inputs are a dict of int32 arrays of shape (batch, seq): `token_ids`, `segment_ids` (0 for segment A,
    1 for B) and `padding_mask` (1 for a real token, 0 for padding). Outputs are a dict:
    `sequence_output` (batch, seq, hidden) and `pooled_output` (batch, hidden), the paper's C.

    Args:
        config: `BertConfig` or its dict.
        dtype: optional dtype policy, e.g. "mixed_bfloat16".

    Example:
    >>> backbone = BertBackbone(BertConfig.preset("tiny"))
    >>> backbone.count_params()
    4385920
    """

    def __init__(self, config, dtype=None, **kwargs):
        if isinstance(config, dict):
            config = BertConfig.from_dict(config)
        token_ids = keras.Input(shape=(None,), dtype="int32", name="token_ids")
        segment_ids = keras.Input(shape=(None,), dtype="int32", name="segment_ids")
        padding_mask = keras.Input(shape=(None,), dtype="int32", name="padding_mask")

        embedding = BertEmbedding(
            config.vocabulary_size, config.hidden_dim, max_sequence_length=config.max_sequence_length,
            type_vocab_size=config.type_vocab_size, dropout=config.dropout,
            layer_norm_epsilon=config.layer_norm_epsilon, dtype=dtype, name="embedding")
        encoder_blocks = [
            TransformerEncoderBlock(
                config.num_heads, config.intermediate_dim, dropout=config.dropout,
                layer_norm_epsilon=config.layer_norm_epsilon, attention=config.attention,
                activation=config.activation, causal=config.causal, dtype=dtype,
                name=f"encoder_block_{index}")
            for index in range(config.num_layers)
        ]
        pooler = keras.layers.Dense(config.hidden_dim, activation="tanh",
                                    kernel_initializer=weight_initializer(), dtype=dtype, name="pooler")

        x = embedding(token_ids, segment_ids)  # (batch, seq, hidden)
        for block in encoder_blocks:
            x = block(x, padding_mask=padding_mask)
        pooled = pooler(x[:, 0, :])  # the final hidden state of [CLS], (batch, hidden)
        super().__init__(
            inputs={"token_ids": token_ids, "segment_ids": segment_ids, "padding_mask": padding_mask},
            outputs={"sequence_output": x, "pooled_output": pooled}, dtype=dtype, **kwargs)
        self.config = config
        self.embedding = embedding
        self.encoder_blocks = encoder_blocks
        self.pooler = pooler

    def call(self, inputs, training=None, mask=None):
        # Keras matches a dict to a model's inputs by sorted key, so one extra key (say `mask_positions`) would
        # shift the others silently: keep the three the backbone takes, and name any that is missing.
        if isinstance(inputs, dict):
            missing = [name for name in INPUT_NAMES if name not in inputs]
            if missing:
                raise ValueError(f"BertBackbone inputs lack {missing}; expected a dict with {list(INPUT_NAMES)}.")
            inputs = {name: inputs[name] for name in INPUT_NAMES}
            check_inputs(inputs, self.config)
        return super().call(inputs, training=training, mask=mask)

    @property
    def token_embedding(self):
        """The (vocabulary, hidden) token embedding layer, shared with the masked-LM decoder."""
        return self.embedding.token_embedding

    def hidden_states_at(self, inputs, positions):
        """The final hidden states at `positions` (batch, n) only: (batch, n, hidden).

        The same numbers as gathering those rows of `sequence_output`, for less work: the last block computes
        its queries, feed-forward layer and LayerNorms only at `positions`, while every position still serves
        as a key and a value. `BertPretrainer` uses it, since its heads read only [CLS] and the masked slots.
        """
        x = self.embedding(inputs["token_ids"], inputs["segment_ids"])
        for block in self.encoder_blocks[:-1]:
            x = block(x, padding_mask=inputs["padding_mask"])
        return self.encoder_blocks[-1](x, padding_mask=inputs["padding_mask"], query_positions=positions)

    def attention_probabilities(self, inputs):
        """Every block's attention probabilities for `inputs`: a list of (batch, heads, seq, seq) arrays."""
        x = self.embedding(inputs["token_ids"], inputs["segment_ids"])
        maps = []
        for block in self.encoder_blocks:
            x, probabilities = block(x, padding_mask=inputs["padding_mask"], return_attention_scores=True)
            maps.append(ops.convert_to_numpy(probabilities))
        return maps

    def get_config(self):
        return {"config": self.config.to_dict(), "name": self.name, "trainable": self.trainable,
                "dtype": keras.dtype_policies.serialize(self.dtype_policy)}

    @classmethod
    def from_preset(cls, preset, load_weights=True, dtype=None):
        """A backbone from a preset, as keras-hub's `Backbone.from_preset`; nothing is downloaded (no hub).

        Args:
            preset: a folder written by `save_to_preset` (config.json, model.weights.h5), or the name of a
                size of `BertConfig.preset` ("tiny" ... "large"): that architecture with random weights. A
                name wins over a folder of that name; pass `Path("tiny")` for the folder. A Hugging Face
                folder is refused, naming `load_hf_checkpoint`, which reads it (bertlib.model.presets says why).
            load_weights: bool, default True. False builds the folder's architecture with random weights.
            dtype: optional dtype policy, e.g. "mixed_bfloat16" (a saved preset's own policy otherwise).

        Example:
        >>> load_hf_checkpoint(bertlib_course.paths.minilm_dir()).save_to_preset("minilm")
        >>> BertBackbone.from_preset("minilm")  # the same weights
        """
        from bertlib.model.presets import load_backbone

        return load_backbone(cls, preset, load_weights=load_weights, dtype=dtype)

    def save_to_preset(self, preset_dir, tokenizer=None, overwrite=False):
        """Write a preset folder in keras-hub's layout: config.json, model.weights.h5, metadata.json.

        With `tokenizer` (a `WordPieceTokenizer`), its tokenizer.json and assets/tokenizer/vocabulary.txt too.
        The folder is written whole, to a temporary sibling folder then renamed; a folder that is not empty
        raises FileExistsError unless `overwrite=True`, which replaces it.
        """
        from bertlib.model.presets import save_backbone

        return save_backbone(self, preset_dir, tokenizer=tokenizer, overwrite=overwrite)

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        if isinstance(config.get("dtype"), dict):
            config["dtype"] = keras.dtype_policies.deserialize(config["dtype"])
        return cls(**config)


def check_inputs(inputs, config):
    """Raise a ValueError naming the problem when the backbone's inputs cannot be right.

    Shapes and dtypes are checked whenever they are known: the three arrays must be (batch, seq) alike, since a
    (1, seq) padding mask would otherwise be broadcast silently onto every row, seq must fit the position
    table, and the ids must be integers. Values are checked when they are concrete (numpy or eager tensors,
    not inside a compiled step): an id outside the vocabulary would otherwise be read from the wrong row (-1
    is the last row) instead of failing, and a mask value other than 0/1 (NaN, 0.5) read as a real token.
    """
    shapes = {name: tuple(inputs[name].shape) for name in INPUT_NAMES}
    token_shape = shapes["token_ids"]
    for name, shape in shapes.items():
        if len(shape) != 2 or any(a is not None and b is not None and a != b for a, b in zip(shape, token_shape)):
            raise ValueError(f"BertBackbone inputs must all be (batch, seq) arrays of one shape; got {shapes}. "
                             f"A {name} of another shape would be broadcast silently.")
    seq_length = token_shape[1]
    if seq_length is not None and seq_length > config.max_sequence_length:
        raise ValueError(f"Sequences of {seq_length} tokens are longer than the model's "
                         f"{config.max_sequence_length} learned positions (BertConfig.max_sequence_length).")
    for name in ("token_ids", "segment_ids"):
        dtype = keras.backend.standardize_dtype(inputs[name].dtype)
        if not keras.backend.is_int_dtype(dtype):  # a bool True would be read as id 1, a float 7.9 as 7
            raise ValueError(f"BertBackbone input {name} is a {dtype} array; expected integer ids (int32).")
    limits = {"token_ids": (0, config.vocabulary_size), "segment_ids": (0, config.type_vocab_size)}
    for name, (low, high) in limits.items():
        values = concrete_values(inputs[name])
        if values is not None and values.size and not low <= values.min() <= values.max() < high:
            raise ValueError(f"BertBackbone input {name} holds values from {values.min()} to {values.max()}; "
                             f"expected integers in [{low}, {high}).")
    check_padding_mask_values(inputs["padding_mask"], owner="BertBackbone input padding_mask")


@keras.saving.register_keras_serializable(package="bertlib")
class MaskedLMHead(keras.layers.Layer):
    """Predicts the original token at each masked position (§3.1, "Task #1: Masked LM").

    Gathers the hidden states at `mask_positions`, applies dense + GELU + LayerNorm, then decodes with the
    transposed token embedding (weights tied to the input embedding, as in the released model) plus an
    output bias. Logits are computed only at the prediction slots, not at every position. Without
    `mask_positions`, the input already holds the hidden states at the prediction slots.

    The tie is part of the head's config, the way keras-hub's `MaskedLMHead` keeps it: `get_config()` holds the
    embedding layer's config, and `from_config` rebuilds the head with an embedding of its own. Inside
    `BertPretrainer` (which rebuilds its head from the backbone) a reloaded head is tied to the backbone again.

    Args:
        vocabulary_size: int, optional. Must equal `token_embedding`'s rows when given.
        token_embedding: the `keras.layers.Embedding` to tie the decoder to (the backbone's `token_embedding`).
        layer_norm_epsilon: float, defaults to 1e-12.
        kernel_initializer: initializer of the transform's kernel, defaults to `TruncatedNormal(stddev=0.02)`.
        bias_initializer: initializer of the transform's bias and of the output bias, defaults to "zeros".

    Example:
    >>> head = MaskedLMHead(token_embedding=backbone.token_embedding)
    >>> head(sequence_output, mask_positions).shape  # (batch, predictions, vocabulary)
    """

    def __init__(self, vocabulary_size=None, token_embedding=None, *, layer_norm_epsilon=1e-12,
                 kernel_initializer=None, bias_initializer="zeros", **kwargs):
        super().__init__(**kwargs)
        if token_embedding is None:
            raise ValueError("MaskedLMHead decodes with the token embedding it is tied to: pass "
                             "token_embedding=backbone.token_embedding.")
        if vocabulary_size is not None and vocabulary_size != token_embedding.input_dim:
            raise ValueError(f"MaskedLMHead: vocabulary_size={vocabulary_size} but the tied token embedding has "
                             f"{token_embedding.input_dim} rows.")
        self.vocabulary_size = token_embedding.input_dim
        self.token_embedding = token_embedding
        self.layer_norm_epsilon = layer_norm_epsilon
        self.kernel_initializer = serialize_initializer(kernel_initializer)
        self.bias_initializer = serialize_initializer(bias_initializer)

    def build(self, sequence_output_shape, mask_positions_shape=None):
        hidden_dim = sequence_output_shape[-1]
        if not self.token_embedding.built:  # rebuilt from a config: its table is loaded with the head's weights
            self.token_embedding.build((None,))
        if self.token_embedding.output_dim != hidden_dim:
            raise ValueError(f"MaskedLMHead: hidden states of width {hidden_dim} cannot be decoded with a token "
                             f"embedding of width {self.token_embedding.output_dim}.")
        self.transform = keras.layers.Dense(
            hidden_dim, kernel_initializer=make_initializer(self.kernel_initializer),
            bias_initializer=plain(self.bias_initializer), name="transform", dtype=self.dtype_policy)
        self.transform.build((None, None, hidden_dim))
        self.layer_norm = keras.layers.LayerNormalization(epsilon=self.layer_norm_epsilon, name="layer_norm",
                                                          dtype=self.dtype_policy)
        self.layer_norm.build((None, None, hidden_dim))
        self.output_bias = self.add_weight(shape=(self.vocabulary_size,), initializer=plain(self.bias_initializer),
                                           name="output_bias")
        self.built = True

    def call(self, sequence_output, mask_positions=None):
        x = sequence_output
        if mask_positions is not None:
            x = gather_positions(sequence_output, mask_positions)  # (batch, predictions, hidden)
        x = self.layer_norm(keras.activations.gelu(self.transform(x), approximate=False))
        decoder = ops.cast(self.token_embedding.embeddings, self.compute_dtype)  # (vocabulary, hidden)
        logits = ops.matmul(x, ops.transpose(decoder)) + ops.cast(self.output_bias, self.compute_dtype)
        return logits  # (batch, predictions, vocabulary)

    def get_config(self):
        config = super().get_config()
        config.update(vocabulary_size=self.vocabulary_size,
                      token_embedding=keras.layers.serialize(self.token_embedding),
                      layer_norm_epsilon=self.layer_norm_epsilon,
                      kernel_initializer=plain(self.kernel_initializer),
                      bias_initializer=plain(self.bias_initializer))
        return config

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        if isinstance(config.get("token_embedding"), dict):
            config["token_embedding"] = keras.layers.deserialize(config["token_embedding"])
        return cls(**config)


@keras.saving.register_keras_serializable(package="bertlib")
class NextSentenceHead(keras.layers.Layer):
    """Two-way classifier on the pooled [CLS] vector (§3.2, "Task #2: Next Sentence Prediction").

    Class 0 is IsNext (B follows A in the document), class 1 is NotNext (B is a random sentence), the
    convention of the original code and of Hugging Face.

    Args:
        kernel_initializer: defaults to `TruncatedNormal(stddev=0.02)`.
        bias_initializer: defaults to "zeros".

    Example:
    >>> NextSentenceHead()(pooled_output).shape
    (batch, 2)
    """

    def __init__(self, *, kernel_initializer=None, bias_initializer="zeros", **kwargs):
        super().__init__(**kwargs)
        self.kernel_initializer = serialize_initializer(kernel_initializer)
        self.bias_initializer = serialize_initializer(bias_initializer)

    def build(self, pooled_output_shape):
        self.classifier = keras.layers.Dense(
            2, kernel_initializer=make_initializer(self.kernel_initializer),
            bias_initializer=plain(self.bias_initializer), name="classifier", dtype=self.dtype_policy)
        self.classifier.build(pooled_output_shape)
        self.built = True

    def call(self, pooled_output):
        return self.classifier(pooled_output)  # (batch, 2)

    def get_config(self):
        config = super().get_config()
        config.update(kernel_initializer=plain(self.kernel_initializer),
                      bias_initializer=plain(self.bias_initializer))
        return config


@keras.saving.register_keras_serializable(package="bertlib")
class BertPretrainer(keras.Model):
    """A backbone with the masked-LM head and, optionally, the next-sentence head (§3, appendix A.2).

    Inputs: `token_ids`, `segment_ids`, `padding_mask` (batch, seq) and `mask_positions`
    (batch, predictions). Outputs: `mlm_logits` (batch, predictions, vocabulary) and, with `next_sentence`,
    `nsp_logits` (batch, 2). `compile()` defaults to the paper's loss: the mean masked-LM cross-entropy
    over real prediction slots (slots with weight 0 count for nothing) plus the NSP cross-entropy.
    `pretraining_batch()` turns a feature dict from `bertlib.text.data` into `(x, y, sample_weight)`.

    Args:
        backbone: `BertBackbone`.
        next_sentence: bool, defaults to True. False drops NSP (the "No NSP" rows of §5.1, Table 5).

    Example:
    >>> pretrainer = BertPretrainer(BertBackbone(BertConfig.preset("tiny")))
    >>> pretrainer.compile(optimizer="adam")
    >>> pretrainer.fit(dataset.map(pretraining_batch))
    """

    def __init__(self, backbone, next_sentence=True, **kwargs):
        inputs = {name: keras.Input(shape=(None,), dtype="int32", name=name)
                  for name in ("token_ids", "segment_ids", "padding_mask", "mask_positions")}
        # The heads read only [CLS] (NSP) and the masked slots, so the last block computes just those rows
        # (`BertBackbone.hidden_states_at`): the same numbers, and most of one block's work saved.
        positions = inputs["mask_positions"]
        if next_sentence:
            positions = ops.concatenate([ops.zeros_like(positions[:, :1]), positions], axis=1)  # [CLS] first
        hidden = backbone.hidden_states_at(inputs, positions)  # (batch, [1 +] predictions, hidden)
        mlm_head = MaskedLMHead(backbone.config.vocabulary_size, token_embedding=backbone.token_embedding,
                                layer_norm_epsilon=backbone.config.layer_norm_epsilon,
                                dtype=backbone.dtype_policy, name="mlm_head")
        outputs = {"mlm_logits": mlm_head(hidden[:, 1:] if next_sentence else hidden)}
        nsp_head = None
        if next_sentence:
            nsp_head = NextSentenceHead(dtype=backbone.dtype_policy, name="nsp_head")
            outputs["nsp_logits"] = nsp_head(backbone.pooler(hidden[:, 0]))  # the pooled [CLS], the paper's C
        super().__init__(inputs=inputs, outputs=outputs, **kwargs)
        self.backbone = backbone
        self.next_sentence = next_sentence
        self.mlm_head = mlm_head
        self.nsp_head = nsp_head

    def compile(self, optimizer="adam", loss="auto", weighted_metrics="auto", metrics="auto", **kwargs):
        if loss == "auto":
            loss = {"mlm_logits": MaskedLMLoss()}
            if self.next_sentence:
                loss["nsp_logits"] = keras.losses.SparseCategoricalCrossentropy(from_logits=True, name="nsp_loss")
        if weighted_metrics == "auto":
            weighted_metrics = {"mlm_logits": [top1_accuracy_metric()]}
        if metrics == "auto":
            metrics = {"nsp_logits": [top1_accuracy_metric()]} if self.next_sentence else None
        super().compile(optimizer=optimizer, loss=loss, weighted_metrics=weighted_metrics, metrics=metrics,
                        **kwargs)

    def get_compile_config(self):
        if not self.compiled:
            return None
        return {"optimizer": keras.optimizers.serialize(self.optimizer)}

    def compile_from_config(self, config):
        # Losses and metrics are the defaults of `compile()`; only the optimizer needs restoring, and Keras
        # does not save which variables it excludes from weight decay.
        optimizer = keras.optimizers.deserialize(config["optimizer"])
        if getattr(optimizer, "weight_decay", None):
            optimizer.exclude_from_weight_decay(var_names=list(NO_WEIGHT_DECAY))
        self.compile(optimizer=optimizer)
        if self.built:
            self.optimizer.build(self.trainable_variables)

    def get_config(self):
        return {"backbone": keras.saving.serialize_keras_object(self.backbone),
                "next_sentence": self.next_sentence, "name": self.name, "trainable": self.trainable}

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        config["backbone"] = keras.saving.deserialize_keras_object(config["backbone"])
        return cls(**config)


@keras.saving.register_keras_serializable(package="bertlib")
class MaskedLMLoss(keras.losses.Loss):
    """The masked-LM loss: the cross-entropy of each slot's logits, averaged over the real slots (weight 1).

    Keras' `SparseCategoricalCrossentropy(from_logits=True)` with the reduction "mean_with_sample_weight", computed
    on the logits seen as (rows, vocabulary): the same values (on TensorFlow bit for bit, as its loss flattens the
    logits itself). On PyTorch, Keras would first move the class axis of the (batch, predictions, vocabulary)
    logits to axis 1, a strided copy and a slower softmax: forward and backward of 32 x 20 x 30,522 logits took
    146 ms that way and 83 ms on rows (bench/RESULTS.md).
    """

    def __init__(self, reduction="mean_with_sample_weight", name="mlm_loss", dtype=None):
        super().__init__(name=name, reduction=reduction, dtype=dtype)

    def call(self, y_true, y_pred):
        rows = ops.reshape(y_pred, (-1, ops.shape(y_pred)[-1]))  # (batch * predictions, vocabulary)
        losses = ops.sparse_categorical_crossentropy(ops.reshape(y_true, (-1,)), rows, from_logits=True)
        return ops.reshape(losses, ops.shape(y_pred)[:-1])  # (batch, predictions), for the slot weights


def top1_accuracy(y_true, y_pred):
    """1.0 where the label's logit is the largest of its row, else 0.0: `SparseCategoricalAccuracy`'s value.

    One max and one gather over the logits instead of an argmax (Keras' TensorFlow argmax adds five passes over
    the 640 x 30,522 logits of the bench step to tell -0.0 from +0.0). The same accuracy except on ties: a label
    whose logit ties the largest counts as right here, and as right there only if it comes first.
    """
    y_pred = ops.convert_to_tensor(y_pred)
    labels = ops.cast(y_true, "int32")
    if len(labels.shape) == len(y_pred.shape):  # (batch, 1) labels of (batch, classes) logits
        labels = ops.squeeze(labels, -1)
    classes = ops.shape(y_pred)[-1]
    labels = ops.reshape(labels, (-1,))  # one flat gather of the label's logit in each row
    rows = ops.arange(ops.shape(labels)[0], dtype="int32")
    label_logit = ops.reshape(ops.take(ops.reshape(y_pred, (-1,)), rows * classes + labels), ops.shape(y_pred)[:-1])
    return ops.cast(label_logit >= ops.max(y_pred, axis=-1), "float32")


def top1_accuracy_metric(name="accuracy"):
    """The pretrainer's accuracy metric: the (weighted) mean of `top1_accuracy`."""
    return keras.metrics.MeanMetricWrapper(top1_accuracy, name=name)


def pretraining_batch(features, next_sentence=True):
    """Split a feature dict into Keras' `(x, y, sample_weight)` for `BertPretrainer.fit`.

    `features` holds `token_ids, segment_ids, padding_mask, mask_positions, mask_ids, mask_weights` and, for
    NSP, `next_sentence_labels` (1 = NotNext, the `is_random_next` of the data pipeline).
    """
    x = {name: features[name] for name in ("token_ids", "segment_ids", "padding_mask", "mask_positions")}
    y = {"mlm_logits": features["mask_ids"]}
    sample_weight = {"mlm_logits": features["mask_weights"]}
    if next_sentence:
        y["nsp_logits"] = features["next_sentence_labels"]
        sample_weight["nsp_logits"] = _ones_like(features["next_sentence_labels"])  # every NSP example counts
    return x, y, sample_weight


def _ones_like(labels):
    """float32 ones: with TensorFlow ops inside tf.data (which always runs on TensorFlow), else numpy."""
    if type(labels).__module__.startswith("tensorflow"):
        import tensorflow as tf

        return tf.ones_like(labels, dtype=tf.float32)
    return np.ones(np.shape(labels), "float32")
