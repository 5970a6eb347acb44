"""Read and write Hugging Face BERT checkpoints (`config.json` + `model.safetensors`) with numpy only.

No PyTorch is needed: safetensors stores plain arrays. `weight_map(layer)` is the one mapping between bertlib's
variables and Hugging Face's names and layouts; loading, saving and `hf_weights` (the arrays the numpy reference
`bertlib.model.reference` reads) all go through it.
"""

import json
from pathlib import Path

import numpy as np

from bertlib.io.files import atomic_write, write_text_atomically
from bertlib.model.config import BertConfig

_CONFIG_FIELDS = {  # Hugging Face name -> BertConfig field
    "vocab_size": "vocabulary_size",
    "num_hidden_layers": "num_layers",
    "num_attention_heads": "num_heads",
    "hidden_size": "hidden_dim",
    "intermediate_size": "intermediate_dim",
    "max_position_embeddings": "max_sequence_length",
    "type_vocab_size": "type_vocab_size",
    "hidden_dropout_prob": "dropout",
    "layer_norm_eps": "layer_norm_epsilon",
}
_ACTIVATIONS = {"gelu": "gelu", "gelu_new": "gelu_approximate", "gelu_pytorch_tanh": "gelu_approximate"}


def _read_config(path):
    config_file = path / "config.json"
    if not config_file.is_file():
        raise FileNotFoundError(f"{config_file} not found: a Hugging Face BERT folder holds config.json and "
                                "model.safetensors.")
    try:
        values = json.loads(config_file.read_text(encoding="utf-8-sig"))
    except json.JSONDecodeError as error:
        raise ValueError(f"{config_file} is not valid JSON: {error}") from error
    model_type = values.get("model_type")
    if model_type != "bert":
        raise ValueError(f"{config_file} describes model_type={model_type!r}; expected 'bert'.")
    activation = _ACTIVATIONS.get(values.get("hidden_act", "gelu"))
    if activation is None:
        raise ValueError(f"{config_file} has hidden_act={values['hidden_act']!r}; bertlib implements "
                         f"{sorted(_ACTIVATIONS)}.")
    if values.get("position_embedding_type", "absolute") != "absolute":
        raise ValueError(f"{config_file} has position_embedding_type={values['position_embedding_type']!r}; "
                         "expected 'absolute' (learned positions, as in BERT).")
    missing = [name for name in _CONFIG_FIELDS if name not in values]
    if missing:
        raise ValueError(f"{config_file} lacks the BERT fields {missing}.")
    fields = {field: values[name] for name, field in _CONFIG_FIELDS.items()}
    return BertConfig(**fields, activation=activation)


# The one mapping between bertlib's layers and Hugging Face's weight names. Each bertlib layer corresponds to a
# module of Hugging Face's BERT and takes the names that module's own state dict gives them:
#
#   bertlib                  Hugging Face module                  names, e.g.
#   BertEmbedding            BertEmbeddings                       word_embeddings.weight, LayerNorm.bias
#   MultiHeadSelfAttention   BertAttention, without its LayerNorm  self.query.weight, output.dense.bias
#   TransformerEncoderBlock  BertLayer                            attention.self.key.bias, intermediate.dense.weight
#   BertBackbone             BertModel                            encoder.layer.3.output.LayerNorm.weight
#   MaskedLMHead             BertLMPredictionHead                 transform.dense.weight, decoder.weight, bias
#   NextSentenceHead         BertOnlyNSPHead                      seq_relationship.weight
#   BertPretrainer           BertForPreTraining                   bert.embeddings..., cls.predictions.bias
#
# Arrays are in the checkpoint's layout: a PyTorch `Linear` keeps its weight as (out_features, in_features), a
# Keras `Dense` its kernel as (in, out), so kernels are transposed; our fused (H, 3H) query/key/value kernel is
# three (H, H) weights, concatenated in the order query, key, value. `bertlib.model.reference` computes the
# forward pass on exactly these arrays.
_QUERY_KEY_VALUE = ("query", "key", "value")


def _dense(layer, name):
    return [(layer.kernel, [f"{name}.weight"], True), (layer.bias, [f"{name}.bias"], False)]


def _layer_norm(layer, name):
    return [(layer.gamma, [f"{name}.weight"], False), (layer.beta, [f"{name}.bias"], False)]


def _prefixed(prefix, entries):
    return [(variable, [prefix + name for name in names], transposed) for variable, names, transposed in entries]


def weight_map(layer):
    """`(variable, names, transposed)` for every weight of a bertlib layer, in Hugging Face's names (see above).

    `names` holds one name, or three for the fused query/key/value kernel and bias (split on the last axis);
    `transposed` says that the checkpoint stores the variable transposed. A tied decoder (`decoder.weight`) is the
    token embedding's own variable.

    Example:
    >>> [names for _, names, _ in weight_map(block)][:2]
    [['attention.self.query.weight', 'attention.self.key.weight', 'attention.self.value.weight'], [...bias]]
    """
    from bertlib.model.backbone import BertBackbone, BertPretrainer, MaskedLMHead, NextSentenceHead
    from bertlib.model.layers import BertEmbedding, MultiHeadSelfAttention, TransformerEncoderBlock

    if not layer.built:
        raise ValueError(f"{type(layer).__name__} {layer.name!r} is not built yet: call it once first.")
    if isinstance(layer, BertEmbedding):
        return [(layer.token_embedding.embeddings, ["word_embeddings.weight"], False),
                (layer.position_embedding, ["position_embeddings.weight"], False),
                (layer.segment_embedding.embeddings, ["token_type_embeddings.weight"], False),
                *_layer_norm(layer.layer_norm, "LayerNorm")]
    if isinstance(layer, MultiHeadSelfAttention):
        fused = layer.query_key_value
        return [(fused.kernel, [f"self.{name}.weight" for name in _QUERY_KEY_VALUE], True),
                (fused.bias, [f"self.{name}.bias" for name in _QUERY_KEY_VALUE], False),
                *_dense(layer.output_dense, "output.dense")]
    if isinstance(layer, TransformerEncoderBlock):
        return [*_prefixed("attention.", weight_map(layer.self_attention)),
                *_layer_norm(layer.attention_layer_norm, "attention.output.LayerNorm"),
                *_dense(layer.intermediate_dense, "intermediate.dense"),
                *_dense(layer.output_dense, "output.dense"),
                *_layer_norm(layer.output_layer_norm, "output.LayerNorm")]
    if isinstance(layer, BertBackbone):
        entries = _prefixed("embeddings.", weight_map(layer.embedding))
        for index, block in enumerate(layer.encoder_blocks):
            entries += _prefixed(f"encoder.layer.{index}.", weight_map(block))
        return entries + _dense(layer.pooler, "pooler.dense")
    if isinstance(layer, MaskedLMHead):
        return [*_dense(layer.transform, "transform.dense"), *_layer_norm(layer.layer_norm, "transform.LayerNorm"),
                (layer.token_embedding.embeddings, ["decoder.weight"], False),
                (layer.output_bias, ["bias"], False)]
    if isinstance(layer, NextSentenceHead):
        return _dense(layer.classifier, "seq_relationship")
    if isinstance(layer, BertPretrainer):
        entries = _prefixed("bert.", weight_map(layer.backbone)) + _prefixed("cls.predictions.",
                                                                              weight_map(layer.mlm_head))
        return entries + (_prefixed("cls.", weight_map(layer.nsp_head)) if layer.nsp_head is not None else [])
    raise TypeError(f"weight_map takes a bertlib layer or model; got {type(layer).__name__}.")


def hf_weights(layer, dtype="float64"):
    """{Hugging Face name: numpy array in the checkpoint's layout} for a bertlib layer (see `weight_map`).

    The arrays `bertlib.model.reference` reads, and what `save_hf_checkpoint` writes (in float32).

    Example:
    >>> weights = hf_weights(backbone)
    >>> weights["encoder.layer.0.attention.self.query.weight"].shape  # (out, in), as in model.safetensors
    (384, 384)
    """
    arrays = {}
    for variable, names, transposed in weight_map(layer):
        value = np.asarray(variable.numpy(), dtype=dtype)
        for name, part in zip(names, np.split(value, len(names), axis=-1)):
            arrays[name] = np.ascontiguousarray(part.T if transposed else part)
    return arrays


def _canonical(tensors):
    """Drop a `bert.` prefix and rename old TensorFlow-style LayerNorm gamma/beta."""
    renamed = {}
    for name, array in tensors.items():
        if name.startswith("bert."):
            name = name[len("bert."):]
        name = name.replace("LayerNorm.gamma", "LayerNorm.weight").replace("LayerNorm.beta", "LayerNorm.bias")
        renamed[name] = array
    return renamed


def load_hf_checkpoint(path, dtype=None, attention="explicit"):
    """Build a `BertBackbone` from a Hugging Face BERT folder (`config.json`, `model.safetensors`).

    Args:
        path: folder of the checkpoint.
        dtype: optional dtype policy for the backbone.
        attention: "explicit" or "fused".

    Example:
    >>> backbone = load_hf_checkpoint("all-MiniLM-L6-v2")  # a folder: config.json, model.safetensors
    """
    from safetensors.numpy import load_file

    from bertlib.model.backbone import BertBackbone

    path = Path(path)
    if not path.is_dir():
        raise FileNotFoundError(f"{path} is not a folder; expected a Hugging Face BERT checkpoint folder.")
    config = _read_config(path)
    config.attention = attention
    weights_file = path / "model.safetensors"
    if not weights_file.is_file():
        raise FileNotFoundError(f"{weights_file} not found: bertlib reads safetensors weights only "
                                "(convert pytorch_model.bin with `safetensors` first).")
    tensors = _canonical(load_file(str(weights_file)))
    stored_layers = {int(name.split(".")[2]) for name in tensors
                     if name.startswith("encoder.layer.") and name.split(".")[2].isdigit()}
    if stored_layers and stored_layers != set(range(config.num_layers)):
        raise ValueError(f"{path / 'config.json'} says num_hidden_layers={config.num_layers} but {weights_file} "
                         f"holds the layers {sorted(stored_layers)}; a layer would be dropped or left random. "
                         "Fix num_hidden_layers in config.json.")
    backbone = BertBackbone(config, dtype=dtype)
    for variable, names, transposed in weight_map(backbone):
        missing = [name for name in names if name not in tensors]
        if missing:
            raise ValueError(f"{weights_file} lacks the weight {missing[0]!r}; is this a BERT checkpoint?")
        value = np.concatenate([tensors[name].T if transposed else tensors[name] for name in names], axis=-1)
        if tuple(value.shape) != tuple(variable.shape):
            raise ValueError(f"{weights_file}: weight {names[0]!r} has shape {tuple(value.shape)} after "
                             f"conversion, but the model built from config.json expects {tuple(variable.shape)}.")
        variable.assign(value.astype(variable.dtype))
    return backbone


def save_hf_checkpoint(backbone, path, vocabulary=None):
    """Write `backbone` as a Hugging Face BERT folder readable by `load_hf_checkpoint` and `transformers`.

    Args:
        backbone: `BertBackbone`.
        path: folder to create or overwrite.
        vocabulary: optional list of tokens, written as `vocab.txt`.
    """
    from safetensors.numpy import save_file

    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    tensors = hf_weights(backbone, dtype="float32")
    config = backbone.config
    hf_config = {name: getattr(config, field) for name, field in _CONFIG_FIELDS.items()}
    hidden_act = {"gelu": "gelu", "gelu_approximate": "gelu_new"}[config.activation]
    hf_config.update(model_type="bert", architectures=["BertModel"], hidden_act=hidden_act,
                     attention_probs_dropout_prob=config.dropout, position_embedding_type="absolute",
                     initializer_range=0.02, pad_token_id=0)
    atomic_write(path / "model.safetensors", lambda name: save_file(tensors, name, metadata={"format": "pt"}))
    write_text_atomically(path / "config.json", json.dumps(hf_config, indent=2) + "\n")
    if vocabulary is not None:
        write_text_atomically(path / "vocab.txt", "\n".join(vocabulary) + "\n")
    return path
