"""The attention explorer (chapter 02): every head's attention map over a sentence or a pair, as a heatmap or as
token-to-token lines, with the share each head gives to [CLS] and [SEP] (Clark et al., 2019)."""


import numpy as np

from bertlib_course.explore.common import ASSETS, LABEL_STYLE, enable_colab_widgets, encode, mime_bundle, png
from bertlib_course.messages import chapter_text, formatted, translate

SPECIAL_SHARE_TOKENS = ("[CLS]", "[SEP]")
HOVER_HINT = "Hover a token to see where it looks."
FIRST_HEAD_NOTE = " (first head; the red row marks it in every head)"  # after the hovered token's keys


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
        whole = {"mean": "mean of all heads", "grid": "every head"}.get(self.head)
        head = chapter_text(whole, lang) if whole else formatted("head {h}", lang, h=self.head)
        cls_share, sep_share = (self.shares[token][self.layer] for token in SPECIAL_SHARE_TOKENS)
        pick = slice(None) if self.head in ("mean", "grid") else self.head
        text = formatted("layer {layer}, {head}, {count} tokens: {cls} of the attention goes to [CLS], {sep} to [SEP].",
                         lang, layer=self.layer, head=head, count=len(self.tokens),
                         cls=f"{np.mean(cls_share[pick]):.0%}", sep=f"{np.mean(sep_share[pick]):.0%}")
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
                axis.set_title(formatted("head {h}", h=index), fontsize=9)
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
                "head_labels": [formatted("head {h}", h=index) for index in range(len(selected))] if len(selected) > 1
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

        enable_colab_widgets()
        self._view = _attention_view_class()(mode=self.view, **self._payload())
        config = self.backbone.config
        layer = widgets.Dropdown(options=[(formatted("layer {i}", i=i), i) for i in range(config.num_layers)],
                                 value=self.layer, description=translate("Layer"), style=LABEL_STYLE)
        head_options = ([(formatted("head {h}", h=i), i) for i in range(config.num_heads)]
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
            status.value = formatted("encoded: {count} tokens", count=len(self.tokens))
            self.redraw()

        for control in (layer, head, view):
            control.observe(on_change, names="value")
        run.on_click(on_run)
        return widgets.VBox([widgets.HBox([text, run]), widgets.HBox([pair, status]),
                             widgets.HBox([layer, head, view]), self._view])

    def _repr_mimebundle_(self, include=None, exclude=None):
        return mime_bundle(self, {"image/png": png(self.figure())}, self.caption())


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
