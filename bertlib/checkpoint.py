"""Read and write Hugging Face BERT checkpoints (`config.json` + `model.safetensors`) with numpy only.

No PyTorch is needed: safetensors stores plain arrays. A PyTorch `Linear` keeps its weight as
(out_features, in_features), a Keras `Dense` as (in, out), so every dense kernel is transposed on the way.
Our attention layer keeps query, key and value in one (H, 3H) kernel; the checkpoint keeps three (H, H)
matrices, concatenated here in the order query, key, value.
"""

import json
from pathlib import Path

import numpy as np

from bertlib.config import BertConfig
from bertlib.files import atomic_write, write_text_atomically

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


def _weight_names(backbone):
    """Pairs (keras variable, list of checkpoint names); several names are concatenated on the last axis."""
    pairs = []
    embedding = backbone.embedding
    pairs.append((embedding.token_embedding.embeddings, ["embeddings.word_embeddings.weight"]))
    pairs.append((embedding.position_embedding, ["embeddings.position_embeddings.weight"]))
    pairs.append((embedding.segment_embedding.embeddings, ["embeddings.token_type_embeddings.weight"]))
    pairs.append((embedding.layer_norm.gamma, ["embeddings.LayerNorm.weight"]))
    pairs.append((embedding.layer_norm.beta, ["embeddings.LayerNorm.bias"]))
    for index, block in enumerate(backbone.encoder_blocks):
        prefix = f"encoder.layer.{index}"
        qkv = block.self_attention.query_key_value
        pairs.append((qkv.kernel, [f"{prefix}.attention.self.{name}.weight" for name in ("query", "key", "value")]))
        pairs.append((qkv.bias, [f"{prefix}.attention.self.{name}.bias" for name in ("query", "key", "value")]))
        layers = [(block.self_attention.output_dense, f"{prefix}.attention.output.dense"),
                  (block.intermediate_dense, f"{prefix}.intermediate.dense"),
                  (block.output_dense, f"{prefix}.output.dense")]
        for layer, name in layers:
            pairs.append((layer.kernel, [f"{name}.weight"]))
            pairs.append((layer.bias, [f"{name}.bias"]))
        for layer_norm, name in [(block.attention_layer_norm, f"{prefix}.attention.output.LayerNorm"),
                                 (block.output_layer_norm, f"{prefix}.output.LayerNorm")]:
            pairs.append((layer_norm.gamma, [f"{name}.weight"]))
            pairs.append((layer_norm.beta, [f"{name}.bias"]))
    pairs.append((backbone.pooler.kernel, ["pooler.dense.weight"]))
    pairs.append((backbone.pooler.bias, ["pooler.dense.bias"]))
    return pairs


def _to_keras(name, array):
    """Transpose dense kernels; embeddings stay (rows, hidden), and `.T` leaves 1-D LayerNorm weights alone."""
    return array if name.startswith("embeddings.") else array.T


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
    >>> backbone = load_hf_checkpoint(bertlib.resources.minilm_dir())
    """
    from safetensors.numpy import load_file

    from bertlib.model import BertBackbone

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
    for variable, names in _weight_names(backbone):
        missing = [name for name in names if name not in tensors]
        if missing:
            raise ValueError(f"{weights_file} lacks the weight {missing[0]!r}; is this a BERT checkpoint?")
        value = np.concatenate([_to_keras(name, tensors[name]) for name in names], axis=-1)
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
    tensors = {}
    for variable, names in _weight_names(backbone):
        value = np.asarray(variable.numpy(), dtype="float32")
        for name, part in zip(names, np.split(value, len(names), axis=-1)):
            tensors[name] = np.ascontiguousarray(_to_keras(name, part))  # transposing twice is the identity
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
