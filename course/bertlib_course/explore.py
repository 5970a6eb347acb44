"""Explorers a learner can play with: attention (chapter 02), masking and masked-word predictions (03), and the
pretraining schedule and budget (05).

Each explorer is two layers:

- a plain function that computes what it shows (`attention_maps`, `special_token_share`, `draw_masks`,
  `schedule_budget`, `top_k_predictions`), tested headless against bertlib;
- a small object (`attention(...)`, `masking(...)`, `schedule(...)`, `predictions(...)`) that, when it is the
  last value of a cell, displays interactive controls where widgets run, and a static picture elsewhere.

Widgets: ipywidgets for the controls (sliders, text boxes: they ship with JupyterLab and Colab), and one
anywidget for the attention canvas. We chose anywidget because hovering a token, drawing 512 x 512 cells and
token-to-token lines needs custom JavaScript, and anywidget runs an ES module shipped in this package
(`course/bertlib_course/assets/attention_view.js`, no build step, no CDN) in JupyterLab, Notebook 7, VS Code and Colab;
a plain ipywidgets extension would need a compiled JupyterLab extension for the same.

Static fallback: the displayed object's MIME bundle holds the widget view and, beside it, a PNG (attention,
schedule) or an HTML table (masking, predictions) of its initial state. A frontend running the kernel shows the
widget; nbconvert and the rendered book, which have no widget state, show the picture (nbconvert drops a widget
view whose state is not saved and takes the next type); nbval ignores both.

Language: every label, control, caption and table the explorers show goes through
`bertlib_course.messages.translate`, so the Chinese edition shows them in Chinese (the runtime catalogue, `bertlib_course/locale/zh/LC_MESSAGES/bertlib_course.po`).
Figures take English text and matplotlib translates it as it draws (`course.set_plot_style`), so a machine
without a CJK font keeps English figures instead of boxes.
"""

import base64
import html
import io
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from bertlib_course import compute
from bertlib_course.messages import translate

ASSETS = Path(__file__).parent / "assets"
SPECIAL_SHARE_TOKENS = ("[CLS]", "[SEP]")

# The paper's pretraining recipe (appendix A.2): 1M steps of 256 sequences, peak 1e-4 after 10k warmup steps,
# 90% of the steps at 128 tokens and the last 10% at 512.
PAPER_RECIPE = {"peak_learning_rate": 1e-4, "warmup_steps": 10_000, "total_steps": 1_000_000, "batch_size": 256,
                "long_fraction": 0.1, "short_length": 128, "long_length": 512}
CORPUS_WORDS = 3.3e9  # BooksCorpus (800M) + English Wikipedia (2,500M), §3.1
# Controls show their whole label ("whole-word masking", or a Chinese one) instead of cutting it at 80 pixels.
LABEL_STYLE = {"description_width": "initial"}
HOVER_HINT = "Hover a token to see where it looks."
FIRST_HEAD_NOTE = " (first head; the red row marks it in every head)"  # after the hovered token's keys


# =================================================================================================================
# Attention (chapter 02)

def encode(tokenizer, text, text_pair=None, max_length=512):
    """A sentence or a pair -> (features, tokens): a batch of one without padding, and its WordPiece strings.

    Too long an input is cut as `WordPieceTokenizer.pack` cuts it (the longer text loses its end first).
    """
    if not isinstance(text, str) or not text.strip():
        raise ValueError(f"The text to explore must be a non-empty string, got {text!r}.")
    if not 3 <= max_length <= 4096:
        raise ValueError(f"max_length={max_length} must be between 3 and 4096 tokens.")
    packed = tokenizer.pack(text, text_pair, sequence_length=max_length)
    length = int(packed["padding_mask"].sum())
    features = {name: values[None, :length].astype("int32") for name, values in packed.items()}
    tokens = [tokenizer.id_to_token(token_id) for token_id in features["token_ids"][0]]
    return features, tokens


def attention_maps(backbone, features):
    """Every head's attention probabilities: (layers, heads, seq, seq), for a batch of one.

    They come from the layers' own `return_attention_scores` path (`BertBackbone.attention_probabilities`), so
    they are exactly the weights the model uses. Rows are queries, columns keys; each row sums to 1.
    """
    import keras

    sequence_length = features["token_ids"].shape[1]
    limit = backbone.config.max_sequence_length
    if sequence_length > limit:
        raise ValueError(f"The input has {sequence_length} tokens; this model has {limit} positions. "
                         f"Encode with max_length={limit}.")
    maps = backbone.attention_probabilities(features)
    return np.stack([keras.ops.convert_to_numpy(block_map[0]).astype("float32") for block_map in maps])


def special_token_share(maps, tokens):
    """The share of attention that goes to [CLS] and to [SEP]: {token: (layers, heads) array}.

    For each head, the mean over queries of the weight on keys that are that token (both [SEP]s of a pair
    count as "[SEP]"). Chapter 07 reads these: many heads park most of their weight on [SEP] or [CLS].
    """
    tokens = list(tokens)
    shares = {}
    for special in SPECIAL_SHARE_TOKENS:
        keys = np.array([token == special for token in tokens])
        shares[special] = maps[..., keys].sum(axis=-1).mean(axis=-1)  # (layers, heads)
    return shares


def select_maps(maps, layer, head):
    """The maps to draw: (1, seq, seq) for a head or the mean of a layer's heads ("mean"); (heads, seq, seq) for
    "grid". `layer` and `head` count from 0."""
    layers, heads = maps.shape[:2]
    if not 0 <= layer < layers:
        raise ValueError(f"layer={layer} is outside 0..{layers - 1}.")
    if head == "mean":
        return maps[layer].mean(axis=0, keepdims=True)
    if head == "grid":
        return maps[layer]
    if not isinstance(head, (int, np.integer)) or not 0 <= head < heads:
        raise ValueError(f"head={head!r} must be a head in 0..{heads - 1}, 'mean' or 'grid'.")
    return maps[layer, head][None]


def quantize(selected):
    """(count, seq, seq) float maps -> (bytes of uint8 values, scale): value ≈ byte / 255 * scale."""
    scale = float(selected.max()) or 1.0
    return np.rint(selected / scale * 255).astype(np.uint8).tobytes(), scale


class AttentionExplorer:
    """Attention of a `BertBackbone` on a sentence or pair: pick a layer and a head (or all heads), see a
    heatmap or token-to-token lines; hover a token to see what it attends to; the [CLS]/[SEP] share is shown.

    Args:
        backbone: `BertBackbone`, e.g. `load_hf_checkpoint(paths.minilm_dir())`.
        tokenizer: `WordPieceTokenizer` of its vocabulary.
        text, text_pair: str and optional str.
        layer: int, defaults to 0; head: int, "mean" or "grid", defaults to 0.
        view: "heatmap" or "lines".
        max_length: int, defaults to the model's positions (512 for BERT).

    Example:
    >>> explore.attention(backbone, tokenizer, "The cat sat on the mat.", "It was tired.", layer=2, head=3)
    """

    def __init__(self, backbone, tokenizer, text, text_pair=None, layer=0, head=0, view="heatmap",
                 max_length=None):
        self.backbone = backbone
        self.tokenizer = tokenizer
        self.max_length = max_length or backbone.config.max_sequence_length
        # numpy integers (e.g. from np.unravel_index) become ints, so the widget's selectors accept them
        self.layer = int(layer)
        self.head = int(head) if isinstance(head, (int, np.integer)) else head
        if view not in ("heatmap", "lines"):
            raise ValueError(f"view={view!r} must be 'heatmap' or 'lines'.")
        self.view = view
        self._widget = None
        self.set_text(text, text_pair)
        select_maps(self.maps, layer, head)  # a bad layer or head fails here, not in the widget

    def set_text(self, text, text_pair=None):
        """Encode a new input and compute its attention maps (what the widget's Run button calls)."""
        self.text, self.text_pair = text, text_pair
        self.features, self.tokens = encode(self.tokenizer, text, text_pair, self.max_length)
        self.maps = attention_maps(self.backbone, self.features)
        self.shares = special_token_share(self.maps, self.tokens)

    def caption(self, hover=True, lang=None):
        """What the view says about the current maps, in `lang` (default: the learner's language)."""
        head = {"mean": "mean of all heads", "grid": "every head"}.get(self.head, f"head {self.head}")
        cls_share, sep_share = (self.shares[token][self.layer] for token in SPECIAL_SHARE_TOKENS)
        pick = slice(None) if self.head in ("mean", "grid") else self.head
        text = translate(f"layer {self.layer}, {head}, {len(self.tokens)} tokens: "
                         f"{np.mean(cls_share[pick]):.0%} of the attention goes to [CLS], "
                         f"{np.mean(sep_share[pick]):.0%} to [SEP].", lang)
        if not hover:
            return text
        hint = translate(HOVER_HINT, lang)
        return f"{text} {hint}" if hint == HOVER_HINT else text + hint

    def figure(self):
        """The current state as a matplotlib figure (what the static fallback shows)."""
        import matplotlib.pyplot as plt
        from matplotlib.colors import PowerNorm

        selected = select_maps(self.maps, self.layer, self.head)
        labelled = len(self.tokens) <= 48
        if len(selected) == 1:
            fig, axis = plt.subplots(figsize=(6.5, 6))
            axes = [axis]
        else:
            columns = min(4, len(selected))
            rows = -(-len(selected) // columns)
            fig, grid = plt.subplots(rows, columns, figsize=(3 * columns, 3 * rows), squeeze=False)
            axes = list(grid.flat)
            for axis in axes[len(selected):]:
                axis.axis("off")
        for index, (axis, attention) in enumerate(zip(axes, selected)):
            image = axis.imshow(attention, cmap="Blues", norm=PowerNorm(0.5, vmin=0, vmax=1),
                                interpolation="nearest")
            axis.grid(False)
            if len(selected) > 1:
                axis.set_title(translate(f"head {index}"), fontsize=9)
                axis.set_xticks([])
                axis.set_yticks([])
            elif labelled:
                axis.set_xticks(range(len(self.tokens)), self.tokens, rotation=90, fontsize=8)
                axis.set_yticks(range(len(self.tokens)), self.tokens, fontsize=8)
                axis.set_xlabel(translate("key (attended to)"))
                axis.set_ylabel(translate("query (attending)"))
            else:
                axis.set_xlabel(translate("key position"))
                axis.set_ylabel(translate("query position"))
        if len(selected) == 1:
            fig.colorbar(image, ax=axes[0], fraction=0.046, label=translate("attention weight (colour by its square root)"))
        fig.suptitle(self.caption(hover=False), fontsize=9, wrap=True)
        fig.tight_layout()
        return fig

    @property
    def widget(self):
        if self._widget is None:
            self._widget = self._build_widget()
        return self._widget

    def _payload(self):
        selected = select_maps(self.maps, self.layer, self.head)
        data, scale = quantize(selected)
        return {"maps": data, "scale": scale, "count": len(selected), "size": selected.shape[-1],
                "tokens": list(self.tokens), "caption": self.caption(),
                "head_labels": [translate(f"head {index}") for index in range(len(selected))] if len(selected) > 1
                else [],
                "words": {"attends_to": translate("{token} attends to: {keys}"),
                          "first_head": translate(FIRST_HEAD_NOTE)}}

    def redraw(self, **changes):
        """Apply `layer=`, `head=`, `view=` changes and send the new maps to the view; returns the payload."""
        for name, value in changes.items():
            setattr(self, name, value)
        select_maps(self.maps, self.layer, self.head)
        payload = self._payload()
        if self._widget is not None:
            view = self._view
            with view.hold_sync():
                view.mode = self.view
                for name, value in payload.items():
                    setattr(view, name, value)
        return payload

    def _build_widget(self):
        import ipywidgets as widgets

        _enable_colab_widgets()
        self._view = _attention_view_class()(mode=self.view, **self._payload())
        config = self.backbone.config
        layer = widgets.Dropdown(options=[(translate(f"layer {i}"), i) for i in range(config.num_layers)],
                                 value=self.layer, description=translate("Layer"), style=LABEL_STYLE)
        head_options = ([(translate(f"head {i}"), i) for i in range(config.num_heads)]
                        + [(translate("all heads: mean"), "mean"), (translate("all heads: grid"), "grid")])
        head = widgets.Dropdown(options=head_options, value=self.head, description=translate("Head"),
                                style=LABEL_STYLE)
        view = widgets.ToggleButtons(options=[(translate("heatmap"), "heatmap"), (translate("lines"), "lines")],
                                     value=self.view, tooltips=[translate("query rows, key columns"),
                                                                translate("each token to the tokens it attends to")])
        text = widgets.Text(value=self.text, description=translate("Sentence"), style=LABEL_STYLE,
                            layout=widgets.Layout(width="60%"))
        pair = widgets.Text(value=self.text_pair or "", description=translate("Pair (opt.)"), style=LABEL_STYLE,
                            layout=widgets.Layout(width="60%"))
        run = widgets.Button(description=translate("Run"),
                             tooltip=translate("encode the text and recompute every head"))
        status = widgets.Label()

        def on_change(_):
            self.redraw(layer=layer.value, head=head.value, view=view.value)

        def on_run(_):
            try:
                self.set_text(text.value, pair.value or None)
            except ValueError as error:
                status.value = translate(str(error))
                return
            status.value = translate(f"encoded: {len(self.tokens)} tokens")
            self.redraw()

        for control in (layer, head, view):
            control.observe(on_change, names="value")
        run.on_click(on_run)
        return widgets.VBox([widgets.HBox([text, run]), widgets.HBox([pair, status]),
                             widgets.HBox([layer, head, view]), self._view])

    def _repr_mimebundle_(self, include=None, exclude=None):
        return _bundle(self, {"image/png": _png(self.figure())}, self.caption())


def _attention_view_class():
    """The anywidget class of the attention canvas (imported late: the computations above need no widgets)."""
    global _AttentionView
    if _AttentionView is None:
        import anywidget
        import traitlets

        class AttentionView(anywidget.AnyWidget):
            _esm = ASSETS / "attention_view.js"
            maps = traitlets.Bytes().tag(sync=True)
            scale = traitlets.Float(1.0).tag(sync=True)
            count = traitlets.Int(1).tag(sync=True)
            size = traitlets.Int(0).tag(sync=True)
            tokens = traitlets.List(traitlets.Unicode()).tag(sync=True)
            head_labels = traitlets.List(traitlets.Unicode()).tag(sync=True)
            words = traitlets.Dict().tag(sync=True)  # the view's own words, in the learner's language
            mode = traitlets.Unicode("heatmap").tag(sync=True)
            caption = traitlets.Unicode("").tag(sync=True)
            last_draw_ms = traitlets.Float(-1.0).tag(sync=True)  # set by the browser after each draw

        _AttentionView = AttentionView
    return _AttentionView


_AttentionView = None


def attention(backbone, tokenizer, text, text_pair=None, **options):
    """An `AttentionExplorer`; show it by leaving it last in a cell. See `AttentionExplorer` for the options."""
    return AttentionExplorer(backbone, tokenizer, text, text_pair, **options)


# =================================================================================================================
# Masking (chapter 03)

@dataclass
class MaskDraw:
    """One draw of the masker on one sentence.

    `tokens`: the WordPieces with [CLS]/[SEP]; `shown`: what the model sees after masking; `status`: per token
    None (not selected), "mask", "kept" or "random" (the branches in Table 8's MASK/SAME/RND order); `counts`
    and `expected`: dicts with keys tokens, eligible, selected, mask, kept, random (expected selected = the selection rate x all tokens, [CLS] and
    [SEP] included as in the masker's budget, at most the eligible ones; before the rounding).
    """

    tokens: list
    shown: list
    status: list
    counts: dict
    expected: dict


def draw_masks(tokenizer, text, seed=0, selection_rate=0.15, mask_token_rate=0.8, random_token_rate=0.1,
               whole_word=False, max_length=512):
    """Masks one sentence with `bertlib.text.masking.MaskedLMMasker` and counts what happened to each token.

    No cap on predictions (max_predictions = the sentence length), so the selection rate alone decides.
    A random replacement that happens to draw the original token counts as kept: that is what the model sees.
    """
    from bertlib.text.masking import MaskedLMMasker

    features, tokens = encode(tokenizer, text, max_length=max_length)
    token_ids = features["token_ids"]
    masker = MaskedLMMasker.from_tokenizer(
        tokenizer, selection_rate=selection_rate, mask_token_rate=mask_token_rate,
        random_token_rate=random_token_rate, max_predictions=token_ids.shape[1], whole_word=whole_word)
    masked = masker(token_ids, seed=seed)
    shown_ids = masked["token_ids"][0]
    slots = masked["mask_weights"][0] > 0
    selected_positions = set(masked["mask_positions"][0][slots].tolist())
    status = []
    for position, (original, shown) in enumerate(zip(token_ids[0], shown_ids)):
        if position not in selected_positions:
            status.append(None)
        elif shown == tokenizer.mask_id:
            status.append("mask")
        elif shown != original:
            status.append("random")
        else:
            status.append("kept")
    eligible = int(np.sum(~np.isin(token_ids[0], tokenizer.special_token_ids)))
    num_tokens = int(np.sum(token_ids[0] != tokenizer.pad_id))  # the budget counts [CLS] and [SEP] too
    counts = {"tokens": num_tokens, "eligible": eligible, "selected": len(selected_positions),
              **{name: status.count(name) for name in ("mask", "kept", "random")}}
    selected_expected = min(num_tokens * selection_rate, eligible)
    expected = {"tokens": num_tokens, "eligible": eligible, "selected": selected_expected,
                "mask": selected_expected * mask_token_rate,
                "kept": selected_expected * (1 - mask_token_rate - random_token_rate),
                "random": selected_expected * random_token_rate}
    return MaskDraw(tokens, [tokenizer.id_to_token(i) for i in shown_ids], status, counts, expected)


_STATUS_STYLE = {None: "background:#f2f2f2;color:#222", "mask": "background:#d62728;color:#fff",
                 "random": "background:#ff7f0e;color:#fff", "kept": "background:#fff;color:#222;outline:2px solid #2ca02c"}


def masking_html(draw):
    """The draw as HTML: the WordPieces, what the model sees (coloured by branch), and the counts."""
    def chips(tokens, statuses):
        return "".join(f'<span style="{_STATUS_STYLE[status]};padding:1px 4px;margin:2px;border-radius:3px;'
                       f'display:inline-block;font-family:monospace">{html.escape(token)}</span>'
                       for token, status in zip(tokens, statuses))

    rows = "".join(f"<tr><td>{translate(name)}</td><td>{draw.counts[key]}</td><td>{draw.expected[key]:.2f}</td>"
                   "</tr>"
                   for name, key in (("tokens ([CLS], [SEP] too)", "tokens"), ("eligible tokens", "eligible"),
                                     ("selected (in the loss)", "selected"),
                                     ("replaced by [MASK]", "mask"), ("kept unchanged", "kept"),
                                     ("randomized", "random")))
    legend = " ".join(f'<span style="{_STATUS_STYLE[status]};padding:0 4px">{translate(label)}</span>'
                      for status, label in (("mask", "[MASK]"), ("kept", "kept"), ("random", "random")))
    word_pieces, sees = translate("WordPieces"), translate("What the model sees")
    this_draw, expected = translate("this draw"), translate("expected")
    return (f"<div><b>{word_pieces}</b><div>{chips(draw.tokens, [None] * len(draw.tokens))}</div>"
            f"<b>{sees}</b> ({legend})<div>{chips(draw.shown, draw.status)}</div>"
            f"<table><tr><th></th><th>{this_draw}</th><th>{expected}</th></tr>"
            f"{rows}</table></div>")


class MaskingExplorer:
    """Type a sentence, see its WordPieces and one draw of the 15% -> 80/10/10 masker, with controls for the
    seed, the selection rate, the [MASK] and random shares, and whole-word masking.

    Args: tokenizer, text, and the starting values of `draw_masks`'s options.

    Example:
    >>> explore.masking(tokenizer, "The quick brown fox jumps over the lazy dog.")
    """

    def __init__(self, tokenizer, text, seed=0, selection_rate=0.15, mask_token_rate=0.8, random_token_rate=0.1,
                 whole_word=False):
        self.tokenizer = tokenizer
        self.options = {"text": text, "seed": seed, "selection_rate": selection_rate,
                        "mask_token_rate": mask_token_rate, "random_token_rate": random_token_rate,
                        "whole_word": whole_word}
        self.draw = draw_masks(tokenizer, **self.options)
        self._widget = None

    def update(self, **changes):
        """Redraw with some options changed (what the controls call); returns the new `MaskDraw`."""
        options = {**self.options, **changes}
        options["random_token_rate"] = min(options["random_token_rate"], 1 - options["mask_token_rate"])
        self.draw = draw_masks(self.tokenizer, **options)
        self.options = options
        if self._widget is not None:
            self._output.value = masking_html(self.draw)
        return self.draw

    @property
    def widget(self):
        if self._widget is None:
            import ipywidgets as widgets

            _enable_colab_widgets()
            o = self.options
            controls = {
                "text": widgets.Text(value=o["text"], description=translate("Sentence"), style=LABEL_STYLE,
                                     layout=widgets.Layout(width="80%"), continuous_update=False),
                "seed": widgets.IntSlider(value=o["seed"], min=0, max=99, description=translate("Seed"),
                                          style=LABEL_STYLE),
                "selection_rate": widgets.FloatSlider(value=o["selection_rate"], min=0.0, max=1.0, step=0.01,
                                                      description=translate("Select"), style=LABEL_STYLE),
                "mask_token_rate": widgets.FloatSlider(value=o["mask_token_rate"], min=0.0, max=1.0, step=0.05,
                                                       description="[MASK]", style=LABEL_STYLE),
                "random_token_rate": widgets.FloatSlider(value=o["random_token_rate"], min=0.0, max=1.0,
                                                         step=0.05, description=translate("Random"),
                                                         style=LABEL_STYLE),
                "whole_word": widgets.Checkbox(value=o["whole_word"], description=translate("whole-word masking"),
                                               style=LABEL_STYLE),
            }
            self._output = widgets.HTML(masking_html(self.draw))

            def on_change(_):
                if controls["mask_token_rate"].value + controls["random_token_rate"].value > 1:
                    controls["random_token_rate"].value = round(1 - controls["mask_token_rate"].value, 2)
                    return  # that change calls on_change again
                self.update(**{name: control.value for name, control in controls.items()})

            for control in controls.values():
                control.observe(on_change, names="value")
            kept = widgets.Label(translate("kept = the rest of the selected tokens"))
            self._widget = widgets.VBox([
                controls["text"], widgets.HBox([controls["seed"], controls["selection_rate"]]),
                widgets.HBox([controls["mask_token_rate"], controls["random_token_rate"], kept]),
                controls["whole_word"], self._output])
        return self._widget

    def _repr_mimebundle_(self, include=None, exclude=None):
        counts = self.draw.counts
        return _bundle(self, {"text/html": masking_html(self.draw)},
                       translate(f"{counts['selected']} of {counts['eligible']} tokens selected: {counts['mask']} "
                                 f"[MASK], {counts['kept']} kept, {counts['random']} random"))


def masking(tokenizer, text, **options):
    """A `MaskingExplorer`; show it by leaving it last in a cell."""
    return MaskingExplorer(tokenizer, text, **options)


# =================================================================================================================
# Masked-word predictions (chapter 03)

def top_k_predictions(pretrainer, tokenizer, text, k=5, text_pair=None):
    """The `k` most likely tokens at each [MASK] of `text`, from a `BertPretrainer`'s masked-LM head.

    Returns a list with one entry per [MASK], in order: a list of (token, probability). The pretrainer must
    have a masked-LM head: all-MiniLM-L6-v2, a sentence-embedding checkpoint, ships none, so use a model
    pretrained here (e.g. `bertlib_course.evidence.tiny_pretrained()`), never a backbone.
    """
    import keras

    if not hasattr(pretrainer, "mlm_head"):
        raise TypeError(f"top_k_predictions needs a BertPretrainer (a backbone with a masked-LM head); got "
                        f"{type(pretrainer).__name__}. all-MiniLM-L6-v2 ships no masked-LM head.")
    features, tokens = encode(tokenizer, text, text_pair, max_length=pretrainer.backbone.config.max_sequence_length)
    positions = np.flatnonzero(features["token_ids"][0] == tokenizer.mask_id)
    if len(positions) == 0:
        raise ValueError(f"{text!r} has no [MASK]: write [MASK] where the model should guess a word.")
    if not 1 <= k <= tokenizer.vocabulary_size:
        raise ValueError(f"k={k} must be between 1 and the vocabulary size ({tokenizer.vocabulary_size}).")
    inputs = {**features, "mask_positions": positions[None].astype("int32")}
    logits = keras.ops.convert_to_numpy(pretrainer(inputs, training=False)["mlm_logits"][0]).astype("float64")
    logits -= logits.max(axis=-1, keepdims=True)
    probabilities = np.exp(logits) / np.exp(logits).sum(axis=-1, keepdims=True)
    results = []
    for row in probabilities:
        best = np.argsort(-row, kind="stable")[:k]
        results.append([(tokenizer.id_to_token(token_id), float(row[token_id])) for token_id in best])
    return results


def predictions_html(text, results):
    rows = []
    for index, candidates in enumerate(results, start=1):
        cells = "".join(f"<td><code>{html.escape(token)}</code> {probability:.1%}</td>"
                        for token, probability in candidates)
        rows.append(f"<tr><th>[MASK] {index}</th>{cells}</tr>")
    return f"<div><p>{html.escape(text)}</p><table>{''.join(rows)}</table></div>"


class PredictionExplorer:
    """Top-k predictions for each [MASK] in a sentence, from a pretrained `BertPretrainer` and its tokenizer.

    Example:
    >>> tiny = evidence.tiny_pretrained()
    >>> explore.predictions(tiny.pretrainer, tiny.tokenizer, "Return a [MASK] of the list.")
    """

    def __init__(self, pretrainer, tokenizer, text, k=5):
        self.pretrainer, self.tokenizer, self.k = pretrainer, tokenizer, k
        self.text = text
        self.results = top_k_predictions(pretrainer, tokenizer, text, k)
        self._widget = None

    def update(self, text=None, k=None):
        text = self.text if text is None else text
        k = self.k if k is None else k
        self.results = top_k_predictions(self.pretrainer, self.tokenizer, text, k)
        self.text, self.k = text, k
        if self._widget is not None:
            self._output.value = predictions_html(self.text, self.results)
        return self.results

    @property
    def widget(self):
        if self._widget is None:
            import ipywidgets as widgets

            _enable_colab_widgets()
            text = widgets.Text(value=self.text, description=translate("Sentence"), continuous_update=False,
                                style=LABEL_STYLE, layout=widgets.Layout(width="80%"))
            k = widgets.IntSlider(value=self.k, min=1, max=20, description=translate("top k"), style=LABEL_STYLE)
            status = widgets.Label()
            self._output = widgets.HTML(predictions_html(self.text, self.results))

            def on_change(_):
                try:
                    self.update(text.value, k.value)
                    status.value = ""
                except ValueError as error:
                    status.value = translate(str(error))

            text.observe(on_change, names="value")
            k.observe(on_change, names="value")
            self._widget = widgets.VBox([text, widgets.HBox([k, status]), self._output])
        return self._widget

    def _repr_mimebundle_(self, include=None, exclude=None):
        summary = "; ".join(f"[MASK] {i}: " + ", ".join(f"{t} {p:.0%}" for t, p in c[:3])
                            for i, c in enumerate(self.results, start=1))
        return _bundle(self, {"text/html": predictions_html(self.text, self.results)}, summary)


def predictions(pretrainer, tokenizer, text, k=5):
    """A `PredictionExplorer`; show it by leaving it last in a cell."""
    return PredictionExplorer(pretrainer, tokenizer, text, k)


# =================================================================================================================
# Schedule and budget (chapter 05)

def schedule_budget(peak_learning_rate=1e-4, warmup_steps=10_000, total_steps=1_000_000, batch_size=256,
                    long_fraction=0.1, short_length=128, long_length=512, config="base", parameters=None, points=400):
    """Learning-rate curve, tokens seen and training FLOPs of a pretraining recipe.

    The curve is `bertlib.train.schedule.WarmupLinearDecay` evaluated at `points` steps; the first
    `1 - long_fraction` of the steps use `short_length` tokens per sequence, the rest `long_length`.

    Returns a dict: steps, learning_rates (arrays), tokens (padded token positions processed), epochs
    (tokens / the 3.3B-word corpus, as the paper's "40 epochs" counts), flops and petaflop_s_days.
    """
    import keras

    from bertlib.model.config import BertConfig
    from bertlib.train.schedule import WarmupLinearDecay

    if isinstance(config, str):
        config = BertConfig.preset(config)
    if batch_size < 1:
        raise ValueError(f"batch_size={batch_size} must be at least 1.")
    if not 0.0 <= long_fraction <= 1.0:
        raise ValueError(f"long_fraction={long_fraction} must be between 0 and 1.")
    schedule = WarmupLinearDecay(peak_learning_rate, warmup_steps, total_steps)
    # The sampled steps include both sides of the end of warmup, where the original schedule drops by 1%.
    corners = [max(warmup_steps - 1, 0), warmup_steps]
    steps = np.unique(np.concatenate([np.linspace(0, total_steps, points), corners]).astype("int64"))
    learning_rates = keras.ops.convert_to_numpy(schedule(steps)).astype("float64")
    phases = [(short_length, 1.0 - long_fraction), (long_length, long_fraction)]
    tokens = sum(fraction * total_steps * batch_size * length for length, fraction in phases)
    flops = compute.run_flops(config, parameters, phases, steps=total_steps, batch=batch_size)
    return {"steps": steps, "learning_rates": learning_rates, "tokens": tokens, "epochs": tokens / CORPUS_WORDS,
            "flops": flops, "petaflop_s_days": flops / compute.PETAFLOP_S_DAY, "config": config}


class ScheduleExplorer:
    """Sliders for the peak learning rate, warmup, total steps, batch size and the 128 -> 512 split; shows the
    learning-rate curve, the tokens seen and the FLOPs beside the paper's recipe.

    Example:
    >>> explore.schedule(total_steps=100_000, batch_size=1024)
    """

    def __init__(self, config="base", **recipe):
        unknown = sorted(set(recipe) - set(PAPER_RECIPE))
        if unknown:
            raise TypeError(f"Unknown recipe setting(s) {unknown}; known: {sorted(PAPER_RECIPE)}.")
        self.config = config
        self.recipe = {**PAPER_RECIPE, **recipe}
        self.paper = schedule_budget(**PAPER_RECIPE, config=config)
        self.budget = schedule_budget(**self.recipe, config=config)
        self._widget = None

    def update(self, **changes):
        recipe = {**self.recipe, **changes}
        recipe["warmup_steps"] = min(recipe["warmup_steps"], recipe["total_steps"])
        self.budget = schedule_budget(**recipe, config=self.config)
        self.recipe = recipe
        if self._widget is not None:
            self._image.value = _png(self.figure())
            self._table.value = self.table_html()
        return self.budget

    def figure(self):
        import matplotlib.pyplot as plt

        fig, axis = plt.subplots(figsize=(7, 3.4))
        axis.plot(self.paper["steps"] / 1e3, self.paper["learning_rates"], "--", color="gray", label=translate("paper (A.2)"))
        axis.plot(self.budget["steps"] / 1e3, self.budget["learning_rates"], label=translate("yours"))
        long_start = self.recipe["total_steps"] * (1 - self.recipe["long_fraction"]) / 1e3
        axis.axvspan(long_start, self.recipe["total_steps"] / 1e3, alpha=0.1, color="C1",
                     label=translate(f"{self.recipe['long_length']}-token phase"))
        axis.set_xlabel(translate("step (thousands)"))
        axis.set_ylabel(translate("learning rate"))
        axis.set_title(translate("Warmup, then linear decay (bertlib.train.schedule.WarmupLinearDecay)"))
        axis.legend()
        fig.tight_layout()
        return fig

    def table_html(self):
        rows = [("tokens seen", "tokens", "{:.3g}"), ("epochs over 3.3B words", "epochs", "{:.1f}"),
                ("training FLOPs (6N + 12·L·n·H per token)", "flops", "{:.3g}"),
                ("petaflop/s-days", "petaflop_s_days", "{:.2f}")]
        body = "".join(f"<tr><td>{translate(name)}</td><td>{fmt.format(self.budget[key])}</td>"
                       f"<td>{fmt.format(self.paper[key])}</td></tr>" for name, key, fmt in rows)
        model = self.budget["config"]
        yours, paper = translate("yours"), translate("paper's recipe")
        return (f"<table><tr><th>BERT L={model.num_layers}, H={model.hidden_dim}</th><th>{yours}</th>"
                f"<th>{paper}</th></tr>{body}</table>")

    @property
    def widget(self):
        if self._widget is None:
            import ipywidgets as widgets

            _enable_colab_widgets()
            r = self.recipe
            controls = {
                "peak_learning_rate": widgets.FloatLogSlider(value=r["peak_learning_rate"], base=10, min=-6, max=-2,
                                                             step=0.1, description=translate("Peak LR"),
                                                             readout_format=".1e", style=LABEL_STYLE),
                "warmup_steps": widgets.IntSlider(value=r["warmup_steps"], min=0, max=100_000, step=1_000,
                                                  description=translate("Warmup"), style=LABEL_STYLE),
                "total_steps": widgets.IntSlider(value=r["total_steps"], min=10_000, max=2_000_000, step=10_000,
                                                 description=translate("Steps"), style=LABEL_STYLE),
                "batch_size": widgets.IntSlider(value=r["batch_size"], min=16, max=4096, step=16,
                                                description=translate("Batch"), style=LABEL_STYLE),
                "long_fraction": widgets.FloatSlider(value=r["long_fraction"], min=0.0, max=1.0, step=0.05,
                                                     description=translate("At 512"), style=LABEL_STYLE),
            }
            for control in controls.values():
                control.continuous_update = False
            self._image = widgets.Image(value=_png(self.figure()), format="png")
            self._table = widgets.HTML(self.table_html())

            def on_change(_):
                self.update(**{name: control.value for name, control in controls.items()})

            for control in controls.values():
                control.observe(on_change, names="value")
            self._widget = widgets.VBox([widgets.HBox(list(controls.values())[:3]),
                                         widgets.HBox(list(controls.values())[3:]), self._image, self._table])
        return self._widget

    def _repr_mimebundle_(self, include=None, exclude=None):
        picture = f'<img src="data:image/png;base64,{base64.b64encode(_png(self.figure())).decode()}"/>'
        return _bundle(self, {"text/html": picture + self.table_html()},
                       translate(f"{self.budget['tokens']:.3g} tokens, {self.budget['flops']:.3g} FLOPs"))


def schedule(config="base", **recipe):
    """A `ScheduleExplorer` starting from the paper's recipe with `recipe` changes; leave it last in a cell."""
    return ScheduleExplorer(config, **recipe)


# =================================================================================================================
# Display plumbing

def _png(fig):
    import matplotlib.pyplot as plt

    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=80)
    plt.close(fig)
    return buffer.getvalue()


def _bundle(explorer, static, text):
    """The MIME bundle: the static rendering and text, plus the widget view where ipywidgets is installed."""
    bundle = {"text/plain": text, **static}
    try:
        widget = explorer.widget
    except ImportError:  # no ipywidgets/anywidget: the static picture alone
        return bundle
    view = widget._repr_mimebundle_()
    if view:
        bundle["application/vnd.jupyter.widget-view+json"] = view["application/vnd.jupyter.widget-view+json"]
    return bundle


def _enable_colab_widgets():
    """Colab renders third-party widgets (anywidget) only with its custom widget manager switched on."""
    if "google.colab" in sys.modules:
        from google.colab import output

        output.enable_custom_widget_manager()
