"""BERT's forward pass in numpy, top to bottom: the reference bertlib's tests (and the course) compare with.

This is the computation of the paper's §3 (figure 2) written with nothing but numpy, on the arrays a Hugging Face
checkpoint stores. It uses no Keras and no bertlib layer, so when bertlib's layers agree with it, two independent
codes agree. Read it in this order: the small pieces (`linear`, `layer_norm`, `gelu`, `softmax`), then
`embeddings` -> `self_attention` -> `feed_forward` -> `encoder_layer` -> `bert`, then the two pretraining heads
(`masked_lm_logits`, §3.1 Task #1, and `next_sentence_logits`, §3.1 Task #2), and last `decoder_step`: the same
blocks run left to right one token at a time with a key-value cache, what a causal model (GPT) can do and BERT
cannot.

**Weights** are a dict `{name: numpy array}` with Hugging Face's names and layouts, exactly what
`safetensors.numpy.load_file("model.safetensors")` returns for a BERT checkpoint. A dense layer `name` is
`name.weight`, shaped (out, in) as PyTorch keeps it, and `name.bias`; a LayerNorm `name` is `name.weight` (the
gain) and `name.bias`. Each function reads the weights of its own part under the names that part has in a
checkpoint, so `sub(weights, "encoder.layer.0.")` gives `encoder_layer` what it needs. For a bertlib layer,
`bertlib.model.checkpoint.hf_weights(layer)` gives the same dict: it goes through `bertlib.model.checkpoint.weight_map`, the one
declared mapping from bertlib's variables to these names (the table is in `bertlib/model/checkpoint.py`).

**Steps.** Pass `steps={}` to keep the intermediate values by name (`"scores"`, `"probabilities"`, ...), to compare
another implementation with step by step (the course's `locate.first_divergence` does).

Everything is computed in the dtype of the inputs; pass float64 arrays (`hf_weights` returns float64) for a
reference precise to about 1e-12.

Example:
>>> from safetensors.numpy import load_file
>>> weights = load_file("model.safetensors")  # a Hugging Face BERT folder's weights
>>> outputs = bert(weights, BertConfig(num_layers=6, num_heads=12, ...), features)
>>> outputs["sequence_output"].shape                     # (batch, seq, hidden)
>>> bert(hf_weights(backbone), backbone.config, features)  # the same pass on a bertlib backbone's weights
"""

import math

import numpy as np

__all__ = ["MASKED", "attention_mask", "bert", "decoder_step", "embeddings", "encoder_layer", "feed_forward", "gelu",
           "layer_norm", "linear", "masked_lm_logits", "merge_heads", "next_sentence_logits", "self_attention",
           "softmax", "split_heads", "sub"]

MASKED = -1e9  # the score a hidden key gets before the softmax: exp(-1e9 - max) is exactly 0


# --- the small pieces --------------------------------------------------------------------------------------------

def sub(weights, prefix):
    """The weights under `prefix`, with the prefix removed: `sub(weights, "encoder.layer.0.")`."""
    return {name[len(prefix):]: value for name, value in weights.items() if name.startswith(prefix)}


def linear(x, weights, name):
    """A dense layer: x W^T + b, with W stored (out, in) as in the checkpoint."""
    return x @ weights[f"{name}.weight"].T + weights[f"{name}.bias"]


def layer_norm(x, weights, name, epsilon=1e-12):
    """Normalise each vector over its last axis to mean 0 and variance 1, then scale and shift (Ba et al. 2016)."""
    mean = x.mean(axis=-1, keepdims=True)
    variance = x.var(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(variance + epsilon) * weights[f"{name}.weight"] + weights[f"{name}.bias"]


def gelu(x, approximate=False):
    """GELU (Hendrycks & Gimpel 2016), cited in appendix A.2: x * Phi(x), or its tanh approximation."""
    if approximate:  # the original TensorFlow code and keras-hub
        return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x**3)))
    from scipy.special import erf  # numpy has no erf

    return 0.5 * x * (1.0 + erf(x / math.sqrt(2.0)))


def softmax(scores, axis=-1):
    """exp(s) / sum(exp(s)), with the maximum subtracted first so that exp never overflows."""
    weights = np.exp(scores - scores.max(axis=axis, keepdims=True))
    return weights / weights.sum(axis=axis, keepdims=True)


def _keep(steps, prefix="", **values):
    if steps is not None:
        steps.update({prefix + name: value for name, value in values.items()})


# --- the backbone -----------------------------------------------------------------------------------------------

def embeddings(weights, token_ids, segment_ids, epsilon=1e-12, steps=None, first_position=0):
    """Token + position + segment embeddings, then LayerNorm (§3, figure 2): (batch, seq) ids -> (batch, seq, H).

    Weights: Hugging Face's `BertEmbeddings` (`word_embeddings.weight`, `position_embeddings.weight`,
    `token_type_embeddings.weight`, `LayerNorm.*`). Steps: `sum`, `output`. `first_position` is the position of
    the first token (0 for a whole sequence; later for the new tokens of `decoder_step`).
    """
    sequence_length = token_ids.shape[1]
    positions = slice(first_position, first_position + sequence_length)
    summed = (weights["word_embeddings.weight"][token_ids]  # (batch, seq, H): one row per token
              + weights["position_embeddings.weight"][positions][None]  # learned positions
              + weights["token_type_embeddings.weight"][segment_ids])  # segment A (0) or B (1)
    output = layer_norm(summed, weights, "LayerNorm", epsilon)
    _keep(steps, sum=summed, output=output)
    return output


def split_heads(x, num_heads):
    """(batch, seq, H) -> (batch, heads, seq, H / heads): each head sees its own slice of the features."""
    batch, sequence_length, hidden = x.shape
    return x.reshape(batch, sequence_length, num_heads, hidden // num_heads).transpose(0, 2, 1, 3)


def merge_heads(x):
    """(batch, heads, seq, head_dim) -> (batch, seq, heads * head_dim): the heads side by side again."""
    batch, heads, sequence_length, head_dim = x.shape
    return x.transpose(0, 2, 1, 3).reshape(batch, sequence_length, heads * head_dim)


def attention_mask(padding_mask, causal=False, queries=None):
    """Which keys each query may see: (batch, 1, query, key) booleans, broadcast over the heads.

    BERT is bidirectional (§3.1): every query sees every real key, only padding is hidden. `causal` also hides
    the keys to the right of each query, as a left-to-right model does (§5.1's LTR baseline). `queries` (default:
    as many as keys) says how many queries there are: they are the last positions, the keys before them cached.
    """
    real_keys = np.asarray(padding_mask).astype(bool)[:, None, None, :]  # (batch, 1, 1, key)
    if not causal:
        return real_keys
    keys = real_keys.shape[-1]
    queries = keys if queries is None else queries
    query_positions = np.arange(keys - queries, keys)
    left = query_positions[:, None] >= np.arange(keys)[None, :]  # (query, key)
    return real_keys & left[None, None]


def self_attention(weights, x, padding_mask, num_heads, causal=False, steps=None, past=None):
    """Multi-head scaled dot-product self-attention (Vaswani et al. 2017, BERT §3): (batch, seq, H) -> same.

    softmax(Q K^T / sqrt(d) with hidden keys at -1e9) V, for every head, then the output projection.
    Weights: Hugging Face's `BertAttention` without its LayerNorm (`self.query.*`, `self.key.*`, `self.value.*`,
    `output.dense.*`). Steps: `query`, `key`, `value` (batch, seq, H), `scores`, `probabilities`
    (batch, heads, query, key), `context` (batch, seq, H), `output`.

    `past`: optional `{"key": (batch, t, H), "value": (batch, t, H)}` of t earlier positions (a key-value cache);
    the new positions' keys and values are appended to them, `padding_mask` then covers all t + seq keys, and the
    steps `key` and `value` hold all of them (the cache for the next call).
    """
    query, key, value = (linear(x, weights, f"self.{name}") for name in ("query", "key", "value"))
    if past is not None:
        key = np.concatenate([past["key"], key], axis=1)  # (batch, t + seq, H)
        value = np.concatenate([past["value"], value], axis=1)
    head_dim = x.shape[-1] // num_heads
    scores = split_heads(query, num_heads) @ split_heads(key, num_heads).transpose(0, 1, 3, 2) / math.sqrt(head_dim)
    hidden = ~attention_mask(padding_mask, causal, queries=x.shape[1])
    probabilities = softmax(np.where(hidden, MASKED, scores), axis=-1)  # each query's weights over the keys
    context = merge_heads(probabilities @ split_heads(value, num_heads))  # (batch, seq, H)
    output = linear(context, weights, "output.dense")
    _keep(steps, query=query, key=key, value=value, scores=scores, probabilities=probabilities, context=context,
          output=output)
    return output


def feed_forward(weights, x, activation="gelu", epsilon=1e-12, steps=None):
    """The block's second half: LayerNorm(x + W2 GELU(W1 x)), position by position (§3; 4H wide inside).

    Weights: `intermediate.dense.*`, `output.dense.*`, `output.LayerNorm.*` of a `BertLayer`.
    Steps: `intermediate`, `activation`, `ffn_output`, `output`. `activation` is "gelu" (exact) or
    "gelu_approximate" (tanh form), as `BertConfig.activation`.
    """
    intermediate = linear(x, weights, "intermediate.dense")  # (batch, seq, 4H)
    activated = gelu(intermediate, approximate=activation == "gelu_approximate")
    ffn_output = linear(activated, weights, "output.dense")  # (batch, seq, H)
    output = layer_norm(x + ffn_output, weights, "output.LayerNorm", epsilon)  # residual, then LayerNorm
    _keep(steps, intermediate=intermediate, activation=activated, ffn_output=ffn_output, output=output)
    return output


def encoder_layer(weights, x, padding_mask, num_heads, activation="gelu", epsilon=1e-12, causal=False,
                  steps=None, past=None):
    """One post-LayerNorm encoder block (§3): attention and feed-forward, each with a residual and a LayerNorm.

        x = LayerNorm(x + SelfAttention(x))
        x = LayerNorm(x + FeedForward(x))

    Weights: Hugging Face's `BertLayer`. Steps: `attention.<self_attention's steps>`, `attention_layer_norm`,
    then `feed_forward`'s. `past`: this layer's key-value cache (see `self_attention`).
    """
    attention_steps = None if steps is None else {}
    attended = self_attention(sub(weights, "attention."), x, padding_mask, num_heads, causal, attention_steps, past)
    x = layer_norm(x + attended, weights, "attention.output.LayerNorm", epsilon)
    _keep(steps, "attention.", **(attention_steps or {}))
    _keep(steps, attention_layer_norm=x)
    return feed_forward(weights, x, activation, epsilon, steps)


def bert(weights, config, inputs, steps=None):
    """The BERT backbone: embeddings, `config.num_layers` encoder blocks, and the tanh pooler on [CLS] (§3).

    Args:
        weights: Hugging Face's `BertModel` names (a leading `bert.`, as in `BertForPreTraining`, is accepted).
        config: a `bertlib.BertConfig` (or anything with `num_layers`, `num_heads`, `activation`,
            `layer_norm_epsilon` and `causal`).
        inputs: dict of (batch, seq) integer arrays `token_ids`, `segment_ids`, `padding_mask`.
        steps: optional dict; receives `embedding.<step>`, `encoder_block_<i>.<step>`, `sequence_output` and
            `pooled_output` (the names of bertlib's layers).

    Returns:
        dict with `sequence_output` (batch, seq, H) and `pooled_output` (batch, H), the paper's C.
    """
    if any(name.startswith("bert.") for name in weights):
        weights = sub(weights, "bert.")
    epsilon, causal = config.layer_norm_epsilon, getattr(config, "causal", False)
    stored = {int(name.split(".")[2]) for name in weights if name.startswith("encoder.layer.")}
    if stored != set(range(config.num_layers)):
        raise ValueError(f"The weights hold encoder layers {sorted(stored)}; config.num_layers is {config.num_layers}.")
    layer_steps = None if steps is None else {}
    x = embeddings(sub(weights, "embeddings."), inputs["token_ids"], inputs["segment_ids"], epsilon, layer_steps)
    _keep(steps, "embedding.", **(layer_steps or {}))
    for index in range(config.num_layers):
        layer_steps = None if steps is None else {}
        x = encoder_layer(sub(weights, f"encoder.layer.{index}."), x, inputs["padding_mask"], config.num_heads,
                          config.activation, epsilon, causal, layer_steps)
        _keep(steps, f"encoder_block_{index}.", **(layer_steps or {}))
    pooled = np.tanh(linear(x[:, 0], weights, "pooler.dense"))  # the final hidden state of [CLS], transformed
    _keep(steps, sequence_output=x, pooled_output=pooled)
    return {"sequence_output": x, "pooled_output": pooled}


# --- the pretraining heads -----------------------------------------------------------------------------------------

def masked_lm_logits(weights, hidden, mask_positions=None, epsilon=1e-12, activation="gelu", steps=None):
    """Masked-LM logits (§3.1): dense + GELU + LayerNorm, then the token embedding, transposed, as the decoder.

    Args:
        weights: Hugging Face's `BertLMPredictionHead` (`transform.dense.*`, `transform.LayerNorm.*`, `bias`, and
            `decoder.weight`, which is the word-embedding table: the decoder is tied to the input embedding).
        hidden: (batch, seq, H) final hidden states.
        mask_positions: optional (batch, n) positions to predict; without it every row of `hidden` is predicted.
        steps: optional dict; receives `transform`, `activation`, `layer_norm`, `logits`.

    Returns:
        (batch, n, vocabulary) logits.
    """
    if mask_positions is not None:
        hidden = np.take_along_axis(hidden, np.asarray(mask_positions)[..., None].astype(int), axis=1)
    transform = linear(hidden, weights, "transform.dense")
    activated = gelu(transform, approximate=activation == "gelu_approximate")
    normed = layer_norm(activated, weights, "transform.LayerNorm", epsilon)
    logits = normed @ weights["decoder.weight"].T + weights["bias"]  # (batch, n, vocabulary)
    _keep(steps, transform=transform, activation=activated, layer_norm=normed, logits=logits)
    return logits


def next_sentence_logits(weights, pooled):
    """Next-sentence logits (§3.1, Task #2) from the pooled [CLS] vector: class 0 IsNext, class 1 NotNext.

    Weights: Hugging Face's `BertOnlyNSPHead` (`seq_relationship.*`).
    """
    return linear(pooled, weights, "seq_relationship")


# --- generation: a causal model, one token at a time --------------------------------------------------------------

def decoder_step(weights, config, token_ids, cache=None):
    """The final hidden states of new tokens of a causal (left-to-right) model, reusing the earlier ones' keys and
    values: the key-value cache of a decoder such as OpenAI GPT.

    In a causal model a position sees only itself and the positions before it, so the keys and values of earlier
    positions never change when a token is appended; each layer can keep them and run only the new tokens. A
    bidirectional encoder (BERT, §3.1) cannot: every earlier position attends to the new token, so every earlier
    state changes and the whole sequence must be encoded again.

    Args:
        weights: Hugging Face's `BertModel` names, as for `bert` (`bertlib.model.checkpoint.hf_weights(backbone)`).
        config: a `bertlib.BertConfig` with `causal=True`.
        token_ids: (batch, new) integer array, the next tokens (the whole prompt on the first call, then one).
        cache: None on the first call, then the cache the previous call returned.

    Returns:
        `(hidden, cache)`: hidden is (batch, new, H), equal to the last `new` rows of `bert(...)["sequence_output"]`
        on the whole sequence so far; cache is a list with one `{"key": (batch, t, H), "value": (batch, t, H)}` per
        layer, t the number of tokens so far. Segment 0 everywhere, no padding.
    """
    if not getattr(config, "causal", False):
        raise ValueError("decoder_step needs a causal model (config.causal=True): in a bidirectional encoder every "
                         "earlier state changes when a token is appended, so there is nothing to cache.")
    if any(name.startswith("bert.") for name in weights):
        weights = sub(weights, "bert.")
    token_ids = np.asarray(token_ids)
    if token_ids.ndim != 2:
        raise ValueError(f"token_ids must be (batch, new), got shape {token_ids.shape}.")
    cache = cache or [None] * config.num_layers
    past_length = 0 if cache[0] is None else cache[0]["key"].shape[1]
    batch, new = token_ids.shape
    epsilon = config.layer_norm_epsilon
    x = embeddings(sub(weights, "embeddings."), token_ids, np.zeros_like(token_ids), epsilon,
                   first_position=past_length)
    padding_mask = np.ones((batch, past_length + new), "int32")
    extended = []
    for index, past in enumerate(cache):
        steps = {}
        x = encoder_layer(sub(weights, f"encoder.layer.{index}."), x, padding_mask, config.num_heads,
                          config.activation, epsilon, causal=True, steps=steps, past=past)
        extended.append({"key": steps["attention.key"], "value": steps["attention.value"]})
    return x, extended
