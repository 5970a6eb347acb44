"""The layers of a BERT encoder in the paper's order (§3, figure 2): embeddings -> self-attention -> encoder block.

Written in `keras.ops` (one code for TensorFlow, JAX and PyTorch) and to the Keras layer contract, as keras-hub's:
sublayers built in `build()` from the input shape (H is read there), every constructor argument in `get_config()`.
"""

import math

import keras
from keras import ops

from bertlib.model.inputs import check_padding_mask_values
from bertlib.model.ops import gather_positions


def clone_initializer(initializer):
    """A new instance of `initializer` for one `build()` (keras-hub's helper): an unseeded random initializer draws
    its seed when it is made, so every weight gets its own clone: two weights built from one instance would start
    alike (a position table equal to the token table's first rows). None is BERT's: a truncated normal of standard
    deviation 0.02 (the released code).
    """
    if initializer is None:
        return keras.initializers.TruncatedNormal(stddev=0.02)
    if not isinstance(initializer, keras.initializers.Initializer):  # a plain function: nothing to clone
        return initializer
    return initializer.__class__.from_config(initializer.get_config())


def dense(owner, units, name):
    """A `Dense` sublayer of `owner` (attention, the feed-forward) with its own clones of the owner's initializers."""
    return keras.layers.Dense(units, name=name, kernel_initializer=clone_initializer(owner.kernel_initializer),
                              bias_initializer=clone_initializer(owner.bias_initializer), dtype=owner.dtype_policy)


@keras.saving.register_keras_serializable(package="bertlib")
class BertEmbedding(keras.layers.Layer):
    """Token + learned position + segment embeddings, then LayerNorm and dropout (§3, figure 2). Its inputs are
    ids, so the width H is an argument here; the layers after it read H from their input.

    Args:
        vocabulary_size: int. Rows of the token embedding (30,522 for the uncased vocabulary).
        hidden_dim: int. The paper's H.
        max_sequence_length: int, defaults to 512. Rows of the learned position embedding.
        type_vocab_size: int, defaults to 2. Segments A and B.
        dropout: float, defaults to 0.1.
        layer_norm_epsilon: float, defaults to 1e-12.
        embeddings_initializer: of the three tables, defaults to None: BERT's `TruncatedNormal(stddev=0.02)`.

    Example:
    ```python
    layer = BertEmbedding(vocabulary_size=100, hidden_dim=8)
    layer(np.zeros((2, 5), "int32"), np.zeros((2, 5), "int32")).shape  # (2, 5, 8)
    ```
    """

    def __init__(self, vocabulary_size, hidden_dim, max_sequence_length=512, type_vocab_size=2, dropout=0.1,
                 layer_norm_epsilon=1e-12, embeddings_initializer=None, **kwargs):
        super().__init__(**kwargs)
        self.vocabulary_size = vocabulary_size
        self.hidden_dim = hidden_dim
        self.max_sequence_length = max_sequence_length
        self.type_vocab_size = type_vocab_size
        self.dropout = dropout
        self.layer_norm_epsilon = layer_norm_epsilon
        self.embeddings_initializer = keras.initializers.get(embeddings_initializer)

    def build(self, token_ids_shape, segment_ids_shape=None):
        def table(vocabulary_size, name):
            return keras.layers.Embedding(vocabulary_size, self.hidden_dim, name=name, dtype=self.dtype_policy,
                                          embeddings_initializer=clone_initializer(self.embeddings_initializer))

        self.token_embedding = table(self.vocabulary_size, "token_embedding")
        self.token_embedding.build(token_ids_shape)
        self.position_embedding = self.add_weight(
            shape=(self.max_sequence_length, self.hidden_dim), name="position_embedding",
            initializer=clone_initializer(self.embeddings_initializer))
        self.segment_embedding = table(self.type_vocab_size, "segment_embedding")
        self.segment_embedding.build(token_ids_shape)
        self.layer_norm = keras.layers.LayerNormalization(
            epsilon=self.layer_norm_epsilon, name="layer_norm", dtype=self.dtype_policy)
        self.layer_norm.build((*token_ids_shape, self.hidden_dim))
        self.dropout_layer = keras.layers.Dropout(self.dropout, name="dropout", dtype=self.dtype_policy)
        self.built = True

    def call(self, token_ids, segment_ids, training=None):
        sequence_length = ops.shape(token_ids)[1]
        if isinstance(sequence_length, int) and sequence_length > self.max_sequence_length:
            raise ValueError(f"Sequences of {sequence_length} tokens are longer than the "
                             f"{self.max_sequence_length} learned positions of this embedding.")
        positions = ops.cast(self.position_embedding[:sequence_length], self.compute_dtype)  # (seq, hidden)
        x = self.token_embedding(token_ids) + positions[None] + self.segment_embedding(segment_ids)
        return self.dropout_layer(self.layer_norm(x), training=training)  # (batch, seq, hidden)

    def compute_output_shape(self, token_ids_shape, segment_ids_shape=None):
        return (*token_ids_shape, self.hidden_dim)

    def get_config(self):
        config = super().get_config()
        config.update(vocabulary_size=self.vocabulary_size, hidden_dim=self.hidden_dim,
                      max_sequence_length=self.max_sequence_length, type_vocab_size=self.type_vocab_size,
                      dropout=self.dropout, layer_norm_epsilon=self.layer_norm_epsilon,
                      embeddings_initializer=keras.initializers.serialize(self.embeddings_initializer))
        return config


def attention_mask_from_padding(padding_mask, causal=False, query_positions=None):
    """(batch, seq) padding mask -> boolean mask that broadcasts to (batch, heads, query, key).

    Without `causal`, every query may look at every real key, only padding is hidden: BERT is bidirectional (§3.1).
    With `causal`, query i may not look at keys j > i either (left to right). `query_positions` (batch, n): where
    the queries sit when they are not every position."""
    check_padding_mask_values(padding_mask, only_float=True)
    mask = ops.cast(padding_mask, "bool")[:, None, None, :]  # (batch, 1, 1, key)
    if causal:
        keys = ops.arange(ops.shape(padding_mask)[1])
        queries = keys[None] if query_positions is None else ops.cast(query_positions, keys.dtype)  # (b, q)
        mask = ops.logical_and(mask, queries[:, None, :, None] >= keys[None, None, None, :])  # (b, 1, q, k)
    return mask


@keras.saving.register_keras_serializable(package="bertlib")
class MultiHeadSelfAttention(keras.layers.Layer):
    """Multi-head scaled dot-product self-attention with a padding mask (Vaswani et al. 2017; BERT §3).

    One dense layer computes queries, keys and values together (as nanoGPT's `c_attn`), split into heads by
    reshaping: the same weights as three projections. H, the input's last axis, must be divisible by `num_heads`.

    Args:
        num_heads: int. The paper's A.
        dropout: float, defaults to 0.1. Applied to the attention probabilities.
        implementation: "explicit" (defaults) writes softmax(Q K^T / sqrt(d)) V out and can return the probabilities;
            "fused" calls `keras.ops.dot_product_attention`, but not while training with dropout. Same numbers.
        causal: bool, defaults to False. Hide keys to the right of each query (left-to-right attention).
        kernel_initializer: of both projections, defaults to None: BERT's `TruncatedNormal(stddev=0.02)`.
        bias_initializer: defaults to "zeros".

    Call arguments: `x` (batch, seq, hidden), `padding_mask` (batch, seq), `training`, `return_attention_scores`
    and `query_positions` (batch, n): only the queries there are computed (keys and values still come from every
    position), giving (batch, n, hidden); the pretrainer's last block uses it.

    Example:
    ```python
    layer = MultiHeadSelfAttention(num_heads=2)
    layer(np.ones((2, 5, 8)), padding_mask=np.ones((2, 5))).shape  # (2, 5, 8)
    ```
    """

    def __init__(self, num_heads, *, dropout=0.1, implementation="explicit", causal=False, kernel_initializer=None,
                 bias_initializer="zeros", **kwargs):
        super().__init__(**kwargs)
        self.num_heads = num_heads
        self.dropout = dropout
        self.implementation = implementation
        self.causal = causal
        self.kernel_initializer = keras.initializers.get(kernel_initializer)
        self.bias_initializer = keras.initializers.get(bias_initializer)

    def build(self, inputs_shape):
        self.hidden_dim = inputs_shape[-1]  # the model width H
        if self.hidden_dim % self.num_heads:
            raise ValueError(f"The input's last axis, hidden_dim={self.hidden_dim}, must be divisible by "
                             f"num_heads={self.num_heads}: each head gets hidden_dim / num_heads dimensions.")
        self.head_dim = self.hidden_dim // self.num_heads
        self.query_key_value = dense(self, 3 * self.hidden_dim, "query_key_value")
        self.query_key_value.build(inputs_shape)
        self.output_dense = dense(self, self.hidden_dim, "output")
        self.output_dense.build((*inputs_shape[:-1], self.hidden_dim))
        self.dropout_layer = keras.layers.Dropout(self.dropout, name="attention_dropout", dtype=self.dtype_policy)
        self.built = True

    def call(self, x, padding_mask=None, training=None, return_attention_scores=False, query_positions=None):
        batch_size, sequence_length = ops.shape(x)[0], ops.shape(x)[1]
        qkv = self.query_key_value(x)  # (batch, seq, 3 * hidden)
        qkv = ops.reshape(qkv, (batch_size, sequence_length, 3, self.num_heads, self.head_dim))
        if padding_mask is None:
            padding_mask = ops.ones((batch_size, sequence_length), "int32")
        mask = attention_mask_from_padding(padding_mask, causal=self.causal, query_positions=query_positions)

        use_fused = (self.implementation == "fused" and not return_attention_scores
                     and not (training and self.dropout > 0))
        # `unstack` rather than three slices: its gradient is one `stack`, theirs three zero-filled copies.
        if use_fused:
            query, key, value = ops.unstack(qkv, 3, axis=2)  # each (batch, seq, heads, head_dim)
            if query_positions is not None:
                query = gather_positions(query, query_positions, axis=1)  # (batch, n, heads, head_dim)
            context = ops.dot_product_attention(query, key, value, mask=mask, scale=1 / math.sqrt(self.head_dim))
            probabilities = None
        else:
            qkv = ops.transpose(qkv, (2, 0, 3, 1, 4))  # (3, batch, heads, seq, head_dim): one transpose for all
            query, key, value = ops.unstack(qkv, 3, axis=0)
            if query_positions is not None:
                query = gather_positions(query, query_positions, axis=2)  # (batch, heads, n, head_dim)
            context, probabilities = self._explicit_attention(query, key, value, mask, training)
        context = ops.reshape(context, (batch_size, -1, self.hidden_dim))  # (batch, seq or n, hidden)
        output = self.output_dense(context)
        return (output, probabilities) if return_attention_scores else output

    def _explicit_attention(self, query, key, value, mask, training):
        query = query * ops.cast(1 / math.sqrt(self.head_dim), query.dtype)  # scaling Q is cheaper than Q K^T
        scores = ops.einsum("bhqd,bhkd->bhqk", query, key)  # (batch, heads, query, key)
        scores = ops.cast(scores, "float32")  # softmax in float32, also under mixed precision
        scores = ops.where(mask, scores, -1e9)
        probabilities = ops.cast(ops.softmax(scores, axis=-1), self.compute_dtype)
        context = ops.matmul(self.dropout_layer(probabilities, training=training), value)  # (b, heads, query, d)
        return ops.transpose(context, (0, 2, 1, 3)), probabilities  # (batch, query, heads, head_dim)

    def get_config(self):
        config = super().get_config()
        config.update(num_heads=self.num_heads, dropout=self.dropout, implementation=self.implementation,
                      causal=self.causal, kernel_initializer=keras.initializers.serialize(self.kernel_initializer),
                      bias_initializer=keras.initializers.serialize(self.bias_initializer))
        return config


@keras.saving.register_keras_serializable(package="bertlib")
class TransformerEncoderBlock(keras.layers.Layer):
    """One encoder block, post-LayerNorm as in the paper and the original Transformer (§3).

    x = LayerNorm(x + Dropout(SelfAttention(x)))
    x = LayerNorm(x + Dropout(Dense(GELU(Dense(x)))))

    The width H is the last axis of the input, read in `build()` (as keras-hub's `TransformerEncoder`).

    Args:
        num_heads: int. A.
        intermediate_dim: int. Feed-forward width, 4H in the paper.
        dropout: float, defaults to 0.1. layer_norm_epsilon: float, defaults to 1e-12.
        attention: "explicit" or "fused"; causal: bool, defaults to False. See `MultiHeadSelfAttention`.
        activation: "gelu" (exact, defaults) or "gelu_approximate" (tanh form).
        kernel_initializer: of every dense kernel, defaults to None: BERT's `TruncatedNormal(stddev=0.02)`.
        bias_initializer: defaults to "zeros".

    Call arguments: those of `MultiHeadSelfAttention`. With `query_positions` the block's output is computed only
    there, (batch, n, hidden): every position still serves as a key and a value, so the numbers are the full block's.

    Example:
    ```python
    block = TransformerEncoderBlock(num_heads=2, intermediate_dim=32)
    block(np.ones((2, 5, 8)), padding_mask=np.ones((2, 5))).shape  # (2, 5, 8)
    ```
    """

    def __init__(self, num_heads, intermediate_dim, *, dropout=0.1, layer_norm_epsilon=1e-12, attention="explicit",
                 activation="gelu", causal=False, kernel_initializer=None, bias_initializer="zeros", **kwargs):
        super().__init__(**kwargs)
        self.num_heads = num_heads
        self.intermediate_dim = intermediate_dim
        self.activation = activation
        self.causal = causal
        self.dropout = dropout
        self.layer_norm_epsilon = layer_norm_epsilon
        self.attention = attention
        self.kernel_initializer = keras.initializers.get(kernel_initializer)
        self.bias_initializer = keras.initializers.get(bias_initializer)

    def build(self, inputs_shape):
        hidden_dim = inputs_shape[-1]  # the model width H
        self.self_attention = MultiHeadSelfAttention(
            self.num_heads, dropout=self.dropout, implementation=self.attention, causal=self.causal,
            kernel_initializer=self.kernel_initializer, bias_initializer=self.bias_initializer,
            name="self_attention", dtype=self.dtype_policy)
        self.self_attention.build(inputs_shape)
        self.attention_layer_norm = keras.layers.LayerNormalization(
            epsilon=self.layer_norm_epsilon, name="attention_layer_norm", dtype=self.dtype_policy)
        self.attention_layer_norm.build(inputs_shape)
        self.intermediate_dense = dense(self, self.intermediate_dim, "intermediate")
        self.intermediate_dense.build(inputs_shape)
        self.output_dense = dense(self, hidden_dim, "output")
        self.output_dense.build((*inputs_shape[:-1], self.intermediate_dim))
        self.output_layer_norm = keras.layers.LayerNormalization(
            epsilon=self.layer_norm_epsilon, name="output_layer_norm", dtype=self.dtype_policy)
        self.output_layer_norm.build(inputs_shape)
        self.dropout_layer = keras.layers.Dropout(self.dropout, name="dropout", dtype=self.dtype_policy)
        self.built = True

    def call(self, x, padding_mask=None, training=None, return_attention_scores=False, query_positions=None):
        attended = self.self_attention(x, padding_mask=padding_mask, training=training,
                                       return_attention_scores=return_attention_scores,
                                       query_positions=query_positions)
        if return_attention_scores:
            attended, probabilities = attended
        if query_positions is not None:
            x = gather_positions(x, query_positions)  # the residual stream at the same positions
        x = self.attention_layer_norm(x + self.dropout_layer(attended, training=training))
        hidden = self.intermediate_dense(x)  # (batch, seq, 4H)
        hidden = ops.gelu(hidden, approximate=self.activation == "gelu_approximate")
        x = self.output_layer_norm(x + self.dropout_layer(self.output_dense(hidden), training=training))
        return (x, probabilities) if return_attention_scores else x  # (batch, seq, hidden)

    def get_config(self):
        config = super().get_config()
        config.update(num_heads=self.num_heads, intermediate_dim=self.intermediate_dim, dropout=self.dropout,
                      layer_norm_epsilon=self.layer_norm_epsilon, attention=self.attention,
                      activation=self.activation, causal=self.causal,
                      kernel_initializer=keras.initializers.serialize(self.kernel_initializer),
                      bias_initializer=keras.initializers.serialize(self.bias_initializer))
        return config
