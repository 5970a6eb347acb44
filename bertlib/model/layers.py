"""The three layers of a BERT encoder, in the order the paper uses them (§3, figure 2).

Embeddings -> self-attention -> encoder block. Everything is written with `keras.ops`, so the same code
runs on the TensorFlow, JAX and PyTorch backends.

Each layer follows the Keras layer contract as keras-hub's do: its sublayers are built in `build()` from the
input shape (the model width H is read there, never passed in), and `get_config()` holds every constructor
argument, initializers included, so `from_config(get_config())` rebuilds the layer and a `.keras` file reloads it.
"""

import json
import math

import keras
import numpy as np
from keras import ops

import bertlib

# Every weight matrix of BERT starts as a truncated normal with standard deviation 0.02 (the released code).
# Written as Keras' serialized form, so a layer's config holds it without drawing a seed here.
BERT_INITIALIZER = {"module": "keras.initializers", "class_name": "TruncatedNormal",
                    "config": {"mean": 0.0, "stddev": 0.02, "seed": None}, "registered_name": None}


def weight_initializer():
    """A new `TruncatedNormal(stddev=0.02)`, the initializer of every weight matrix of BERT."""
    return keras.initializers.TruncatedNormal(stddev=0.02)


def serialize_initializer(initializer):
    """An initializer argument (None for BERT's, a name, a config dict or an instance) as a config to keep."""
    if initializer is None:
        initializer = BERT_INITIALIZER
    elif isinstance(initializer, keras.initializers.Initializer):
        initializer = keras.initializers.serialize(initializer)
    return json.loads(json.dumps(initializer))  # a name or a plain config: made in build(), see make_initializer


def plain(config):
    """A plain copy of a kept initializer config (Keras' tracker wraps a dict kept as a layer attribute)."""
    return json.loads(json.dumps(config))


def make_initializer(config):
    """A fresh initializer from a kept config. One per `build()`: an unseeded random initializer draws its seed
    when it is made, so sublayers that share one instance are drawn from the same seed."""
    return keras.initializers.get(plain(config))


@keras.saving.register_keras_serializable(package="bertlib")
class Dropout(keras.layers.Dropout):
    """`keras.layers.Dropout` whose random numbers are drawn in float32, also under mixed precision.

    TensorFlow's CPU kernels draw bfloat16 random numbers about 2x slower than float32 ones (bench/RESULTS.md,
    issue 17), so a mixed-precision layer draws a float32 mask and multiplies its 16-bit input by it. In
    float32 this is exactly Keras' layer, same random stream. `noise_shape` is not supported.

    Example:
    >>> Dropout(0.1, name="dropout")(x, training=True)
    """

    def __init__(self, rate, seed=None, **kwargs):
        if kwargs.get("noise_shape") is not None:
            raise ValueError(f"bertlib.model.layers.Dropout drops each element on its own; noise_shape="
                             f"{kwargs['noise_shape']} is not supported (use keras.layers.Dropout).")
        super().__init__(rate, seed=seed, **kwargs)

    def call(self, inputs, training=False):
        if not training or self.rate == 0 or self.compute_dtype == "float32":
            return super().call(inputs, training=training)
        keep = keras.random.uniform(ops.shape(inputs), seed=self.seed_generator) >= self.rate  # float32 draw
        return inputs * ops.cast(keep, inputs.dtype) * ops.cast(1 / (1 - self.rate), inputs.dtype)


@keras.saving.register_keras_serializable(package="bertlib")
class BertEmbedding(keras.layers.Layer):
    """Token + learned position + segment embeddings, then LayerNorm and dropout (§3, figure 2).

    Its inputs are ids, so the width of its output, H, is an argument here (as keras-hub's
    `TokenAndPositionEmbedding` takes `embedding_dim`); the layers after it read H from their input.

    Args:
        vocabulary_size: int. Rows of the token embedding (30,522 for the uncased vocabulary).
        hidden_dim: int. The paper's H.
        max_sequence_length: int, defaults to 512. Rows of the learned position embedding.
        type_vocab_size: int, defaults to 2. Segments A and B.
        dropout: float, defaults to 0.1.
        layer_norm_epsilon: float, defaults to 1e-12.
        embeddings_initializer: initializer of the three tables, defaults to `TruncatedNormal(stddev=0.02)`.

    Example:
    >>> layer = BertEmbedding(vocabulary_size=100, hidden_dim=8)
    >>> layer(np.zeros((2, 5), "int32"), np.zeros((2, 5), "int32")).shape
    (2, 5, 8)
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
        self.embeddings_initializer = serialize_initializer(embeddings_initializer)

    def build(self, token_ids_shape, segment_ids_shape=None):
        initializer = make_initializer(self.embeddings_initializer)
        self.token_embedding = keras.layers.Embedding(
            self.vocabulary_size, self.hidden_dim, embeddings_initializer=initializer, name="token_embedding",
            dtype=self.dtype_policy)
        self.token_embedding.build(token_ids_shape)
        self.position_embedding = self.add_weight(
            shape=(self.max_sequence_length, self.hidden_dim), initializer=initializer, name="position_embedding")
        self.segment_embedding = keras.layers.Embedding(
            self.type_vocab_size, self.hidden_dim, embeddings_initializer=initializer, name="segment_embedding",
            dtype=self.dtype_policy)
        self.segment_embedding.build(token_ids_shape)
        self.layer_norm = keras.layers.LayerNormalization(
            epsilon=self.layer_norm_epsilon, name="layer_norm", dtype=self.dtype_policy)
        self.layer_norm.build((*token_ids_shape, self.hidden_dim))
        self.dropout_layer = Dropout(self.dropout, name="dropout", dtype=self.dtype_policy)
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
                      embeddings_initializer=plain(self.embeddings_initializer))
        return config


def attention_mask_from_padding(padding_mask, causal=False, query_positions=None):
    """(batch, seq) padding mask -> boolean mask that broadcasts to (batch, heads, query, key).

    Without `causal`, every query may look at every real key: this is what makes BERT bidirectional (§3.1),
    only padding is hidden. With `causal`, query i also may not look at keys j > i (a left-to-right model).
    `query_positions` (batch, n) says where the queries sit when they are not every position.
    """
    check_padding_mask_values(padding_mask, only_float=True)
    mask = ops.cast(padding_mask, "bool")[:, None, None, :]  # (batch, 1, 1, key)
    if causal:
        keys = ops.arange(ops.shape(padding_mask)[1])
        queries = keys[None] if query_positions is None else ops.cast(query_positions, keys.dtype)  # (b, q)
        mask = ops.logical_and(mask, queries[:, None, :, None] >= keys[None, None, None, :])  # (b, 1, q, k)
    return mask


def concrete_values(tensor):
    """The values of a numpy array or eager tensor; None for a symbolic one (inside a compiled function)."""
    if isinstance(tensor, np.ndarray):
        return tensor
    try:
        return np.asarray(ops.convert_to_numpy(tensor))
    except Exception:  # a symbolic tensor or a tracer: its values are not known yet
        return None


def check_padding_mask_values(padding_mask, only_float=False, owner="padding_mask"):
    """Refuse a padding mask holding anything but 0 and 1 (or False and True), when its values are known.

    Casting to bool reads NaN or 0.5 as a real token, so such a mask would give finite output instead of
    failing. Inside a compiled function (fit, jit) the values are not known and nothing is checked.
    `only_float` looks only at float masks, the only ones that can hold NaN or a fraction: the attention layers
    check so, to keep an eager integer mask from being copied to the host by every layer (the backbone checks
    integer masks once, at its input).
    """
    dtype = keras.backend.standardize_dtype(getattr(padding_mask, "dtype", None) or "float32")
    if only_float and not keras.backend.is_float_dtype(dtype):
        return
    values = concrete_values(padding_mask)
    if values is None or not values.size:
        return
    bad = ~((values == 0) | (values == 1))  # NaN compares unequal to both
    if bad.any():
        raise ValueError(f"{owner} holds {int(bad.sum())} value(s) that are not 0 or 1, e.g. "
                         f"{values[bad].reshape(-1)[0].item()!r}; expected 1 for a real token and 0 for padding "
                         f"(this mask is {dtype}; bool masks are taken too).")


def gather_positions(x, positions, axis=1):
    """x[b, ..., positions[b, i], ...]: each example's rows at `positions` (batch, n), taken along `axis`.

    One flat `take` over the leading axes (index = b * stride + ... + position), not `take_along_axis`: that
    broadcasts the indices to x's whole shape and, on TensorFlow, transposes x there and back (in the tiny
    course model those transposes cost more than the block's matmuls).
    """
    shape = ops.shape(x)
    index = ops.cast(positions, "int32")  # (batch, n) -> (batch, 1, ..., n): broadcasts over axes 1..axis-1
    for _ in range(axis - 1):
        index = ops.expand_dims(index, 1)
    stride = shape[axis]
    for dim in range(axis - 1, -1, -1):  # the offset of each leading axis' rows in the flattened x
        offsets = ops.arange(shape[dim], dtype="int32") * stride
        index = index + ops.reshape(offsets, [-1 if d == dim else 1 for d in range(axis + 1)])
        stride = stride * shape[dim]
    flat = ops.reshape(x, (-1, *x.shape[axis + 1:]))  # (batch * ... * seq, rest)
    return ops.take(flat, index, axis=0)  # (batch, ..., n, rest)


def gelu(x, approximate=False):
    """GELU (Hendrycks and Gimpel 2016): x * Phi(x), exact (erf) or in its tanh approximation.

    The tanh form 0.5 x (1 + tanh(z)), z = sqrt(2 / pi) (x + 0.044715 x^3), is written as the same function
    x * sigmoid(2 z) (since 1 + tanh(z) = 2 sigmoid(2 z)): fewer elementwise passes forward and backward than
    Keras' form (which takes x^3 with `pow`); it differs from it by float rounding only (below 1e-6). The exact
    form is Keras' own (on TensorFlow 0.5 x erfc(-x / sqrt 2)).
    """
    if not approximate:
        return keras.activations.gelu(x, approximate=False)
    x = ops.convert_to_tensor(x)
    inner = x * ops.cast(2 * math.sqrt(2 / math.pi), x.dtype) * (1 + ops.cast(0.044715, x.dtype) * ops.square(x))
    return x * ops.sigmoid(inner)


@keras.saving.register_keras_serializable(package="bertlib")
class MultiHeadSelfAttention(keras.layers.Layer):
    """Multi-head scaled dot-product self-attention with a padding mask (Vaswani et al. 2017; BERT §3).

    One dense layer computes queries, keys and values together (a single matmul, as nanoGPT's `c_attn`);
    heads are split by reshaping, so the weights are the same as three separate projections. The width H is
    the last axis of the input, read in `build()`; it must be divisible by `num_heads`.

    Args:
        num_heads: int. The paper's A.
        dropout: float, defaults to 0.1. Applied to the attention probabilities.
        implementation: "explicit" or "fused", defaults to "explicit". "explicit" writes
            softmax(Q K^T / sqrt(d)) V out and can return the probabilities; "fused" calls
            `keras.ops.dot_product_attention` (flash kernels where the backend has them). A fused kernel
            cannot drop attention probabilities, so while training with dropout > 0 the layer uses the
            explicit path; at inference both give the same numbers.
        causal: bool, defaults to False. Hide keys to the right of each query (left-to-right attention).
        kernel_initializer: initializer of both projections, defaults to `TruncatedNormal(stddev=0.02)`.
        bias_initializer: defaults to "zeros".

    Call arguments: `x` (batch, seq, hidden), `padding_mask` (batch, seq), `training`,
    `return_attention_scores`, and `query_positions` (batch, n): when given, only the queries at those
    positions are computed (keys and values still come from every position) and the output is
    (batch, n, hidden). The pretrainer's last block uses it: its heads read only a few positions.

    Example:
    >>> layer = MultiHeadSelfAttention(num_heads=2)
    >>> layer(np.ones((2, 5, 8)), padding_mask=np.ones((2, 5))).shape
    (2, 5, 8)
    """

    def __init__(self, num_heads, *, dropout=0.1, implementation="explicit", causal=False, kernel_initializer=None,
                 bias_initializer="zeros", **kwargs):
        super().__init__(**kwargs)
        self.num_heads = num_heads
        self.dropout = dropout
        self.implementation = implementation
        self.causal = causal
        self.kernel_initializer = serialize_initializer(kernel_initializer)
        self.bias_initializer = serialize_initializer(bias_initializer)

    def build(self, inputs_shape):
        self.hidden_dim = inputs_shape[-1]  # the model width H
        if self.hidden_dim % self.num_heads:
            raise ValueError(f"The input's last axis, hidden_dim={self.hidden_dim}, must be divisible by "
                             f"num_heads={self.num_heads}: each head gets hidden_dim / num_heads dimensions.")
        self.head_dim = self.hidden_dim // self.num_heads
        initializer = make_initializer(self.kernel_initializer)
        bias_initializer = plain(self.bias_initializer)
        self.query_key_value = keras.layers.Dense(
            3 * self.hidden_dim, kernel_initializer=initializer, bias_initializer=bias_initializer,
            name="query_key_value", dtype=self.dtype_policy)
        self.query_key_value.build(inputs_shape)
        self.output_dense = keras.layers.Dense(
            self.hidden_dim, kernel_initializer=initializer, bias_initializer=bias_initializer,
            name="output", dtype=self.dtype_policy)
        self.output_dense.build((*inputs_shape[:-1], self.hidden_dim))
        self.dropout_layer = Dropout(self.dropout, name="attention_dropout", dtype=self.dtype_policy)
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
        # `unstack`, not slicing: the gradient of three slices is three zero-filled copies of the whole tensor,
        # the gradient of `unstack` one `stack` (measured: attention 37% slower with slices, no XLA).
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
                      causal=self.causal, kernel_initializer=plain(self.kernel_initializer),
                      bias_initializer=plain(self.bias_initializer))
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
        dropout: float, defaults to 0.1.
        layer_norm_epsilon: float, defaults to 1e-12.
        attention: "explicit" or "fused", see `MultiHeadSelfAttention`.
        activation: "gelu" (exact, defaults) or "gelu_approximate" (tanh form).
        causal: bool, defaults to False. Left-to-right attention (see `MultiHeadSelfAttention`).
        kernel_initializer: initializer of every dense kernel, defaults to `TruncatedNormal(stddev=0.02)`.
        bias_initializer: defaults to "zeros".

    Call arguments: `x`, `padding_mask`, `training`, `return_attention_scores`, and `query_positions`
    (batch, n): compute the block's output only at those positions, (batch, n, hidden). Every position still
    serves as a key and a value, so the outputs there are exactly those of the full block.

    Example:
    >>> block = TransformerEncoderBlock(num_heads=2, intermediate_dim=32)
    >>> block(np.ones((2, 5, 8)), padding_mask=np.ones((2, 5))).shape
    (2, 5, 8)
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
        self.kernel_initializer = serialize_initializer(kernel_initializer)
        self.bias_initializer = serialize_initializer(bias_initializer)

    def build(self, inputs_shape):
        hidden_dim = inputs_shape[-1]  # the model width H
        initializer = make_initializer(self.kernel_initializer)
        self.self_attention = MultiHeadSelfAttention(
            self.num_heads, dropout=self.dropout, implementation=self.attention, causal=self.causal,
            kernel_initializer=plain(self.kernel_initializer), bias_initializer=plain(self.bias_initializer),
            name="self_attention", dtype=self.dtype_policy)
        self.self_attention.build(inputs_shape)
        self.attention_layer_norm = keras.layers.LayerNormalization(
            epsilon=self.layer_norm_epsilon, name="attention_layer_norm", dtype=self.dtype_policy)
        self.attention_layer_norm.build(inputs_shape)
        bias_initializer = plain(self.bias_initializer)
        self.intermediate_dense = keras.layers.Dense(
            self.intermediate_dim, kernel_initializer=initializer, bias_initializer=bias_initializer,
            name="intermediate", dtype=self.dtype_policy)
        self.intermediate_dense.build(inputs_shape)
        self.output_dense = keras.layers.Dense(
            hidden_dim, kernel_initializer=initializer, bias_initializer=bias_initializer, name="output",
            dtype=self.dtype_policy)
        self.output_dense.build((*inputs_shape[:-1], self.intermediate_dim))
        self.output_layer_norm = keras.layers.LayerNormalization(
            epsilon=self.layer_norm_epsilon, name="output_layer_norm", dtype=self.dtype_policy)
        self.output_layer_norm.build(inputs_shape)
        self.dropout_layer = Dropout(self.dropout, name="dropout", dtype=self.dtype_policy)
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
        hidden = gelu(self.intermediate_dense(x), approximate=self.activation == "gelu_approximate")  # (b, s, 4H)
        x = self.output_layer_norm(x + self.dropout_layer(self.output_dense(hidden), training=training))
        return (x, probabilities) if return_attention_scores else x  # (batch, seq, hidden)

    def get_config(self):
        config = super().get_config()
        config.update(num_heads=self.num_heads, intermediate_dim=self.intermediate_dim, dropout=self.dropout,
                      layer_norm_epsilon=self.layer_norm_epsilon, attention=self.attention,
                      activation=self.activation, causal=self.causal,
                      kernel_initializer=plain(self.kernel_initializer),
                      bias_initializer=plain(self.bias_initializer))
        return config


# Every bertlib class registered with Keras (bertlib/__init__.py), now that the layers bertlib.model.backbone is built on
# exist: in a process whose first bertlib import is this module, Keras' import above came too early for that.
bertlib.register_keras_serializables()
