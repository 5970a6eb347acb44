"""BERT's forward pass in numpy, top to bottom: the reference the course, the locator and the tests compare with.

This is the computation of the paper's §3 (figure 2) written with nothing but numpy, on the arrays a Hugging Face
checkpoint stores. It uses no Keras and no bertlib layer, so when bertlib's layers agree with it, two independent
codes agree. Read it in this order: the small pieces (`linear`, `layer_norm`, `gelu`, `softmax`), then
`embeddings` -> `self_attention` -> `feed_forward` -> `encoder_layer` -> `bert`, then the two pretraining heads
(`masked_lm_logits`, §3.1, and `next_sentence_logits`, §3.2).

**Weights** are a dict `{name: numpy array}` with Hugging Face's names and layouts, exactly what
`safetensors.numpy.load_file("model.safetensors")` returns for a BERT checkpoint. A dense layer `name` is
`name.weight`, shaped (out, in) as PyTorch keeps it, and `name.bias`; a LayerNorm `name` is `name.weight` (the
gain) and `name.bias`. Each function reads the weights of its own part under the names that part has in a
checkpoint, so `sub(weights, "encoder.layer.0.")` gives `encoder_layer` what it needs. For a bertlib layer,
`bertlib.checkpoint.hf_weights(layer)` gives the same dict: it goes through `bertlib.checkpoint.weight_map`, the one
declared mapping from bertlib's variables to these names (the table is in `bertlib/checkpoint.py`).

**Steps.** Pass `steps={}` to keep the intermediate values by name (`"scores"`, `"probabilities"`, ...): these are
the steps `bertlib.course.locate.first_divergence` compares a learner's values with.

Everything is computed in the dtype of the inputs; pass float64 arrays (`hf_weights` returns float64) for a
reference precise to about 1e-12.

Example:
>>> from safetensors.numpy import load_file
>>> weights = load_file(str(minilm_dir / "model.safetensors"))
>>> outputs = bert(weights, BertConfig(num_layers=6, num_heads=12, ...), features)
>>> outputs["sequence_output"].shape                     # (batch, seq, hidden)
>>> bert(hf_weights(backbone), backbone.config, features)  # the same pass on a bertlib backbone's weights
"""

import math

import numpy as np

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

def embeddings(weights, token_ids, segment_ids, epsilon=1e-12, steps=None):
    """Token + position + segment embeddings, then LayerNorm (§3, figure 2): (batch, seq) ids -> (batch, seq, H).

    Weights: Hugging Face's `BertEmbeddings` (`word_embeddings.weight`, `position_embeddings.weight`,
    `token_type_embeddings.weight`, `LayerNorm.*`). Steps: `sum`, `output`.
    """
    sequence_length = token_ids.shape[1]
    summed = (weights["word_embeddings.weight"][token_ids]  # (batch, seq, H): one row per token
              + weights["position_embeddings.weight"][:sequence_length][None]  # learned positions 0..seq-1
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


def attention_mask(padding_mask, causal=False):
    """Which keys each query may see: (batch, 1, query, key) booleans, broadcast over the heads.

    BERT is bidirectional (§3.1): every query sees every real key, only padding is hidden. `causal` also hides
    the keys to the right of each query, as a left-to-right model does (§5.1's LTR baseline).
    """
    real_keys = np.asarray(padding_mask).astype(bool)[:, None, None, :]  # (batch, 1, 1, key)
    if not causal:
        return real_keys
    sequence_length = real_keys.shape[-1]
    left = np.arange(sequence_length)[:, None] >= np.arange(sequence_length)[None, :]  # (query, key)
    return real_keys & left[None, None]


def self_attention(weights, x, padding_mask, num_heads, causal=False, steps=None):
    """Multi-head scaled dot-product self-attention (Vaswani et al. 2017, BERT §3): (batch, seq, H) -> same.

    softmax(Q K^T / sqrt(d) with hidden keys at -1e9) V, for every head, then the output projection.
    Weights: Hugging Face's `BertAttention` without its LayerNorm (`self.query.*`, `self.key.*`, `self.value.*`,
    `output.dense.*`). Steps: `query`, `key`, `value` (batch, seq, H), `scores`, `probabilities`
    (batch, heads, query, key), `context` (batch, seq, H), `output`.
    """
    query, key, value = (linear(x, weights, f"self.{name}") for name in ("query", "key", "value"))
    head_dim = x.shape[-1] // num_heads
    scores = split_heads(query, num_heads) @ split_heads(key, num_heads).transpose(0, 1, 3, 2) / math.sqrt(head_dim)
    hidden = ~attention_mask(padding_mask, causal)
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
                  steps=None):
    """One post-LayerNorm encoder block (§3): attention and feed-forward, each with a residual and a LayerNorm.

        x = LayerNorm(x + SelfAttention(x))
        x = LayerNorm(x + FeedForward(x))

    Weights: Hugging Face's `BertLayer`. Steps: `attention.<self_attention's steps>`, `attention_layer_norm`,
    then `feed_forward`'s.
    """
    attention_steps = None if steps is None else {}
    attended = self_attention(sub(weights, "attention."), x, padding_mask, num_heads, causal, attention_steps)
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
            `pooled_output` (the names of bertlib's layers, as `bertlib.course.locate` compares them).

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
    """Next-sentence logits (§3.2) from the pooled [CLS] vector: class 0 IsNext, class 1 NotNext.

    Weights: Hugging Face's `BertOnlyNSPHead` (`seq_relationship.*`).
    """
    return linear(pooled, weights, "seq_relationship")
