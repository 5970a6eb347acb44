"""`bertlib_course.yours`: the learner's `#@save` cells of chapters 02-05, loaded from the real notebooks, and a
clear error naming the notebook and cell when a copy is tampered with."""

import json
import shutil
from pathlib import Path

import pytest

from bertlib_course import yours

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"
# What the chapters build, each in the chapter that teaches it.
EXPECTED = {"02": ("Embeddings", "SelfAttention", "EncoderBlock", "Bert"),
            "03": ("MaskedLanguageModelHead", "masked_lm_loss"),
            "04": ("NextSentencePredictionHead", "MlmNspPretrainer"),
            "05": ("WarmupThenLinearDecay", "excluded_from_decay", "learner_adamw")}


def _copy(tmp_path):
    for chapter in yours.CHAPTERS:
        (source,) = NOTEBOOKS.glob(f"{chapter}_*.ipynb")
        shutil.copy(source, tmp_path / source.name)
    return tmp_path


def _edit(folder, chapter, edit):
    (path,) = folder.glob(f"{chapter}_*.ipynb")
    notebook = json.loads(path.read_text(encoding="utf-8"))
    saved = [cell for cell in notebook["cells"] if "".join(cell["source"]).startswith(yours.MARKER)]
    edit(saved)
    path.write_text(json.dumps(notebook, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return saved


def test_the_real_notebooks_define_every_piece_in_its_chapter():
    for chapter, names in EXPECTED.items():
        cells = yours.saved_cells(NOTEBOOKS, chapters=(chapter,))
        defined = " ".join(source for _path, _number, _id, source in cells)
        for name in names:
            assert f"class {name}(" in defined or f"def {name}(" in defined, (chapter, name)
    module = yours.load(NOTEBOOKS, expect=[name for names in EXPECTED.values() for name in names])
    assert module.MlmNspPretrainer.__module__ == "yours"  # run from the notebook's text, not imported


def test_upto_reads_only_the_earlier_chapters():
    module = yours.load(NOTEBOOKS, upto="03")
    assert hasattr(module, "MaskedLanguageModelHead") and not hasattr(module, "MlmNspPretrainer")


def test_the_assembled_model_is_the_learners_and_matches_bertlib(tmp_path):
    import keras
    import numpy as np

    from bertlib import BertBackbone, BertConfig, BertPretrainer

    module = yours.load(NOTEBOOKS)
    config = BertConfig(num_layers=1, num_heads=2, hidden_dim=16, intermediate_dim=32, vocabulary_size=50,
                        max_sequence_length=16, dropout=0.0)
    rng = np.random.default_rng(0)
    x = {"token_ids": rng.integers(5, 50, (2, 8)).astype("int32"), "segment_ids": np.zeros((2, 8), "int32"),
         "padding_mask": np.ones((2, 8), "int32"), "mask_positions": np.array([[1, 2], [3, 0]], "int32")}
    keras.utils.set_random_seed(0)
    reference = BertPretrainer(BertBackbone(config))
    mine = module.MlmNspPretrainer(module.Bert(config))
    mine(x)
    for theirs, ours in [(reference.backbone.embedding, mine.backbone.embedding),
                         *zip(reference.backbone.encoder_blocks, mine.backbone.encoder_blocks),
                         (reference.backbone.pooler, mine.backbone.pooler), (reference.mlm_head, mine.mlm_head),
                         (reference.nsp_head.classifier, mine.nsp_head.classifier)]:
        ours.set_weights(theirs.get_weights())
    got, expected = mine(x), reference(x)
    for name in ("mlm_logits", "nsp_logits"):
        np.testing.assert_allclose(keras.ops.convert_to_numpy(got[name]),
                                   keras.ops.convert_to_numpy(expected[name]), rtol=1e-4, atol=1e-5)
    assert mine.count_params() == reference.count_params()


def test_a_failing_saved_cell_is_named(tmp_path):
    folder = _copy(tmp_path)
    saved = _edit(folder, "03", lambda cells: cells[0]["source"].append("\nraise_here = undefined_name\n"))
    with pytest.raises(yours.SavedCellError, match=r"03_\w+\.ipynb, cell \d+ \(id " + saved[0]["id"]
                       + r"\) failed: NameError: name 'undefined_name'"):
        yours.load(folder)


def test_a_removed_marker_is_named(tmp_path):
    folder = _copy(tmp_path)

    def unmark(cells):
        for cell in cells:
            cell["source"] = cell["source"][1:]

    _edit(folder, "04", unmark)
    with pytest.raises(yours.SavedCellError, match=r"04_\w+\.ipynb has no cell starting with #@save"):
        yours.load(folder)


def test_a_missing_class_is_named(tmp_path):
    folder = _copy(tmp_path)
    _edit(folder, "05", lambda cells: cells[0].__setitem__("source", ["#@save\n", "x = 1\n"]))  # the schedule
    with pytest.raises(yours.SavedCellError, match="defines WarmupThenLinearDecay"):
        yours.load(folder, expect=("WarmupThenLinearDecay",))


def test_a_missing_notebook_is_named(tmp_path):
    folder = _copy(tmp_path)
    next(folder.glob("02_*.ipynb")).unlink()
    with pytest.raises(yours.SavedCellError, match=r"one notebook 02_\*\.ipynb in .*found none"):
        yours.load(folder)
    with pytest.raises(ValueError, match="upto='01'"):
        yours.load(folder, upto="01")


def test_the_folder_is_the_running_notebooks_else_the_working_folder(tmp_path, monkeypatch):
    edition = tmp_path / "zh"
    edition.mkdir()
    _copy(edition)
    monkeypatch.delenv("JPY_SESSION_NAME", raising=False)
    monkeypatch.chdir(NOTEBOOKS)
    assert yours.notebook_folder() == NOTEBOOKS  # Jupyter starts a kernel in its notebook's folder
    running = next(edition.glob("05_*.ipynb"))
    monkeypatch.setenv("JPY_SESSION_NAME", str(running))
    assert yours.notebook_folder() == edition  # the session's notebook wins: its edition's chapters are read
    _edit(edition, "02", lambda cells: cells[-1]["source"].append("\nedition_marker = 'zh'\n"))
    assert yours.load(upto="02").edition_marker == "zh"
