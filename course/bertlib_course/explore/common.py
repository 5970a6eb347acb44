"""What the explorers share: a text encoded as a batch of one, the package's assets, the controls' label style, a
figure as PNG bytes, the MIME bundle (the widget where one can run, a static picture or table beside it) and
Colab's widget manager."""

import io
import sys
from pathlib import Path

ASSETS = Path(__file__).resolve().parent.parent / "assets"
# Controls show their whole label ("whole-word masking", or a Chinese one) instead of cutting it at 80 pixels.
LABEL_STYLE = {"description_width": "initial"}


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


def png(fig):
    import matplotlib.pyplot as plt

    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=80)
    plt.close(fig)
    return buffer.getvalue()


def mime_bundle(explorer, static, text):
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


def enable_colab_widgets():
    """Colab renders third-party widgets (anywidget) only with its custom widget manager switched on."""
    if "google.colab" in sys.modules:
        from google.colab import output

        output.enable_custom_widget_manager()
