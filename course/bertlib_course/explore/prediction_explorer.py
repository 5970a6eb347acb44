"""The prediction explorer (chapter 03): a pretrained model's top-k guesses for each [MASK] of a sentence."""

import html

import numpy as np

from bertlib_course.explore.common import LABEL_STYLE, enable_colab_widgets, encode, mime_bundle
from bertlib_course.messages import translate


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

            enable_colab_widgets()
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
        return mime_bundle(self, {"text/html": predictions_html(self.text, self.results)}, summary)


def predictions(pretrainer, tokenizer, text, k=5):
    """A `PredictionExplorer`; show it by leaving it last in a cell."""
    return PredictionExplorer(pretrainer, tokenizer, text, k)
