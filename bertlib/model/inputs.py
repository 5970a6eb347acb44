"""What the model takes in: its input names, the checks of its inputs, and `pretraining_batch`.

The checks run before any work, so a wrong input gets a ValueError that names it, where it would otherwise give
finite but wrong numbers (an id read from the wrong row, a NaN mask read as a real token). Values are checked when
they are concrete (numpy arrays or eager tensors); inside a compiled step (fit, jit) only shapes and dtypes are.
"""

import keras
import numpy as np
from keras import ops

INPUT_NAMES = ("token_ids", "segment_ids", "padding_mask")


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



def check_inputs(inputs, config):
    """The backbone's three inputs out of the dict `inputs`; a ValueError naming the problem when they cannot be right.

    Keras matches a dict to a model's inputs by sorted key, so one extra key (say `mask_positions`) would shift
    the others silently: only the three are kept, and a missing one is named.

    Shapes and dtypes are checked whenever they are known: the three arrays must be (batch, seq) alike, since a
    (1, seq) padding mask would otherwise be broadcast silently onto every row, seq must fit the position
    table, and the ids must be integers. Values are checked when they are concrete (numpy or eager tensors,
    not inside a compiled step): an id outside the vocabulary would otherwise be read from the wrong row (-1
    is the last row) instead of failing, and a mask value other than 0/1 (NaN, 0.5) read as a real token.
    """
    missing = [name for name in INPUT_NAMES if name not in inputs]
    if missing:
        raise ValueError(f"BertBackbone inputs lack {missing}; expected a dict with {list(INPUT_NAMES)}.")
    inputs = {name: inputs[name] for name in INPUT_NAMES}
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
    return inputs


def pretraining_batch(features, next_sentence=True):
    """Split a feature dict into Keras' `(x, y, sample_weight)` for `BertPretrainer.fit`.

    `features` holds `token_ids, segment_ids, padding_mask, mask_positions, mask_ids, mask_weights` and, for
    NSP, `next_sentence_labels` (1 = NotNext, the `is_random_next` of the data pipeline).
    """
    x = {name: features[name] for name in (*INPUT_NAMES, "mask_positions")}
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
