"""Explorers a learner can play with: attention (chapter 02), masking and masked-word predictions (03), and the
pretraining schedule and budget (05), one module each (`attention_explorer`, `masking_explorer`,
`prediction_explorer`, `schedule_explorer`; `common` holds what they share). Import them from here:
`from bertlib_course import explore; explore.attention(backbone, tokenizer, text)`.

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

from bertlib_course.explore.attention_explorer import (
    AttentionExplorer,
    attention,
    attention_maps,
    quantize,
    select_maps,
    special_token_share,
)
from bertlib_course.explore.common import ASSETS, encode
from bertlib_course.explore.masking_explorer import (
    MaskDraw,
    MaskingExplorer,
    draw_masks,
    masking,
    masking_html,
)
from bertlib_course.explore.prediction_explorer import (
    PredictionExplorer,
    predictions,
    predictions_html,
    top_k_predictions,
)
from bertlib_course.explore.schedule_explorer import (
    CORPUS_WORDS,
    PAPER_RECIPE,
    ScheduleExplorer,
    schedule,
    schedule_budget,
)

__all__ = ["ASSETS", "AttentionExplorer", "CORPUS_WORDS", "MaskDraw", "MaskingExplorer", "PAPER_RECIPE",
           "PredictionExplorer", "ScheduleExplorer", "attention", "attention_maps", "draw_masks", "encode",
           "masking", "masking_html", "predictions", "predictions_html", "quantize", "schedule",
           "schedule_budget", "select_maps", "special_token_share", "top_k_predictions"]
