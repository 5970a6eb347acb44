"""The explorers' computations, checked headless against bertlib and independent arithmetic, and their display:
a widget where widgets run, a static picture where they do not (nbconvert without widget state)."""

import keras
import nbformat
import numpy as np
import pytest

from bertlib import BertBackbone, BertConfig, BertPretrainer
from bertlib.model.checkpoint import hf_weights
from bertlib.text.masking import MaskedLMMasker
from bertlib.text.tokenizer import WordPieceTokenizer
from bertlib_course import compute, explore, reference

PAIR = ("The cat sat on the mat.", "It was tired.")


@pytest.fixture(scope="module")
def tokenizer(minilm_dir):
    return WordPieceTokenizer.from_vocab_file(minilm_dir / "vocab.txt")


@pytest.fixture(scope="module")
def small_backbone(tokenizer):
    keras.utils.set_random_seed(0)
    config = BertConfig(vocabulary_size=tokenizer.vocabulary_size, num_layers=2, num_heads=4, hidden_dim=32,
                        intermediate_dim=64, max_sequence_length=512, dropout=0.0)
    return BertBackbone(config)


def numpy_attention_probabilities(x, layer, padding_mask):
    """softmax(Q K^T / sqrt(d)) with padded keys hidden: the numpy reference on the layer's weights."""
    steps = {}
    reference.self_attention(hf_weights(layer), np.asarray(x, "float64"), padding_mask, layer.num_heads, steps=steps)
    return steps["probabilities"]


# --- attention ---------------------------------------------------------------------------------------------------

def test_attention_maps_are_the_layers_own_attention_scores(small_backbone, tokenizer):
    features, tokens = explore.encode(tokenizer, *PAIR)
    assert tokens == ["[CLS]", "the", "cat", "sat", "on", "the", "mat", ".", "[SEP]", "it", "was", "tired", ".",
                      "[SEP]"]
    maps = explore.attention_maps(small_backbone, features)
    assert maps.shape == (2, 4, 14, 14)
    np.testing.assert_allclose(maps.sum(axis=-1), 1.0, atol=1e-5)

    x = small_backbone.embedding(features["token_ids"], features["segment_ids"])
    for index, block in enumerate(small_backbone.encoder_blocks):
        output, probabilities = block(x, padding_mask=features["padding_mask"], return_attention_scores=True)
        np.testing.assert_allclose(maps[index], np.asarray(probabilities)[0], atol=1e-6)
        np.testing.assert_allclose(maps[index], numpy_attention_probabilities(x, block.self_attention,
                                                                              features["padding_mask"])[0],
                                   atol=1e-5)
        x = output


def test_attention_on_the_real_checkpoint_and_its_special_token_share(minilm_dir, tokenizer):
    from bertlib.model.checkpoint import load_hf_checkpoint

    backbone = load_hf_checkpoint(minilm_dir)
    explorer = explore.attention(backbone, tokenizer, *PAIR, layer=2, head=3)
    assert explorer.maps.shape == (6, 12, 14, 14)
    # The share by brute force: for each head, the mean over queries of the weight on [CLS] / on both [SEP]s.
    sep_positions = [i for i, token in enumerate(explorer.tokens) if token == "[SEP]"]
    for layer in range(6):
        for head in range(12):
            attention = explorer.maps[layer, head]
            cls_share = np.mean([attention[query, 0] for query in range(14)])
            sep_share = np.mean([sum(attention[query, key] for key in sep_positions) for query in range(14)])
            assert explorer.shares["[CLS]"][layer, head] == pytest.approx(cls_share, abs=1e-6)
            assert explorer.shares["[SEP]"][layer, head] == pytest.approx(sep_share, abs=1e-6)
    assert "goes to [CLS]" in explorer.caption()


def test_512_tokens_and_what_a_redraw_sends(small_backbone, tokenizer):
    long_text = " ".join(["attention grows with the square of the length"] * 80)
    explorer = explore.attention(small_backbone, tokenizer, long_text)
    assert len(explorer.tokens) == 512 and explorer.tokens[-1] == "[SEP]"
    payload = explorer.redraw(layer=1, head=2)
    values = np.frombuffer(payload["maps"], np.uint8).reshape(1, 512, 512) / 255 * payload["scale"]
    np.testing.assert_allclose(values[0], explorer.maps[1, 2], atol=payload["scale"] / 510 + 1e-7)
    grid = explorer.redraw(head="grid")
    assert grid["count"] == 4 and len(grid["maps"]) == 4 * 512 * 512
    mean = explorer.redraw(head="mean")
    np.testing.assert_allclose(np.frombuffer(mean["maps"], np.uint8).reshape(512, 512) / 255 * mean["scale"],
                               explorer.maps[1].mean(axis=0), atol=mean["scale"] / 510 + 1e-7)
    with pytest.raises(ValueError, match="head=7"):
        explorer.redraw(head=7)
    with pytest.raises(ValueError, match="513 tokens"):
        explore.attention_maps(small_backbone, {name: np.ones((1, 513), "int32") for name in
                                                ("token_ids", "segment_ids", "padding_mask")})


def test_the_widget_changes_its_picture_when_the_head_changes(small_backbone, tokenizer):
    pytest.importorskip("anywidget")
    explorer = explore.attention(small_backbone, tokenizer, *PAIR)
    widget = explorer.widget
    head_selector = widget.children[2].children[1]
    before = explorer._view.maps
    head_selector.value = 1
    assert explorer.head == 1 and explorer._view.maps != before
    head_selector.value = "grid"
    assert explorer._view.count == 4
    widget.children[2].children[2].value = "lines"
    assert explorer._view.mode == "lines"


def test_static_fallback_is_what_nbconvert_shows_without_widget_state(small_backbone, tokenizer):
    pytest.importorskip("anywidget")
    from nbconvert import HTMLExporter

    explorer = explore.attention(small_backbone, tokenizer, *PAIR)
    bundle = explorer._repr_mimebundle_()
    assert bundle["image/png"].startswith(b"\x89PNG")
    assert "application/vnd.jupyter.widget-view+json" in bundle
    import base64

    data = {**bundle, "image/png": base64.b64encode(bundle["image/png"]).decode()}
    cell = nbformat.v4.new_code_cell("explorer", outputs=[nbformat.v4.new_output("display_data", data=data)])
    page, _ = HTMLExporter().from_notebook_node(nbformat.v4.new_notebook(cells=[cell]))
    assert f'src="data:image/png;base64,{data["image/png"][:40]}' in page


# --- masking -----------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("whole_word", [False, True])
def test_mask_counts_are_those_of_the_masker(tokenizer, whole_word):
    text = "Unaffable résumés were tokenized by hyperparameters nobody had tuned before the deadline."
    for seed in range(5):
        draw = explore.draw_masks(tokenizer, text, seed=seed, selection_rate=0.4, whole_word=whole_word)
        # The same masker, called directly, counted here by hand.
        token_ids = np.array([tokenizer.token_to_id(token) for token in draw.tokens])[None]
        masker = MaskedLMMasker.from_tokenizer(tokenizer, selection_rate=0.4, max_predictions=token_ids.shape[1],
                                               whole_word=whole_word)
        masked = masker(token_ids, seed=seed)
        slots = masked["mask_weights"][0] > 0
        positions = masked["mask_positions"][0][slots]
        shown, original = masked["token_ids"][0][positions], token_ids[0][positions]
        assert draw.counts["selected"] == len(positions)
        assert draw.counts["mask"] == np.sum(shown == tokenizer.mask_id)
        assert draw.counts["random"] == np.sum((shown != tokenizer.mask_id) & (shown != original))
        assert draw.counts["kept"] == np.sum(shown == original)
        assert draw.shown == [tokenizer.id_to_token(i) for i in masked["token_ids"][0]]
        assert draw.counts["eligible"] == len(draw.tokens) - 2 and draw.counts["tokens"] == len(draw.tokens)
        assert draw.expected["selected"] == pytest.approx(0.4 * len(draw.tokens))  # [CLS] and [SEP] count
        assert draw.expected["kept"] == pytest.approx(0.4 * len(draw.tokens) * 0.1)
        if not whole_word:  # the budget, rounded, is what the masker selected
            assert draw.counts["selected"] == round(draw.expected["selected"])
        if whole_word:  # every "##" piece is selected exactly when the piece before it is
            selected = [status is not None for status in draw.status]
            for position, token in enumerate(draw.tokens):
                if token.startswith("##"):
                    assert selected[position] == selected[position - 1], (seed, draw.tokens, draw.status)


def test_masking_explorer_updates_and_renders(tokenizer):
    explorer = explore.masking(tokenizer, "The quick brown fox jumps over the lazy dog.")
    draw = explorer.update(selection_rate=1.0, mask_token_rate=0.5, random_token_rate=0.9, seed=3)
    assert explorer.options["random_token_rate"] == pytest.approx(0.5)  # capped: the shares cannot pass 100%
    assert draw.counts["selected"] == draw.counts["eligible"] == 10
    assert draw.counts["mask"] + draw.counts["random"] + draw.counts["kept"] == 10
    assert "What the model sees" in explorer._repr_mimebundle_()["text/html"]


# --- schedule and budget -----------------------------------------------------------------------------------------

def test_schedule_budget_against_the_paper_and_the_formula():
    paper = explore.schedule_budget()
    # A.2's schedule written out: linear warmup to 1e-4 over 10k steps, then 1e-4 * (1 - step / 1M).
    for step, rate in zip(paper["steps"], paper["learning_rates"]):
        expected = 1e-4 * step / 10_000 if step < 10_000 else 1e-4 * (1 - step / 1_000_000)
        assert rate == pytest.approx(expected, rel=1e-5, abs=1e-12)
    assert paper["learning_rates"].max() == pytest.approx(1e-4, rel=2e-4)  # at step 9,999 (then 1% lower)
    assert paper["tokens"] == 1_000_000 * 256 * (0.9 * 128 + 0.1 * 512)  # 4.26e10, chapter 05's figure
    base = BertConfig.preset("base")
    flops = sum(fraction * 1e6 * 256 * n * (6 * 109_482_240 + 12 * 12 * n * 768) for n, fraction in ((128, 0.9),
                                                                                                      (512, 0.1)))
    assert paper["flops"] == pytest.approx(flops, rel=1e-12)
    assert compute.training_flops_per_token(base, 128) == 6 * 109_482_240 + 12 * 12 * 128 * 768
    # appendix A.2: "approximately 40 epochs over the 3.3 billion word corpus" if every step is 256 x 512 tokens.
    assert explore.schedule_budget(long_fraction=1.0)["epochs"] == pytest.approx(40, rel=0.05)

    with pytest.raises(ValueError, match="warmup_steps"):
        explore.schedule(total_steps=100_000, warmup_steps=200_000)
    explorer = explore.schedule(total_steps=100_000)
    assert explorer.budget["steps"].max() == 100_000
    # The sliders can ask for more warmup than steps: the explorer caps it instead of failing.
    assert explorer.update(warmup_steps=500_000)["learning_rates"][-2] > 0
    assert "paper's recipe" in explorer._repr_mimebundle_()["text/html"]
    with pytest.raises(TypeError, match="peak"):
        explore.schedule(peak=1e-3)


# --- masked-word predictions -------------------------------------------------------------------------------------

def test_top_k_predictions_are_the_heads_most_likely_tokens(tokenizer):
    keras.utils.set_random_seed(1)
    config = BertConfig(vocabulary_size=tokenizer.vocabulary_size, num_layers=1, num_heads=2, hidden_dim=16,
                        intermediate_dim=32, max_sequence_length=64, dropout=0.0)
    pretrainer = BertPretrainer(BertBackbone(config))
    text = "The [MASK] sat on the [MASK]."
    results = explore.top_k_predictions(pretrainer, tokenizer, text, k=3)
    assert len(results) == 2 and all(len(candidates) == 3 for candidates in results)

    features, tokens = explore.encode(tokenizer, text)
    positions = [i for i, token in enumerate(tokens) if token == "[MASK]"]
    hidden = pretrainer.backbone(features)["sequence_output"]
    logits = np.asarray(pretrainer.mlm_head(hidden, np.array([positions], "int32")))[0].astype("float64")
    probabilities = np.exp(logits - logits.max(-1, keepdims=True))
    probabilities /= probabilities.sum(-1, keepdims=True)
    for row, candidates in zip(probabilities, results):
        best = np.argsort(-row)[:3]
        assert [token for token, _ in candidates] == [tokenizer.id_to_token(i) for i in best]
        np.testing.assert_allclose([p for _, p in candidates], row[best], rtol=1e-4)

    with pytest.raises(TypeError, match="no masked-LM head"):
        explore.top_k_predictions(pretrainer.backbone, tokenizer, text)
    with pytest.raises(ValueError, match="no \\[MASK\\]"):
        explore.top_k_predictions(pretrainer, tokenizer, "Nothing hidden here.")
    assert "[MASK] 2" in explore.predictions(pretrainer, tokenizer, text)._repr_mimebundle_()["text/html"]


# --- language ----------------------------------------------------------------------------------------------------

def _controls(widget):
    """Every widget under `widget`, depth first."""
    yield widget
    for child in getattr(widget, "children", ()):
        yield from _controls(child)


def _shown_words(widget):
    """The labels a learner reads on the controls: descriptions, option labels, tooltips, plain labels."""
    words = []
    for control in _controls(widget):
        words += [text for text in (getattr(control, "description", ""), getattr(control, "tooltip", "")) if text]
        words += [label for label in getattr(control, "_options_labels", ())]
        words += list(getattr(control, "tooltips", ()) or ())
        if type(control).__name__ == "Label" and control.value:
            words.append(control.value)
    return words


def _figure_words(fig):
    from matplotlib.text import Text

    return [text.get_text() for text in fig.findobj(Text) if sum(char.isascii() and char.isalpha()
                                                                 for char in text.get_text()) > 1]


def test_the_explorers_speak_chinese_in_the_chinese_edition(small_backbone, tokenizer, monkeypatch):
    """Controls, tables, captions and figure text through `messages.translate`, where the explorers write them:
    every figure text with words in it is drawn in Chinese (nothing of matplotlib is patched)."""
    import re

    import matplotlib

    matplotlib.use("Agg")

    pytest.importorskip("ipywidgets")
    monkeypatch.setenv("BERTLIB_LANG", "zh")
    cjk = re.compile(r"[\u4e00-\u9fff]")
    untranslated = lambda words: [word for word in words if word != "[MASK]" and not cjk.search(word)]  # noqa: E731

    masking = explore.masking(tokenizer, "The quick brown fox jumps over the lazy dog.", whole_word=True)
    bundle = masking._repr_mimebundle_()
    assert "模型看到的" in bundle["text/html"] and "What the model sees" not in bundle["text/html"]
    assert "个词元中选中" in bundle["text/plain"]
    assert untranslated(_shown_words(masking.widget)) == []
    assert "整词掩码" in _shown_words(masking.widget)

    schedule = explore.schedule(total_steps=100_000)
    assert "论文的配方" in schedule.table_html() and "tokens seen" not in schedule.table_html()
    assert untranslated(_shown_words(schedule.widget)) == []
    assert untranslated(_figure_words(schedule.figure())) == []

    pretrainer = BertPretrainer(small_backbone)
    predictions = explore.predictions(pretrainer, tokenizer, "The [MASK] sat.")
    assert untranslated(_shown_words(predictions.widget)) == []
    text_box, status = predictions.widget.children[0], predictions.widget.children[1].children[1]
    text_box.value = "No mask here."  # what a learner may type: the error shows in the learner's language
    assert status.value == "'No mask here.' 里没有 [MASK]：在希望模型猜词的位置写上 [MASK]。"
    with pytest.raises(ValueError, match="has no \\[MASK\\]"):  # a caller's traceback stays English
        explore.top_k_predictions(pretrainer, tokenizer, "No mask here.")

    attention = explore.attention(small_backbone, tokenizer, *PAIR, layer=1, head=3)
    assert attention.caption().startswith("层 1、头 3，14 个词元：") and attention.caption().endswith("看它关注哪里。")
    assert attention.caption(lang="en").startswith("layer 1, head 3, 14 tokens: ")
    for head in (3, "grid"):
        attention.head = head
        words = [word for word in _figure_words(attention.figure()) if word not in attention.tokens]  # not ticks
        assert untranslated(words) == []
    pytest.importorskip("anywidget")
    assert untranslated(_shown_words(attention.widget)) == []
    payload = attention.redraw(head="grid")
    assert payload["head_labels"][0] == "头 0" and payload["words"]["attends_to"] == "{token} 关注：{keys}"


def test_the_explorers_speak_english_elsewhere(tokenizer, monkeypatch):
    pytest.importorskip("ipywidgets")
    monkeypatch.setenv("BERTLIB_LANG", "en")
    masking = explore.masking(tokenizer, "The quick brown fox.")
    assert "whole-word masking" in _shown_words(masking.widget)
    assert "tokens selected" in masking._repr_mimebundle_()["text/plain"]
