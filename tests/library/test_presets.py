"""Presets in keras-hub's sense: `BertBackbone.save_to_preset` / `from_preset` and the tokenizer's, checked
against keras-hub's own `save_to_preset` (the folder layout) and `load_hf_checkpoint` (real weights)."""

import json

import keras
import numpy as np
import pytest

from bertlib import BertBackbone, BertConfig, WordPieceTokenizer
from bertlib.model.checkpoint import load_hf_checkpoint

SMALL = BertConfig.preset("tiny", vocabulary_size=40, max_sequence_length=16)
TOKENS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat", "sat", "##s", "on", "mat", "."]


def inputs(vocabulary_size, batch=2, seq=8, seed=0):
    rng = np.random.default_rng(seed)
    mask = np.ones((batch, seq), "int32")
    mask[1, seq // 2:] = 0
    return {"token_ids": rng.integers(0, vocabulary_size, (batch, seq)).astype("int32"),
            "segment_ids": (np.arange(seq) >= seq // 2).astype("int32")[None].repeat(batch, 0),
            "padding_mask": mask}


def outputs(model, x):
    return {name: keras.ops.convert_to_numpy(value) for name, value in model(x).items()}


def tree(folder):
    return sorted(str(path.relative_to(folder)) for path in folder.rglob("*") if path.is_file())


def test_round_trip_gives_identical_weights_and_outputs(tmp_path):
    backbone = BertBackbone(SMALL)
    backbone.save_to_preset(tmp_path / "preset")
    reloaded = BertBackbone.from_preset(tmp_path / "preset")
    assert type(reloaded) is BertBackbone and reloaded.config == backbone.config
    assert [w.path for w in reloaded.weights] == [w.path for w in backbone.weights]
    for ours, theirs in zip(backbone.weights, reloaded.weights):
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy(), err_msg=ours.path)
    x = inputs(SMALL.vocabulary_size)
    for name, value in outputs(backbone, x).items():
        np.testing.assert_array_equal(outputs(reloaded, x)[name], value, err_msg=name)
    half = BertBackbone.from_preset(tmp_path / "preset", dtype="mixed_bfloat16")
    assert half.pooler.dtype_policy.name == "mixed_bfloat16"
    np.testing.assert_array_equal(half.pooler.kernel.numpy(), backbone.pooler.kernel.numpy())  # float32 still
    fresh = BertBackbone.from_preset(tmp_path / "preset", load_weights=False)
    assert fresh.config == backbone.config
    assert not np.array_equal(fresh.pooler.kernel.numpy(), backbone.pooler.kernel.numpy())


def test_metadata_and_config_are_what_keras_writes(tmp_path):
    import bertlib

    backbone = BertBackbone(SMALL)
    backbone.save_to_preset(tmp_path / "preset")
    metadata = json.loads((tmp_path / "preset" / "metadata.json").read_text())
    assert metadata["parameter_count"] == SMALL.num_params() == backbone.count_params()
    assert (metadata["keras_version"], metadata["bertlib_version"]) == (keras.version(), bertlib.__version__)
    config = json.loads((tmp_path / "preset" / "config.json").read_text())
    expected = keras.saving.serialize_keras_object(backbone)
    for key in ("build_config", "compile_config"):  # keras-hub leaves these out too
        expected.pop(key, None)
    assert config == json.loads(json.dumps(expected))
    assert config["registered_name"] == "bertlib>BertBackbone"


def test_layout_matches_keras_hub(tmp_path):
    """keras-hub's own save_to_preset, for its BertBackbone and BertTokenizer, against ours: the same files
    and the same config.json / tokenizer.json / metadata.json keys (metadata's keras_hub_version and tasks
    are keras-hub's own; bertlib writes bertlib_version)."""
    import keras_hub

    theirs = tmp_path / "keras_hub"
    keras_hub.models.BertBackbone(vocabulary_size=len(TOKENS), num_layers=1, num_heads=2, hidden_dim=8,
                                  intermediate_dim=16, max_sequence_length=16).save_to_preset(theirs)
    keras_hub.models.BertTokenizer(vocabulary=TOKENS).save_to_preset(theirs)
    ours = tmp_path / "bertlib"
    tokenizer = WordPieceTokenizer(TOKENS)
    backbone = BertBackbone(BertConfig.preset("tiny", vocabulary_size=len(TOKENS)))
    backbone.save_to_preset(ours, tokenizer=tokenizer)
    assert tree(ours) == tree(theirs) == ["assets/tokenizer/vocabulary.txt", "config.json", "metadata.json",
                                          "model.weights.h5", "tokenizer.json"]
    for name in ("config.json", "tokenizer.json"):
        assert (json.loads((ours / name).read_text()).keys()
                == json.loads((theirs / name).read_text()).keys() == {"module", "class_name", "config",
                                                                      "registered_name"}), name
    their_metadata = json.loads((theirs / "metadata.json").read_text()).keys()
    our_metadata = json.loads((ours / "metadata.json").read_text()).keys()
    assert our_metadata - their_metadata == {"bertlib_version"}
    assert their_metadata - our_metadata == {"keras_hub_version", "tasks"}
    vocabulary = "assets/tokenizer/vocabulary.txt"
    assert (ours / vocabulary).read_text() == (theirs / vocabulary).read_text()
    assert WordPieceTokenizer.from_preset(ours).vocabulary == TOKENS
    with pytest.raises(ValueError, match=r"'keras_hub>BertTokenizer', not a bertlib WordPieceTokenizer"):
        WordPieceTokenizer.from_preset(theirs)


def test_a_keras_hub_preset_is_refused_with_the_reason(tmp_path):
    """bertlib has no map from keras-hub's layers (its one weight map is to Hugging Face names), and a Keras
    weights file is keyed by each model's own layer tree: keras-hub's h5 holds layers/reversible_embedding
    and layers/transformer_encoder/_self_attention_layer/query_dense ((hidden, heads, head_dim) kernels),
    bertlib's layers/bert_embedding and one fused query/key/value kernel. Only the pooler (`layers/dense`, in
    both) has the same path; Keras' load_weights would fail on the rest after loading it. So the preset is
    refused before anything is loaded, saying why."""
    import h5py
    import keras_hub

    theirs = tmp_path / "keras_hub"
    keras_hub.models.BertBackbone(vocabulary_size=40, num_layers=2, num_heads=2, hidden_dim=128,
                                  intermediate_dim=512, max_sequence_length=16).save_to_preset(theirs)
    BertBackbone(SMALL).save_to_preset(tmp_path / "ours")

    def weight_paths(folder):
        with h5py.File(folder / "model.weights.h5") as file:
            found = []
            file.visititems(lambda name, item: found.append(name) if isinstance(item, h5py.Dataset) else None)
            return set(found)

    their_paths, our_paths = weight_paths(theirs), weight_paths(tmp_path / "ours")
    assert their_paths & our_paths == {"layers/dense/vars/0", "layers/dense/vars/1"}  # the pooler
    assert any("/query_dense/" in path for path in their_paths)  # query, key and value apart in keras-hub
    assert not any("/query_dense/" in path for path in our_paths)
    assert any("/query_key_value/" in path for path in our_paths)  # one fused kernel in bertlib
    with pytest.raises(ValueError, match=r"describes 'keras_hub>BertBackbone'.*keras-hub's own layer tree"):
        BertBackbone.from_preset(theirs)


def test_real_checkpoint_as_a_preset(minilm_dir, tmp_path):
    """from_preset names load_hf_checkpoint for the Hugging Face folder (reading it would close an import
    cycle, bertlib.model.presets); its backbone saved as a preset and read back by from_preset computes exactly what
    load_hf_checkpoint's does. The tokenizer reads the folder's vocab.txt and its tokenizer_config.json."""
    from tokenizers import Tokenizer

    with pytest.raises(ValueError, match=r"is a Hugging Face folder \(model_type='bert'.*load_hf_checkpoint"):
        BertBackbone.from_preset(minilm_dir)
    expected = load_hf_checkpoint(minilm_dir)
    expected.save_to_preset(tmp_path / "minilm")
    backbone = BertBackbone.from_preset(tmp_path / "minilm")
    assert backbone.config == expected.config
    tokenizer = WordPieceTokenizer.from_preset(minilm_dir)
    text = ("Who invented the telephone?", "Alexander Graham Bell, in 1876.")
    hf_tokenizer = Tokenizer.from_file(str(minilm_dir / "tokenizer.json"))
    hf_tokenizer.no_padding()
    reference = hf_tokenizer.encode(*text)
    x = {name: values[None] for name, values in tokenizer.pack(*text, sequence_length=24).items()}
    assert list(x["token_ids"][0][:len(reference.ids)]) == reference.ids
    want = outputs(expected, x)
    for name, value in outputs(backbone, x).items():
        np.testing.assert_array_equal(value, want[name], err_msg=name)
    backbone.save_to_preset(tmp_path / "with_tokenizer", tokenizer=tokenizer)
    reread = WordPieceTokenizer.from_preset(tmp_path / "with_tokenizer")
    assert reread.pack(*text, sequence_length=24)["token_ids"].tolist() == x["token_ids"][0].tolist()


def test_architecture_names_give_random_weights():
    backbone = BertBackbone.from_preset("tiny")
    assert backbone.config == BertConfig.preset("tiny")
    assert backbone.count_params() == BertConfig.preset("tiny").num_params()


def test_tokenizer_round_trip_keeps_vocabulary_and_options(tmp_path):
    tokenizer = WordPieceTokenizer(TOKENS, lowercase=False, strip_accents=True, never_split=["[X]"],
                                   split_cjk=False)
    tokenizer.save_to_preset(tmp_path / "tok")
    reloaded = WordPieceTokenizer.from_preset(tmp_path / "tok")
    assert reloaded.vocabulary == TOKENS
    assert ((reloaded.lowercase, reloaded.strip_accents, reloaded.never_split, reloaded.split_cjk)
            == (False, True, ("[X]",), False))
    assert reloaded.tokenize("The cats sat [X]") == tokenizer.tokenize("The cats sat [X]")


def test_bad_inputs_are_named(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"'.*nowhere' is not a folder nor a built-in preset.*tiny"):
        BertBackbone.from_preset(str(tmp_path / "nowhere"))
    with pytest.raises(FileNotFoundError, match="not a folder"):
        WordPieceTokenizer.from_preset(tmp_path / "nowhere")
    only_metadata = tmp_path / "only_metadata"
    only_metadata.mkdir()
    (only_metadata / "metadata.json").write_text("{}")
    with pytest.raises(FileNotFoundError, match=r"only_metadata/config.json not found.*metadata.json"):
        BertBackbone.from_preset(only_metadata)
    with pytest.raises(FileNotFoundError, match="holds no tokenizer"):
        WordPieceTokenizer.from_preset(only_metadata)
    (only_metadata / "config.json").write_text('{"hello": 1}')
    with pytest.raises(ValueError, match=r"config.json is not a Keras config \(module, class_name, config\)"):
        BertBackbone.from_preset(only_metadata)


def test_a_preset_without_weights_is_named(tmp_path):
    BertBackbone(SMALL).save_to_preset(tmp_path / "preset")
    (tmp_path / "preset" / "model.weights.h5").unlink()
    with pytest.raises(FileNotFoundError, match=r"model.weights.h5 not found.*load_weights=False"):
        BertBackbone.from_preset(tmp_path / "preset")


def test_a_non_empty_target_is_refused_and_kept(tmp_path):
    target = tmp_path / "preset"
    target.mkdir()
    (target / "notes.txt").write_text("mine")
    backbone = BertBackbone(SMALL)
    with pytest.raises(FileExistsError, match=r"preset is not empty.*notes.txt.*overwrite=True"):
        backbone.save_to_preset(target)
    with pytest.raises(FileExistsError, match="not empty"):
        WordPieceTokenizer(TOKENS).save_to_preset(target)
    assert tree(target) == ["notes.txt"]
    assert sorted(path.name for path in tmp_path.iterdir()) == ["preset"]  # no staging folder left behind
    backbone.save_to_preset(target, overwrite=True)
    assert tree(target) == ["config.json", "metadata.json", "model.weights.h5"]
    assert sorted(path.name for path in tmp_path.iterdir()) == ["preset"]
    (tmp_path / "file").write_text("")
    with pytest.raises(FileExistsError, match="is a file"):
        backbone.save_to_preset(tmp_path / "file")


def test_a_failed_write_leaves_the_old_preset(tmp_path, monkeypatch):
    target = tmp_path / "preset"
    BertBackbone(SMALL).save_to_preset(target)
    before = (target / "model.weights.h5").read_bytes()
    other = BertBackbone(SMALL)
    monkeypatch.setattr(other, "save_weights", lambda path: (_ for _ in ()).throw(OSError("disk full")))
    with pytest.raises(OSError, match="disk full"):
        other.save_to_preset(target, overwrite=True)
    assert (target / "model.weights.h5").read_bytes() == before
    assert sorted(path.name for path in tmp_path.iterdir()) == ["preset"]


def test_a_tokenizer_of_another_size_is_refused_before_writing(tmp_path):
    with pytest.raises(ValueError, match="12 pieces but the backbone's embedding has 40 rows"):
        BertBackbone(SMALL).save_to_preset(tmp_path / "preset", tokenizer=WordPieceTokenizer(TOKENS))
    assert not (tmp_path / "preset").exists()
