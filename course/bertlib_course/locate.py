"""Where does a learner's layer first depart from bertlib's? The first-divergence locator.

`first_divergence(learner, reference, inputs)` runs a learner's layer and bertlib's reference on the same input,
with the same weights, and walks the reference's steps in order (embeddings -> Q/K/V -> scores -> softmax ->
context -> output projection -> residual + LayerNorm -> feed-forward -> block output). It returns the first step
where the two differ beyond tolerance, with the shapes, the largest difference and a hint; `None` when they agree.

How the learner's intermediate values are read, from the most to the least precise:

- a callable that returns a dict of named intermediates (the names of `steps(reference)`; any subset, the last
  one should be the output), e.g. `{"scores": ..., "probabilities": ..., "output": ...}`;
- a Keras layer or model built like bertlib's (same sublayer names, e.g. a subclass with one method changed):
  its sublayers' outputs are recorded while it runs, and the reference's weights are copied into it first;
- a callable that returns only the output: then only the output is compared.

The reference side is `bertlib_course.reference`, BERT's forward pass in numpy (float64), run on the reference
layer's weights as `bertlib.model.checkpoint.hf_weights` maps them; the tests check that the trace ends on exactly what
the layer's `call` returns. Hints are not guesses: each known mistake (no padding mask,
the tanh GELU, a transposed kernel, ...) is replayed on the reference, and a hint is given when the learner's
values equal that replay. Where none matches, the hint describes what is off (for probabilities: the row sums and
the weight on padded keys).

Example:
>>> layer = bertlib.MultiHeadSelfAttention(num_heads=2, dropout=0.0)
>>> print(first_divergence(my_attention, layer, (x, padding_mask)))   # my_attention(x, padding_mask) -> dict
✘ First divergence at `probabilities` (step 3 of 5): ...
"""

import math
from dataclasses import dataclass, field

import numpy as np

from bertlib.model.checkpoint import hf_weights
from bertlib_course import reference as reference_pass
from bertlib_course.failure import CheckFailed
from bertlib_course.messages import check_text, message

# The steps of each reference layer, in the order they are computed. A block's attention steps are prefixed.
ATTENTION_STEPS = ("query_key_value", "scores", "probabilities", "context", "output")
BLOCK_STEPS = tuple(f"attention.{step}" for step in ATTENTION_STEPS) + (
    "attention_layer_norm", "intermediate", "activation", "ffn_output", "output")
EMBEDDING_STEPS = ("sum", "output")
MLM_HEAD_STEPS = ("transform", "activation", "layer_norm", "logits")
MASKER_STEPS = ("selected", "token_ids", "mask_positions", "mask_ids", "mask_weights")

# Sublayer paths (as recorded from a Keras learner built like bertlib's) -> step names.
_SUBLAYER_STEPS = {
    "MultiHeadSelfAttention": {"query_key_value": "query_key_value", "output": "output"},
    "TransformerEncoderBlock": {"self_attention/query_key_value": "attention.query_key_value",
                                "self_attention/output": "attention.output", "self_attention": "attention.output",
                                "attention_layer_norm": "attention_layer_norm", "intermediate": "intermediate",
                                "output": "ffn_output", "output_layer_norm": "output"},
    "BertEmbedding": {"layer_norm": "output"},
    "MaskedLMHead": {"transform": "transform", "layer_norm": "layer_norm"},
}


@dataclass
class Divergence:
    """The first step where a learner's values leave the reference's.

    Attributes: `step` (name), `index` (1-based position among the reference's steps), `total_steps`,
    `matched` (the steps compared before it, all equal), `learner_shape`, `reference_shape`,
    `max_difference` (None when the shapes differ), `where` (index of the largest difference), `hint`.
    """

    step: str
    index: int
    total_steps: int
    matched: list = field(default_factory=list)
    learner_shape: tuple = None
    reference_shape: tuple = None
    max_difference: float = None
    where: tuple = None
    hint: str = ""

    def __str__(self):
        lines = [message("divergence", step=self.step, index=self.index, total=self.total_steps),
                 message("divergence_matched", steps=", ".join(self.matched) if self.matched
                         else message("divergence_nothing_matched")),
                 message("divergence_shapes", learner=self.learner_shape, reference=self.reference_shape)]
        if self.max_difference is not None:
            lines.append(message("divergence_largest", difference=f"{self.max_difference:.3g}", where=self.where))
        if self.hint:
            lines.append(message("divergence_hint", text=check_text(self.hint)))
        return "\n".join(lines)


def steps(reference):
    """The names of the steps `first_divergence` compares for a reference layer, in order."""
    if _is_masker(reference):
        return MASKER_STEPS
    kind = _kind(reference)
    if kind == "BertBackbone":
        names = [f"embedding.{step}" for step in EMBEDDING_STEPS]
        for index in range(reference.config.num_layers):
            names += [f"encoder_block_{index}.{step}" for step in BLOCK_STEPS]
        return tuple(names) + ("sequence_output", "pooled_output")
    return {"MultiHeadSelfAttention": ATTENTION_STEPS, "TransformerEncoderBlock": BLOCK_STEPS,
            "BertEmbedding": EMBEDDING_STEPS, "MaskedLMHead": MLM_HEAD_STEPS}[kind]


def trace(reference, inputs, mistake=None):
    """The reference's intermediate values on `inputs`, step by step, in numpy float64: an ordered dict.

    Computed by `bertlib_course.reference` (numpy only) on the layer's weights as `bertlib.model.checkpoint.hf_weights`
    gives them, with the layer's settings from its `get_config()`. `mistake` replays one known mistake (a key of
    `MISTAKES`) instead of the correct computation.
    """
    kind = _kind(reference)
    args, kwargs = _as_arguments(inputs)
    weights = hf_weights(reference)
    if kind == "BertBackbone":
        return _trace_backbone(weights, reference.config, args[0] if args else kwargs, mistake)
    settings = reference.get_config()
    if kind in {"MultiHeadSelfAttention", "TransformerEncoderBlock"}:
        x = _array(_input(args, kwargs, 0, "x"))
        padding_mask = _input(args, kwargs, 1, "padding_mask", None)
        padding_mask = np.ones(x.shape[:2]) if padding_mask is None else np.asarray(padding_mask)
        trace_layer = _trace_attention if kind == "MultiHeadSelfAttention" else _trace_block
        return trace_layer(weights, settings, x, padding_mask, mistake)
    if kind == "BertEmbedding":
        if mistake is not None:
            raise _NotApplicable(mistake)
        values = {}
        reference_pass.embeddings(weights, np.asarray(_input(args, kwargs, 0, "token_ids")),
                                  np.asarray(_input(args, kwargs, 1, "segment_ids")), settings["layer_norm_epsilon"],
                                  steps=values)
        return values
    hidden = _array(_input(args, kwargs, 0, "sequence_output"))
    return _trace_mlm_head(weights, settings, hidden, _input(args, kwargs, 1, "mask_positions", None), mistake)


def first_divergence(learner, reference, inputs, atol=1e-4, rtol=1e-4, copy_weights=True, name="your function"):
    """The first step where `learner` and `reference` differ beyond tolerance, or None when they agree.

    Args:
        learner: a callable returning a dict of named intermediates (see `steps(reference)`) or only the output,
            or a Keras layer/model built like the reference (same sublayer names).
        reference: a bertlib layer: `MultiHeadSelfAttention`, `TransformerEncoderBlock`, `BertEmbedding`,
            `MaskedLMHead` or `BertBackbone`, built (call it once) and with dropout off or called at inference;
            or a `bertlib.text.masking.MaskedLMMasker`: then `inputs` is `(token_ids, seed)`, the learner is called
            as `learner(token_ids, numpy.random.default_rng(seed))` like `masker.mask_numpy`, and the steps are
            the selection, then the masked tokens, then the prediction slots.
        inputs: what the reference is called with: a tuple of positional arguments (e.g. `(x, padding_mask)`)
            or a dict of keyword arguments; a `BertBackbone` takes its feature dict as a 1-tuple `(features,)`.
            The learner is called the same way.
        atol, rtol: floats, the tolerance of `numpy.allclose`.
        copy_weights: bool, defaults to True. For a Keras learner, copy the reference's weights into it first
            (a learner whose weights do not line up with the reference's is reported at step `weights`).
        name: str, how the learner's code is called in a failure message.

    Returns:
        `Divergence` or None. `print()` it for the message a learner reads.

    Raises:
        CheckFailed: when the learner's code raises, or returns what cannot be compared (a tuple instead of one
            array, a dict with names the reference does not compute, a ragged list): a ✘ message with a hint.
            An untouched stub's `NotImplementedError` goes through as itself.
    """
    if _is_masker(reference):
        return _masker_divergence(learner, reference, inputs, name)
    kind = _kind(reference)
    names = steps(reference)
    reference_values = trace(reference, inputs)
    if _is_keras_layer(learner):
        weights_problem = _check_weights(learner, reference, copy_weights, names)
        if weights_problem is not None:
            return weights_problem  # without the same weights, no activation can be compared
        learner_values = _learner_call(name, _record, learner, inputs, kind)
    else:
        args, kwargs = _as_arguments(inputs)
        result = _learner_call(name, learner, *args, **kwargs)
        if isinstance(result, (tuple, list)):
            raise CheckFailed(message("returned_sequence", name=name, kind=type(result).__name__, count=len(result),
                                      shape=reference_values[names[-1]].shape, names=", ".join(names)) + "\n"
                              + message("hint", text=message("return_only_output")))
        learner_values = result if isinstance(result, dict) else {names[-1]: result}
    unknown = [step for step in learner_values if step not in reference_values]
    if unknown:
        raise CheckFailed(f"✘ {name} returned values named {unknown}, which the reference does not compute.\n"
                          + message("hint", text=f"use names from {list(names)}."))
    matched, last_compared = [], 0
    for index, step in enumerate(names, start=1):
        if step not in learner_values:
            continue
        try:
            got = _array(learner_values[step])
        except Exception as error:  # noqa: BLE001 (a learner's value numpy cannot read: said, not raised)
            raise CheckFailed(message("learner_raised", name=f"{name}: `{step}`", error_type=type(error).__name__,
                                      error=error) + "\n" + message(
                "hint", text=f"`{step}` should be one array of shape {reference_values[step].shape}.")) from error
        expected = reference_values[step]
        if got.shape != expected.shape:
            return Divergence(step, index, len(names), matched, got.shape, expected.shape,
                              hint=_shape_hint(step, got.shape, expected.shape))
        if not np.allclose(got, expected, rtol=rtol, atol=atol) or not np.all(np.isfinite(got)):
            gap = np.nan_to_num(np.abs(got - expected), nan=np.inf)
            where = tuple(int(i) for i in np.unravel_index(np.argmax(gap), gap.shape))
            # The mistake may sit anywhere after the last step that matched (steps in between were not seen).
            unseen = names[last_compared:index]
            hint = _diagnose(step, got, reference, inputs, unseen, atol, rtol, only_output=len(learner_values) == 1)
            return Divergence(step, index, len(names), matched, got.shape, expected.shape, float(gap.max()), where,
                              hint)
        matched.append(step)
        last_compared = index
    return None


def _learner_call(name, function, *args, **kwargs):
    """Runs the learner's code; an error it raises becomes a CheckFailed naming it (a stub's NotImplementedError
    and a CheckFailed go through)."""
    try:
        return function(*args, **kwargs)
    except (NotImplementedError, CheckFailed):
        raise
    except Exception as error:
        raise CheckFailed(message("learner_raised", name=name, error_type=type(error).__name__, error=error)
                          + "\n" + message("hint", text="run your function on the check's inputs in a cell of "
                                                         "your own to see where it fails.")) from error


def check_same_activations(name, learner, reference, inputs, atol=1e-4, rtol=1e-4):
    """A check-cell helper: passes with one ✔ line, or raises `CheckFailed` with the first divergence.

    Example:
        check_same_activations("self_attention", lambda x, m: self_attention(x, m, *weights, 2), layer, (x, mask))
    """
    divergence = first_divergence(learner, reference, inputs, atol=atol, rtol=rtol, name=name)
    if divergence is not None:
        raise CheckFailed(message("differs_from_reference", name=check_text(name)) + "\n"
                          + str(divergence).removeprefix("✘ "))
    print(message("matches_reference", name=check_text(name)))


# ---------------------------------------------------------------------------------------------------------------
# Known mistakes: the step where each first shows, what it does, and the hint.

MISTAKES = {
    "no_mask": ("probabilities", "did you mask the padded keys? Set their scores to a large negative number "
                "(e.g. -1e9) before the softmax, so they get zero weight."),
    "mask_after_softmax": ("probabilities", "you masked after the softmax: zeroing weights afterwards leaves rows "
                           "that no longer sum to 1. Mask the scores before the softmax instead."),
    "mask_queries": ("probabilities", "you masked padded queries (rows) instead of padded keys (columns): a padded "
                     "key must get no weight in every row."),
    "no_causal_mask": ("probabilities", "this attention is causal: query i may not look at keys j > i. Hide them "
                       "(np.tril of ones, diagonal included) together with the padded keys, before the softmax."),
    "no_scale": ("scores", "divide the scores by sqrt(head_dim) (scaled dot-product attention)."),
    "scale_by_head_dim": ("scores", "scale by 1/sqrt(head_dim), not 1/head_dim."),
    "softmax_over_queries": ("probabilities", "the softmax runs over the wrong axis: normalise over the keys "
                             "(the last axis), so each query's weights sum to 1."),
    "transposed_output_kernel": ("output", "your output projection uses the transposed kernel: compute "
                                 "context @ kernel (kernel of shape (in, out), Keras' layout), not kernel.T."),
    "no_residual": ("attention_layer_norm", "add the residual before the LayerNorm: LayerNorm(x + attention(x))."),
    "tanh_gelu": ("activation", "your GELU is the tanh approximation; the reference uses the exact form "
                  "0.5·x·(1 + erf(x/√2)) (BertConfig.activation='gelu')."),
    "exact_gelu": ("activation", "your GELU is the exact erf form; this reference uses the tanh approximation "
                   "(BertConfig.activation='gelu_approximate')."),
    "no_output_bias": ("logits", "add the masked-LM head's output bias to the logits."),
}


def _diagnose(name, got, reference, inputs, unseen, atol, rtol, only_output):
    """A hint for a divergence at `name`; `unseen` are the steps since the last one that matched, `name` last."""
    step = name.rsplit(".", 1)[-1]
    prefix = name[: -len(step)]
    unseen_steps = {unseen_name.rsplit(".", 1)[-1] for unseen_name in unseen}
    for mistake, (mistake_step, hint) in MISTAKES.items():
        if mistake_step not in unseen_steps:
            continue
        try:
            replay = trace(reference, inputs, mistake=mistake)
        except _NotApplicable:
            continue
        if name in replay and replay[name].shape == got.shape and np.allclose(got, replay[name], rtol=rtol,
                                                                              atol=atol):
            if mistake_step != step:
                return (f"the values first go wrong between the last match and here, at `{prefix}{mistake_step}`, "
                        f"which you did not return: {hint}")
            if step == "probabilities":
                facts = _probability_facts(got, reference, inputs)
                return f"after the softmax, {facts}: {hint}" if facts else hint
            return hint
    if step == "probabilities" and "scores" in unseen_steps:  # no scores returned: nothing before was compared
        facts = _probability_facts(got, reference, inputs)
        return (f"the attention probabilities differ{'; ' + facts if facts else ''}. The steps before them were not "
                "compared: check the Q|K|V split of the projection, the 1/sqrt(head_dim) scale, the masks (padded "
                "keys, and in a causal layer the keys after the query) and the softmax over the keys (the last axis).")
    if step == "probabilities":
        facts = _probability_facts(got, reference, inputs) or "the weights differ although the scores matched"
        return (f"your attention matches up to the softmax; after it, {facts}: did you mask the scores before the "
                "softmax, and normalise over the keys (the last axis)?")
    if step == "logits" and "layer_norm" in unseen_steps:  # only the logits were compared: say nothing matched
        return ("the logits differ, and neither the tanh GELU nor a missing output bias explains it: gather the "
                "hidden states at mask_positions, then dense, exact GELU, LayerNorm (in that order), and decode with "
                "the token embedding itself, transposed (tied weights), plus the output bias.")
    if step == "logits":
        return ("the hidden states before the decoder match, the logits do not: decode with the token embedding "
                "itself, transposed (tied weights, as the released model), plus the output bias.")
    if step == "activation":
        return "apply GELU to the intermediate (pre-activation) values."
    if only_output:
        return ("only the output was compared, and no known mistake explains it: return a dict of intermediate "
                f"values (names from {list(steps(reference))}) to find the first step that goes wrong.")
    return ""


def _probability_facts(got, reference, inputs):
    """What is visibly wrong with attention probabilities: row sums off 1, weight on padded keys."""
    row_sums = got.sum(axis=-1)
    padding_mask = _padding_mask_of(reference, inputs)
    parts = []
    if not np.allclose(row_sums, 1.0, atol=1e-3):
        parts.append(f"row sums are {row_sums.min():.3g} to {row_sums.max():.3g} (expected 1.0)")
    if padding_mask is not None:
        padded_share = float((got * (1 - padding_mask[:, None, None, :])).sum(axis=-1).max())
        if padded_share > 1e-6:
            parts.append(f"up to {padded_share:.3g} of a row's weight is on padded keys (expected 0)")
    if _kind(reference) == "MultiHeadSelfAttention" and reference.causal and got.shape[-1] == got.shape[-2]:
        future_share = float((got * np.triu(np.ones(got.shape[-2:]), 1)).sum(axis=-1).max())
        if future_share > 1e-6:
            parts.append(f"up to {future_share:.3g} of a row's weight is on keys after its query (expected 0 in "
                         "this causal layer)")
    return "; ".join(parts)


def _padding_mask_of(reference, inputs):
    args, kwargs = _as_arguments(inputs)
    if _kind(reference) == "BertBackbone":
        features = args[0] if args else kwargs
        return np.asarray(features["padding_mask"], "float64")
    mask = _input(args, kwargs, 1, "padding_mask", None)
    return None if mask is None else np.asarray(mask, "float64")


class _NotApplicable(Exception):
    """A replayed mistake that the reference layer cannot make (e.g. a GELU mistake in an attention layer)."""


# ---------------------------------------------------------------------------------------------------------------
# The numpy traces of the reference layers.

def _fused(values):
    """The reference's `query`, `key`, `value` steps as one `query_key_value` step, as bertlib's layer computes it."""
    fused = {}
    for name, value in values.items():
        prefix, _, step = name.rpartition(".")
        prefix = prefix + "." if prefix else ""
        if step == "query":
            fused[f"{prefix}query_key_value"] = np.concatenate(
                [value, values[f"{prefix}key"], values[f"{prefix}value"]], axis=-1)  # (batch, seq, 3H)
        elif step not in {"key", "value"}:
            fused[name] = value
    return fused


def _trace_attention(weights, settings, x, padding_mask, mistake=None):
    if mistake in {"tanh_gelu", "exact_gelu", "no_residual", "no_output_bias"}:
        raise _NotApplicable(mistake)
    values = {}
    reference_pass.self_attention(weights, x, padding_mask, settings["num_heads"], settings["causal"], steps=values)
    if mistake is not None:
        values.update(_attention_with_mistake(weights, values, padding_mask, settings, mistake))
    return _fused(values)


def _attention_with_mistake(weights, values, padding_mask, settings, mistake):
    """The attention's steps from `scores` on, recomputed with one known mistake (the steps before stay)."""
    if mistake == "no_causal_mask" and not settings["causal"]:
        raise _NotApplicable(mistake)
    num_heads = settings["num_heads"]
    head_dim = values["query"].shape[-1] // num_heads
    scores = values["scores"] * {"no_scale": math.sqrt(head_dim),  # q.k instead of q.k / sqrt(d)
                                 "scale_by_head_dim": 1 / math.sqrt(head_dim)}.get(mistake, 1.0)  # q.k / d
    seen = reference_pass.attention_mask(padding_mask, settings["causal"] and mistake != "no_causal_mask")
    if mistake == "mask_queries":
        seen = np.asarray(padding_mask).astype(bool)[:, None, :, None] & np.ones_like(seen)
    if mistake in {"no_mask", "mask_after_softmax"}:
        probabilities = reference_pass.softmax(scores)
        if mistake == "mask_after_softmax":
            probabilities = probabilities * seen
    else:
        probabilities = reference_pass.softmax(np.where(seen, scores, reference_pass.MASKED),
                                               axis=-2 if mistake == "softmax_over_queries" else -1)
    context = reference_pass.merge_heads(probabilities @ reference_pass.split_heads(values["value"], num_heads))
    kernel = weights["output.dense.weight"]  # (out, in); the correct product is context @ kernel.T
    output = context @ (kernel if mistake == "transposed_output_kernel" else kernel.T) + weights["output.dense.bias"]
    return {"scores": scores, "probabilities": probabilities, "context": context, "output": output}


def _trace_block(weights, settings, x, padding_mask, mistake=None):
    if mistake == "no_output_bias":
        raise _NotApplicable(mistake)
    activation, epsilon = settings["activation"], settings["layer_norm_epsilon"]
    approximate = activation == "gelu_approximate"
    if (mistake == "tanh_gelu" and approximate) or (mistake == "exact_gelu" and not approximate):
        raise _NotApplicable(mistake)
    values = {}
    if mistake is None:
        reference_pass.encoder_layer(weights, x, padding_mask, settings["num_heads"], activation, epsilon,
                                     settings["causal"], steps=values)
        return _fused(values)
    attention_mistake = None if mistake in {"tanh_gelu", "exact_gelu", "no_residual"} else mistake
    attention = _trace_attention(reference_pass.sub(weights, "attention."), settings, x, padding_mask,
                                 attention_mistake)
    values.update({f"attention.{name}": value for name, value in attention.items()})
    residual = attention["output"] if mistake == "no_residual" else x + attention["output"]
    values["attention_layer_norm"] = x = reference_pass.layer_norm(residual, weights, "attention.output.LayerNorm",
                                                                   epsilon)
    activation = {"tanh_gelu": "gelu_approximate", "exact_gelu": "gelu"}.get(mistake, activation)
    reference_pass.feed_forward(weights, x, activation, epsilon, steps=values)
    return values


def _trace_backbone(weights, config, features, mistake=None):
    values = {}
    if mistake is None:
        reference_pass.bert(weights, config, features, steps=values)
        return _fused(values)
    embedding = {}
    x = reference_pass.embeddings(reference_pass.sub(weights, "embeddings."), np.asarray(features["token_ids"]),
                                  np.asarray(features["segment_ids"]), config.layer_norm_epsilon, steps=embedding)
    values.update({f"embedding.{name}": value for name, value in embedding.items()})
    settings = {"num_heads": config.num_heads, "causal": config.causal, "activation": config.activation,
                "layer_norm_epsilon": config.layer_norm_epsilon}
    for index in range(config.num_layers):
        block = _trace_block(reference_pass.sub(weights, f"encoder.layer.{index}."), settings, x,
                             np.asarray(features["padding_mask"]), mistake)
        values.update({f"encoder_block_{index}.{name}": value for name, value in block.items()})
        x = block["output"]
    values["sequence_output"] = x
    values["pooled_output"] = np.tanh(reference_pass.linear(x[:, 0], weights, "pooler.dense"))
    return values


def _trace_mlm_head(weights, settings, hidden, positions, mistake=None):
    if mistake not in {None, "tanh_gelu", "no_output_bias"}:
        raise _NotApplicable(mistake)
    if mistake == "no_output_bias":
        weights = {**weights, "bias": np.zeros_like(weights["bias"])}
    values = {}
    reference_pass.masked_lm_logits(weights, hidden, positions, settings["layer_norm_epsilon"],
                                    activation="gelu_approximate" if mistake == "tanh_gelu" else "gelu", steps=values)
    return values


# ---------------------------------------------------------------------------------------------------------------
# Keras learners: copy weights, record sublayer outputs.

def _is_keras_layer(value):
    try:
        import keras
    except ImportError:
        return False
    return isinstance(value, keras.layers.Layer)


def _check_weights(learner, reference, copy_weights, names):
    """Copies the reference's weights into a Keras learner; a `Divergence` at `weights` when they do not line up."""
    if not learner.built:
        return None
    learner_shapes = [tuple(weight.shape) for weight in learner.weights]
    reference_shapes = [tuple(weight.shape) for weight in reference.weights]
    if learner_shapes == reference_shapes:
        if copy_weights:
            learner.set_weights(reference.get_weights())
        return None
    reference_ids = {id(weight) for weight in reference.weights}
    hidden = getattr(getattr(reference, "token_embedding", None), "output_dim", None)
    vocabulary = getattr(reference, "vocabulary_size", None)
    for weight in learner.weights:
        if (hidden and vocabulary and tuple(weight.shape) in {(hidden, vocabulary), (vocabulary, hidden)}
                and id(weight) not in reference_ids):
            return Divergence("weights", 0, len(names), [], tuple(learner_shapes), tuple(reference_shapes),
                              hint=f"your layer has its own decoder matrix `{weight.path}` of shape "
                                   f"{tuple(weight.shape)}: the masked-LM decoder must be tied to the token "
                                   "embedding (use its matrix, transposed), not a separate Dense.")
    extra = sorted(set(learner_shapes) - set(reference_shapes))
    missing = sorted(set(reference_shapes) - set(learner_shapes))
    return Divergence("weights", 0, len(names), [], tuple(learner_shapes), tuple(reference_shapes),
                      hint=f"your layer's weights do not line up with the reference's (extra shapes {extra}, "
                           f"missing {missing}), so they were not copied.")


def _record(learner, inputs, kind):
    """Runs a Keras learner, recording the outputs of its sublayers by path; returns {step: value}."""
    mapping = dict(_SUBLAYER_STEPS.get(kind, {}))
    if kind == "BertBackbone":
        mapping = {"embedding/layer_norm": "embedding.output", "pooler": None}
        for index in range(len(learner.encoder_blocks)):
            for path, step in _SUBLAYER_STEPS["TransformerEncoderBlock"].items():
                mapping[f"encoder_block_{index}/{path}"] = f"encoder_block_{index}.{step}"
    recorded, originals = {}, []

    def wrap(layer, path):
        original = layer.call

        def recording_call(*args, **kwargs):
            output = original(*args, **kwargs)
            value = output[0] if isinstance(output, tuple) else output
            recorded[path] = value
            return output

        originals.append((layer, original))
        object.__setattr__(layer, "call", recording_call)

    def visit(layer, prefix):
        for sublayer in layer._layers:
            path = f"{prefix}{sublayer.name}"
            if path in mapping:
                wrap(sublayer, path)
            visit(sublayer, path + "/")

    visit(learner, "")
    try:
        args, kwargs = _as_arguments(inputs)
        output = learner(*args, **kwargs)
    finally:
        for layer, original in originals:
            object.__setattr__(layer, "call", original)
    values = {}
    for path, value in recorded.items():
        if mapping[path] is not None and mapping[path] not in values:
            values[mapping[path]] = value
    if kind == "BertBackbone":
        values["sequence_output"] = output["sequence_output"]
        values["pooled_output"] = output["pooled_output"]
    else:
        final = output[0] if isinstance(output, tuple) else output
        values[_final_step(kind)] = final
    return values


def _final_step(kind):
    return {"MultiHeadSelfAttention": "output", "TransformerEncoderBlock": "output", "BertEmbedding": "output",
            "MaskedLMHead": "logits"}[kind]


# ---------------------------------------------------------------------------------------------------------------
# The masker (chapter 03): selection first, then the 80/10/10 branch, then the prediction slots.

def _is_masker(reference):
    return any(cls.__name__ == "MaskedLMMasker" and cls.__module__.startswith("bertlib.")
               for cls in type(reference).__mro__)


def _selected(output, shape):
    selected = np.zeros(shape, bool)
    weights = np.asarray(output["mask_weights"]) > 0
    for row, (positions, real) in enumerate(zip(np.asarray(output["mask_positions"]), weights)):
        selected[row, positions[real]] = True
    return selected


def _masker_divergence(learner, masker, inputs, learner_name="your masker"):
    token_ids, seed = inputs
    token_ids = np.asarray(token_ids)
    expected = masker.mask_numpy(token_ids, np.random.default_rng(seed))
    got = _learner_call(learner_name, learner, token_ids, np.random.default_rng(seed))
    missing = [name for name in MASKER_STEPS[1:] if not isinstance(got, dict) or name not in got]
    if missing:
        raise CheckFailed(f"✘ {learner_name} must return a dict with {list(MASKER_STEPS[1:])}; it lacks {missing}.\n"
                          + message("hint", text="return the dict that masker.mask_numpy returns, key for key."))
    total, matched = len(MASKER_STEPS), []
    for name in MASKER_STEPS[2:]:
        if np.shape(got[name]) != np.shape(expected[name]):
            return Divergence(name, MASKER_STEPS.index(name) + 1, total, [], np.shape(got[name]),
                              np.shape(expected[name]),
                              hint=f"`{name}` has one row per sequence and max_predictions "
                                   f"({masker.max_predictions}) slots, padded with zeros.")
    got_selected, expected_selected = _selected(got, token_ids.shape), _selected(expected, token_ids.shape)
    eligible = ~np.isin(token_ids, masker.special_token_ids)
    if not np.array_equal(got_selected, expected_selected):
        row = int(np.flatnonzero((got_selected != expected_selected).any(axis=1))[0])
        got_count, expected_count = int(got_selected[row].sum()), int(expected_selected[row].sum())
        if (got_selected & ~eligible).any():
            hint = "you selected special tokens or padding: only tokens outside special_token_ids are eligible."
        elif getattr(masker, "whole_word", False):
            hint = _whole_word_hint(masker, token_ids, row, got_count, expected_count)
        elif got_count != expected_count:
            tokens = int((token_ids[row] != getattr(masker, "padding_token_id", 0)).sum())
            hint = (f"row {row}: you selected {got_count} tokens, the budget is {expected_count} = "
                    f"min(max_predictions, max(1, rint({masker.selection_rate} x {tokens} tokens))) "
                    "([CLS] and [SEP] count, padding does not).")
        else:
            hint = ("the right number of tokens, at other positions: draw keys = rng.random(token_ids.shape) "
                    "first, give ineligible tokens the key 2.0, and take the smallest keys (stable sort).")
        differ = int((got_selected != expected_selected).sum())
        return Divergence("selected", 1, total, [], got_selected.shape, expected_selected.shape,
                          hint=f"{differ} positions differ; {hint}")
    matched.append("selected")
    for name in MASKER_STEPS[1:]:
        got_values, expected_values = np.asarray(got[name]), np.asarray(expected[name])
        if np.array_equal(got_values, expected_values):
            matched.append(name)
            continue
        where = tuple(int(i) for i in np.argwhere(got_values != expected_values)[0])
        hints = {
            "token_ids": (f"the selection matches; the replacements do not (first at {where}): draw "
                          f"branch = rng.random(shape) second: below {masker.mask_token_rate} -> [MASK], below "
                          f"{masker.mask_token_rate + masker.random_token_rate} -> a random token (drawn third, "
                          "for every position), else unchanged."),
            "mask_positions": "list the selected positions in increasing order, then zeros.",
            "mask_ids": "the original token at each slot (before masking), 0 in the padding slots.",
            "mask_weights": "1.0 for each real slot, 0.0 for each padding slot.",
        }
        gap = np.abs(got_values.astype("float64") - expected_values.astype("float64"))
        return Divergence(name, MASKER_STEPS.index(name) + 1, total, matched, got_values.shape,
                          expected_values.shape, float(gap.max()), where, hints[name])
    return None


def _whole_word_hint(masker, token_ids, row, got_count, expected_count):
    """The selection hint for a whole-word masker: its budget is an upper bound, filled word by word."""
    tokens = int((token_ids[row] != getattr(masker, "padding_token_id", 0)).sum())
    budget = int(masker.budget(token_ids)[row])
    if got_count != expected_count:
        return (f"row {row}: you selected {got_count} tokens, the reference {expected_count}; the budget is {budget} "
                f"= min(max_predictions, max(1, rint({masker.selection_rate} x {tokens} tokens))) tokens, not words. "
                "Walk the words by increasing key and take a word only when all its pieces still fit; skip one that "
                "does not and go on (a shorter word may still fit).")
    return ("the right number of tokens, at other positions: draw keys = rng.random(token_ids.shape) first; a word's "
            "key is the key of its first piece, and a '##' piece belongs to the word of the eligible token right "
            "before it (after a special token it starts a word).")


# ---------------------------------------------------------------------------------------------------------------
# Small helpers.

def _kind(reference):
    for cls in type(reference).__mro__:
        if cls.__name__ in {"MultiHeadSelfAttention", "TransformerEncoderBlock", "BertEmbedding", "MaskedLMHead",
                            "BertBackbone"} and cls.__module__.startswith("bertlib."):
            if not getattr(reference, "built", True):
                raise ValueError(f"The reference {cls.__name__} is not built yet: call it once on your input first.")
            return cls.__name__
    raise TypeError(f"The reference must be a bertlib layer (MultiHeadSelfAttention, TransformerEncoderBlock, "
                    f"BertEmbedding, MaskedLMHead or BertBackbone); got {type(reference).__name__}.")


def _as_arguments(inputs):
    if isinstance(inputs, dict):
        return (), dict(inputs)
    if isinstance(inputs, (tuple, list)):
        return tuple(inputs), {}
    return (inputs,), {}


def _input(args, kwargs, position, name, default=...):
    if len(args) > position:
        return args[position]
    if name in kwargs:
        return kwargs[name]
    if default is ...:
        raise ValueError(f"The inputs lack `{name}` (positional argument {position + 1}).")
    return default


def _array(value):
    if hasattr(value, "detach"):  # a PyTorch tensor (a layer's output carries its gradient graph)
        value = value.detach().cpu()
    if hasattr(value, "numpy") and not isinstance(value, np.ndarray):
        value = value.numpy()
    return np.asarray(value, "float64")


def _shape_hint(name, got, expected):
    if len(got) == len(expected) == 4 and sorted(got) == sorted(expected):
        return "same sizes in another order: check the head split (batch, heads, seq, head_dim) and transposes."
    if len(got) == 3 and len(expected) == 4:
        return "the reference keeps heads apart here: (batch, heads, query, key)."
    return f"`{name}` should have shape {expected}."
