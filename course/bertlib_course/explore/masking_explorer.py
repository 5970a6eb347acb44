"""The masking explorer (chapter 03): one draw of §3.1's masking on a sentence, the 15% selected and each
selected token replaced by [MASK], kept or swapped for a random token (80/10/10, appendix A.1)."""

import html
from dataclasses import dataclass

import numpy as np

from bertlib_course.explore.common import LABEL_STYLE, enable_colab_widgets, encode, mime_bundle
from bertlib_course.messages import formatted, translate


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

            enable_colab_widgets()
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
        return mime_bundle(self, {"text/html": masking_html(self.draw)},
                       formatted("{selected} of {eligible} tokens selected: {mask} [MASK], {kept} kept, {random} random",
                                 **{key: counts[key] for key in ("selected", "eligible", "mask", "kept", "random")}))


def masking(tokenizer, text, **options):
    """A `MaskingExplorer`; show it by leaving it last in a cell."""
    return MaskingExplorer(tokenizer, text, **options)
