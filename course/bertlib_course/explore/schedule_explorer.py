"""The schedule explorer (chapter 05): the paper's pretraining recipe (appendix A.2) as a learning-rate curve and a
budget of tokens, epochs and FLOPs, with sliders for each of its settings."""

import base64

import numpy as np

from bertlib_course import compute
from bertlib_course.explore.common import LABEL_STYLE, enable_colab_widgets, mime_bundle, png
from bertlib_course.messages import formatted, translate

# The paper's pretraining recipe (appendix A.2): 1M steps of 256 sequences, peak 1e-4 after 10k warmup steps,
# 90% of the steps at 128 tokens and the last 10% at 512.
PAPER_RECIPE = {"peak_learning_rate": 1e-4, "warmup_steps": 10_000, "total_steps": 1_000_000, "batch_size": 256,
                "long_fraction": 0.1, "short_length": 128, "long_length": 512}
CORPUS_WORDS = 3.3e9  # BooksCorpus (800M) + English Wikipedia (2,500M), §3.1


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
            self._image.value = png(self.figure())
            self._table.value = self.table_html()
        return self.budget

    def figure(self):
        import matplotlib.pyplot as plt

        fig, axis = plt.subplots(figsize=(7, 3.4))
        axis.plot(self.paper["steps"] / 1e3, self.paper["learning_rates"], "--", color="gray", label=translate("paper (A.2)"))
        axis.plot(self.budget["steps"] / 1e3, self.budget["learning_rates"], label=translate("yours"))
        long_start = self.recipe["total_steps"] * (1 - self.recipe["long_fraction"]) / 1e3
        axis.axvspan(long_start, self.recipe["total_steps"] / 1e3, alpha=0.1, color="C1",
                     label=formatted("{length}-token phase", length=self.recipe["long_length"]))
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

            enable_colab_widgets()
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
            self._image = widgets.Image(value=png(self.figure()), format="png")
            self._table = widgets.HTML(self.table_html())

            def on_change(_):
                self.update(**{name: control.value for name, control in controls.items()})

            for control in controls.values():
                control.observe(on_change, names="value")
            self._widget = widgets.VBox([widgets.HBox(list(controls.values())[:3]),
                                         widgets.HBox(list(controls.values())[3:]), self._image, self._table])
        return self._widget

    def _repr_mimebundle_(self, include=None, exclude=None):
        picture = f'<img src="data:image/png;base64,{base64.b64encode(png(self.figure())).decode()}"/>'
        return mime_bundle(self, {"text/html": picture + self.table_html()},
                       formatted("{tokens} tokens, {flops} FLOPs", tokens=f"{self.budget['tokens']:.3g}",
                                 flops=f"{self.budget['flops']:.3g}"))


def schedule(config="base", **recipe):
    """A `ScheduleExplorer` starting from the paper's recipe with `recipe` changes; leave it last in a cell."""
    return ScheduleExplorer(config, **recipe)
