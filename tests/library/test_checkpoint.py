"""Real weights: all-MiniLM-L6-v2 (a BERT-architecture checkpoint) against keras-hub and the numpy reference
(`bertlib.model.reference`, run on the checkpoint's own arrays)."""

import json
import shutil

import keras
import numpy as np
import pytest

from bertlib import BertBackbone, BertConfig
from bertlib.model import reference
from bertlib.model.checkpoint import hf_weights, load_hf_checkpoint, save_hf_checkpoint

PAIRS = [
    ("Who invented the telephone?", "Alexander Graham Bell invented the telephone in 1876."),
    ("The cat sat on the mat.", "A dog barked at the mailman."),
    ("Résumé writing is hard.", "Naïve café owners serve ½ portions!"),
    ("BERT is bidirectional.", "GPT reads left to right, one token at a time."),
]


@pytest.fixture(scope="module")
def real_inputs(minilm_dir):
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(minilm_dir / "tokenizer.json"))
    tokenizer.enable_padding(pad_id=0, length=32)
    encodings = tokenizer.encode_batch(PAIRS)
    return {"token_ids": np.array([e.ids for e in encodings], "int32"),
            "segment_ids": np.array([e.type_ids for e in encodings], "int32"),
            "padding_mask": np.array([e.attention_mask for e in encodings], "int32")}


@pytest.fixture(scope="module")
def backbone(minilm_dir):
    return load_hf_checkpoint(minilm_dir)


def sequence_output(model, inputs):
    return keras.ops.convert_to_numpy(model(inputs)["sequence_output"])


def test_config_read_from_checkpoint(backbone):
    config = backbone.config
    assert (config.num_layers, config.hidden_dim, config.num_heads, config.intermediate_dim) == (6, 384, 12, 1536)
    assert config.vocabulary_size == 30522 and config.activation == "gelu"


def test_matches_keras_hub_on_real_sentence_pairs(minilm_dir, backbone, real_inputs):
    """keras-hub reads the same folder. It builds BERT with the tanh approximation of GELU (as the original
    TensorFlow code did), while this checkpoint declares the exact GELU; so we compare twice: our
    approximate-GELU model against keras-hub as shipped, and our exact model against keras-hub with its
    feed-forward activation set to the exact GELU the checkpoint was trained with."""
    import keras_hub

    reference = keras_hub.models.BertBackbone.from_preset(str(minilm_dir))
    real = real_inputs["padding_mask"].astype(bool)

    approximate = BertBackbone(BertConfig.from_dict({**backbone.config.to_dict(), "activation": "gelu_approximate"}))
    approximate.set_weights(backbone.get_weights())
    expected = sequence_output(reference, real_inputs)
    np.testing.assert_allclose(sequence_output(approximate, real_inputs)[real], expected[real], atol=1e-4)

    for layer in reference.transformer_layers:
        layer._feedforward_intermediate_dense.activation = lambda x: keras.activations.gelu(x, approximate=False)
    expected = sequence_output(reference, real_inputs)
    np.testing.assert_allclose(sequence_output(backbone, real_inputs)[real], expected[real], atol=1e-4)


def raw_weights(minilm_dir):
    """The checkpoint's own arrays, as safetensors stores them, in float64: nothing of bertlib's layers."""
    from safetensors.numpy import load_file

    return {k: v.astype("float64") for k, v in load_file(str(minilm_dir / "model.safetensors")).items()}


def test_matches_numpy_reference(minilm_dir, backbone, real_inputs):
    """bertlib's backbone against `bertlib.model.reference`, numpy only, run on the raw checkpoint arrays."""
    expected = reference.bert(raw_weights(minilm_dir), backbone.config, real_inputs)
    real = real_inputs["padding_mask"].astype(bool)
    np.testing.assert_allclose(sequence_output(backbone, real_inputs)[real], expected["sequence_output"][real],
                               atol=1e-4)
    np.testing.assert_allclose(keras.ops.convert_to_numpy(backbone(real_inputs)["pooled_output"]),
                               expected["pooled_output"], atol=1e-4)


def test_numpy_reference_matches_keras_hub(minilm_dir, backbone, real_inputs):
    """The reference itself against an independent implementation: keras-hub with the checkpoint's exact GELU."""
    import keras_hub

    keras_hub_model = keras_hub.models.BertBackbone.from_preset(str(minilm_dir))
    for layer in keras_hub_model.transformer_layers:
        layer._feedforward_intermediate_dense.activation = lambda x: keras.activations.gelu(x, approximate=False)
    expected = sequence_output(keras_hub_model, real_inputs)
    ours = reference.bert(raw_weights(minilm_dir), backbone.config, real_inputs)["sequence_output"]
    real = real_inputs["padding_mask"].astype(bool)
    np.testing.assert_allclose(ours[real], expected[real], atol=1e-4)


def test_hf_weights_are_the_checkpoint_arrays(minilm_dir, backbone):
    """The one mapping (`weight_map`) gives back every array of the checkpoint, by name and in its layout."""
    ours, theirs = hf_weights(backbone), raw_weights(minilm_dir)
    theirs.pop("embeddings.position_ids", None)
    assert set(ours) == set(theirs)
    for name, array in theirs.items():
        np.testing.assert_array_equal(ours[name], array, err_msg=name)


def test_fused_attention_agrees_with_explicit(minilm_dir, backbone, real_inputs):
    fused = load_hf_checkpoint(minilm_dir, attention="fused")
    real = real_inputs["padding_mask"].astype(bool)
    np.testing.assert_allclose(sequence_output(fused, real_inputs)[real],
                               sequence_output(backbone, real_inputs)[real], atol=1e-5)


def test_save_then_load_gives_identical_weights(backbone, tmp_path, real_inputs):
    save_hf_checkpoint(backbone, tmp_path / "copy", vocabulary=["[PAD]", "[UNK]"])
    assert sorted(p.name for p in (tmp_path / "copy").iterdir()) == ["config.json", "model.safetensors", "vocab.txt"]
    reloaded = load_hf_checkpoint(tmp_path / "copy")
    assert reloaded.config == backbone.config
    for ours, theirs in zip(backbone.weights, reloaded.weights):
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def test_saved_checkpoint_uses_hugging_face_names_and_layouts(backbone, minilm_dir, tmp_path):
    from safetensors.numpy import load_file

    save_hf_checkpoint(backbone, tmp_path / "copy")
    original = load_file(str(minilm_dir / "model.safetensors"))
    written = load_file(str(tmp_path / "copy" / "model.safetensors"))
    original.pop("embeddings.position_ids", None)
    assert set(written) == set(original)
    for name, array in original.items():
        np.testing.assert_array_equal(written[name], array, err_msg=name)


def copy_checkpoint(minilm_dir, tmp_path):
    target = tmp_path / "ckpt"
    target.mkdir()
    for name in ("config.json", "model.safetensors"):
        shutil.copy(minilm_dir / name, target / name)
    return target


def test_missing_files_are_named(tmp_path, minilm_dir):
    with pytest.raises(FileNotFoundError, match="not a folder"):
        load_hf_checkpoint(tmp_path / "nowhere")
    with pytest.raises(FileNotFoundError, match="config.json"):
        load_hf_checkpoint(tmp_path)
    target = copy_checkpoint(minilm_dir, tmp_path)
    (target / "model.safetensors").unlink()
    with pytest.raises(FileNotFoundError, match="model.safetensors"):
        load_hf_checkpoint(target)


def test_a_config_that_is_not_bert(tmp_path, minilm_dir):
    target = copy_checkpoint(minilm_dir, tmp_path)
    config = json.loads((target / "config.json").read_text())
    (target / "config.json").write_text(json.dumps({**config, "model_type": "gpt2"}))
    with pytest.raises(ValueError, match="model_type='gpt2'; expected 'bert'"):
        load_hf_checkpoint(target)
    (target / "config.json").write_text(json.dumps({**config, "hidden_act": "relu"}))
    with pytest.raises(ValueError, match="hidden_act='relu'"):
        load_hf_checkpoint(target)


def test_shape_mismatch_names_the_weight(tmp_path, minilm_dir):
    target = copy_checkpoint(minilm_dir, tmp_path)
    config = json.loads((target / "config.json").read_text())
    (target / "config.json").write_text(json.dumps({**config, "intermediate_size": 1000}))
    with pytest.raises(ValueError, match=r"encoder.layer.0.intermediate.dense.weight.*\(384, 1536\).*\(384, 1000\)"):
        load_hf_checkpoint(target)
