"""The BERT backbone, its two pretraining heads and the pretrainer (§3, §3.1 masked LM, §3.2 next sentence, A.2)."""

import keras
from keras import ops

from bertlib.model.config import BertConfig
from bertlib.model.inputs import INPUT_NAMES, check_inputs
from bertlib.model.layers import BertEmbedding, TransformerEncoderBlock, clone_initializer
from bertlib.model.ops import MaskedLMLoss, gather_positions, top1_accuracy_metric
from bertlib.model.task import BackboneModel

# What AdamW does not decay (A.2, the released code): Keras matches these in `variable.name`, LayerNorm's gamma and
# beta, every `bias` and the masked-LM `output_bias`.
NO_WEIGHT_DECAY = ("gamma", "beta", "bias")


@keras.saving.register_keras_serializable(package="bertlib")
class BertBackbone(keras.Model):
    """The BERT encoder: embeddings, `num_layers` encoder blocks and the tanh pooler on [CLS] (§3).

    Inputs: (batch, seq) int32 `token_ids`, `segment_ids` (0 for segment A, 1 for B) and `padding_mask` (1 for a
    real token, 0 for padding). Outputs: `sequence_output` (batch, seq, hidden) and `pooled_output`, the paper's C.

    Args:
        config: `BertConfig` or its dict.
        dtype: optional dtype policy, e.g. "mixed_bfloat16".

    Example:
    ```python
    backbone = BertBackbone(BertConfig.preset("tiny"))
    backbone.count_params()  # 4,385,920
    ```
    """

    def __init__(self, config, dtype=None, **kwargs):
        if isinstance(config, dict):
            config = BertConfig.from_dict(config)
        inputs = {name: keras.Input(shape=(None,), dtype="int32", name=name) for name in INPUT_NAMES}
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
        pooler = keras.layers.Dense(config.hidden_dim, activation="tanh", dtype=dtype, name="pooler",
                                    kernel_initializer=keras.initializers.TruncatedNormal(stddev=0.02))

        x = embedding(inputs["token_ids"], inputs["segment_ids"])  # (batch, seq, hidden)
        for block in encoder_blocks:
            x = block(x, padding_mask=inputs["padding_mask"])
        pooled = pooler(x[:, 0, :])  # the final hidden state of [CLS], (batch, hidden)
        super().__init__(inputs=inputs, outputs={"sequence_output": x, "pooled_output": pooled}, dtype=dtype,
                         **kwargs)
        self.config = config
        self.embedding = embedding
        self.encoder_blocks = encoder_blocks
        self.pooler = pooler

    def call(self, inputs, training=None, mask=None):
        if isinstance(inputs, dict):  # the three inputs alone (an extra key would shift them), checked
            inputs = check_inputs(inputs, self.config)
        return super().call(inputs, training=training, mask=mask)

    @property
    def token_embedding(self):
        """The (vocabulary, hidden) token embedding layer, shared with the masked-LM decoder."""
        return self.embedding.token_embedding

    def hidden_states_at(self, inputs, positions):
        """The final hidden states at `positions` (batch, n) only: (batch, n, hidden), the rows of `sequence_output`
        there for less work, as the last block computes only those rows (every position still serves as a key and a
        value). `BertPretrainer` uses it: its heads read only [CLS] and the masked slots."""
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

    @classmethod
    def from_preset(cls, preset, load_weights=True, dtype=None):
        """A backbone from a folder of `save_to_preset` or a size of `BertConfig.preset` ("tiny" ... "large", random
        weights), as keras-hub's `Backbone.from_preset`; nothing is downloaded (see bertlib.model.presets)."""
        from bertlib.model.presets import load_backbone

        return load_backbone(cls, preset, load_weights=load_weights, dtype=dtype)

    def save_to_preset(self, preset_dir, tokenizer=None, overwrite=False):
        """Write a preset folder in keras-hub's layout (config.json, model.weights.h5, metadata.json and, with a
        `WordPieceTokenizer`, its files), whole or not at all; a folder that is not empty needs `overwrite=True`."""
        from bertlib.model.presets import save_backbone

        return save_backbone(self, preset_dir, tokenizer=tokenizer, overwrite=overwrite)

    def get_config(self):
        return {"config": self.config.to_dict(), "name": self.name, "trainable": self.trainable,
                "dtype": keras.dtype_policies.serialize(self.dtype_policy)}


@keras.saving.register_keras_serializable(package="bertlib")
class MaskedLMHead(keras.layers.Layer):
    """Predicts the original token at each masked position (§3.1, "Task #1: Masked LM").

    Gathers the hidden states at `mask_positions` (without them, the input holds only those), applies dense + GELU +
    LayerNorm, then decodes with the transposed token embedding (tied to the input embedding, as in the released
    model) plus an output bias. The tie is in the config, as in keras-hub's `MaskedLMHead`: `from_config` gives the
    head an embedding of its own; a reloaded `BertPretrainer` ties its head to the backbone again.

    Args:
        vocabulary_size: int, optional. Must equal `token_embedding`'s rows when given.
        token_embedding: the `keras.layers.Embedding` to tie the decoder to (the backbone's `token_embedding`).
        layer_norm_epsilon: float, defaults to 1e-12.
        kernel_initializer: the transform's, defaults to None: BERT's `TruncatedNormal(stddev=0.02)`.
        bias_initializer: the transform's bias and the output bias, defaults to "zeros".

    Example:
    ```python
    head = MaskedLMHead(token_embedding=backbone.token_embedding)
    logits = head(sequence_output, mask_positions)  # (batch, predictions, vocabulary)
    ```
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
        self.kernel_initializer = keras.initializers.get(kernel_initializer)
        self.bias_initializer = keras.initializers.get(bias_initializer)

    def build(self, sequence_output_shape, mask_positions_shape=None):
        hidden_dim = sequence_output_shape[-1]
        if not self.token_embedding.built:  # rebuilt from a config: its table is loaded with the head's weights
            self.token_embedding.build((None,))
        if self.token_embedding.output_dim != hidden_dim:
            raise ValueError(f"MaskedLMHead: hidden states of width {hidden_dim} cannot be decoded with a token "
                             f"embedding of width {self.token_embedding.output_dim}.")
        self.transform = keras.layers.Dense(
            hidden_dim, kernel_initializer=clone_initializer(self.kernel_initializer),
            bias_initializer=clone_initializer(self.bias_initializer), name="transform", dtype=self.dtype_policy)
        self.transform.build((None, None, hidden_dim))
        self.layer_norm = keras.layers.LayerNormalization(epsilon=self.layer_norm_epsilon, name="layer_norm",
                                                          dtype=self.dtype_policy)
        self.layer_norm.build((None, None, hidden_dim))
        self.output_bias = self.add_weight(shape=(self.vocabulary_size,), name="output_bias",
                                           initializer=clone_initializer(self.bias_initializer))
        self.built = True

    def call(self, sequence_output, mask_positions=None):
        x = sequence_output
        if mask_positions is not None:
            x = gather_positions(sequence_output, mask_positions)  # (batch, predictions, hidden)
        x = self.layer_norm(ops.gelu(self.transform(x), approximate=False))
        decoder = ops.cast(self.token_embedding.embeddings, self.compute_dtype)  # (vocabulary, hidden)
        logits = ops.matmul(x, ops.transpose(decoder)) + ops.cast(self.output_bias, self.compute_dtype)
        return logits  # (batch, predictions, vocabulary)

    def get_config(self):
        config = super().get_config()
        config.update(vocabulary_size=self.vocabulary_size,
                      token_embedding=keras.layers.serialize(self.token_embedding),
                      layer_norm_epsilon=self.layer_norm_epsilon,
                      kernel_initializer=keras.initializers.serialize(self.kernel_initializer),
                      bias_initializer=keras.initializers.serialize(self.bias_initializer))
        return config

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        if isinstance(config.get("token_embedding"), dict):
            config["token_embedding"] = keras.layers.deserialize(config["token_embedding"])
        return cls(**config)


@keras.saving.register_keras_serializable(package="bertlib")
class NextSentenceHead(keras.layers.Layer):
    """Two-way classifier on the pooled [CLS] vector (§3.2, "Task #2: Next Sentence Prediction"): class 0 is IsNext
    (B follows A in the document), class 1 is NotNext (B is random), as in the released code.

    Args:
        kernel_initializer: defaults to None: BERT's `TruncatedNormal(stddev=0.02)`.
        bias_initializer: defaults to "zeros".

    Example:
    ```python
    nsp_logits = NextSentenceHead()(pooled_output)  # (batch, 2)
    ```
    """

    def __init__(self, *, kernel_initializer=None, bias_initializer="zeros", **kwargs):
        super().__init__(**kwargs)
        self.kernel_initializer = keras.initializers.get(kernel_initializer)
        self.bias_initializer = keras.initializers.get(bias_initializer)

    def build(self, pooled_output_shape):
        self.classifier = keras.layers.Dense(
            2, kernel_initializer=clone_initializer(self.kernel_initializer),
            bias_initializer=clone_initializer(self.bias_initializer), name="classifier", dtype=self.dtype_policy)
        self.classifier.build(pooled_output_shape)
        self.built = True

    def call(self, pooled_output):
        return self.classifier(pooled_output)  # (batch, 2)

    def get_config(self):
        config = super().get_config()
        config.update(kernel_initializer=keras.initializers.serialize(self.kernel_initializer),
                      bias_initializer=keras.initializers.serialize(self.bias_initializer))
        return config


@keras.saving.register_keras_serializable(package="bertlib")
class BertPretrainer(BackboneModel):
    """A backbone with the masked-LM head and, optionally, the next-sentence head (§3, appendix A.2).

    Inputs: `token_ids`, `segment_ids`, `padding_mask` (batch, seq) and `mask_positions` (batch, predictions).
    Outputs: `mlm_logits` (batch, predictions, vocabulary) and, with `next_sentence`, `nsp_logits` (batch, 2).
    `compile()` defaults to the paper's loss: the mean masked-LM cross-entropy over real prediction slots (weight 0
    counts for nothing) plus the NSP cross-entropy. `pretraining_batch()` gives `fit` its `(x, y, sample_weight)`.

    Args:
        backbone: `BertBackbone`.
        next_sentence: bool, defaults to True. False drops NSP (the "No NSP" rows of §5.1, Table 5).

    Example:
    ```python
    pretrainer = BertPretrainer(BertBackbone(BertConfig.preset("tiny")))
    pretrainer.compile(optimizer=bertlib.train.schedule.make_optimizer())
    pretrainer.fit(features.map(pretraining_batch))  # features: a tf.data.Dataset of bertlib.text.data
    ```
    """

    _fields = ("next_sentence",)

    def __init__(self, backbone, next_sentence=True, **kwargs):
        inputs = {name: keras.Input(shape=(None,), dtype="int32", name=name)
                  for name in (*INPUT_NAMES, "mask_positions")}
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
        optimizer = config["optimizer"]
        if optimizer.get("registered_name") == "bertlib>AdamW":  # saved by bertlib 0.2: Keras' AdamW, same config
            optimizer = {**optimizer, "module": "keras.optimizers", "class_name": "AdamW", "registered_name": None}
        optimizer = keras.optimizers.deserialize(optimizer)
        if getattr(optimizer, "weight_decay", None):
            optimizer.exclude_from_weight_decay(var_names=list(NO_WEIGHT_DECAY))
        self.compile(optimizer=optimizer)
        if self.built:
            self.optimizer.build(self.trainable_variables)
