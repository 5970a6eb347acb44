"""The chapters' figures, drawn in one or two lines: training curves, heat maps, bars and histograms.

A chapter's cell says what it plots (the curves, their labels, the title and the units); the matplotlib
bookkeeping (axes, legend, reference lines, tick labels, the layout) lives here, so a plotting cell stays short
and every figure of the course has a title, axis labels and units. Each function returns the matplotlib Axes
(or Figure) it drew, for a chapter that wants to add something, and calls `plt.show()` unless given `ax=`
(drawing into a figure the caller owns). A chapter marks its titles, labels and legends with `_()`;
this module's own words (default axis labels) go through `messages.translate`, so the Chinese edition shows
them in Chinese (with the CJK font `course.set_plot_style` sets).

matplotlib is imported when a function is first called, never when this module is imported.

Example:
>>> course.plot_history(pretrained["history"], {"masked LM": "mlm_loss", "next sentence": "nsp_loss"},
...                     baseline=(math.log(30522), "uniform guess over 30,522 pieces"),
...                     title="Pretraining losses", ylabel="cross-entropy (nats)")
"""

import numpy as np

from bertlib_course.messages import translate


def _pyplot():
    import matplotlib.pyplot as plt

    return plt


def _finish(ax, show):
    if show:
        ax.figure.tight_layout()
        _pyplot().show()
    return ax


def _baselines(baseline):
    """`(value, label)` or a list of them -> a list of them."""
    if baseline is None:
        return []
    if isinstance(baseline, tuple) and len(baseline) == 2 and not isinstance(baseline[0], tuple):
        return [baseline]
    return list(baseline)


def plot_lines(series, x=None, title="", xlabel="", ylabel="", baseline=None, ax=None, log_scale=False,
               ylim=None, marker="o", vlines=()):
    """Curves on one set of axes: `series` maps a legend label to its y values.

    Args:
        series: dict {label: sequence of numbers}.
        x: sequence shared by every curve, or None for 1, 2, ... (epochs, trials).
        title, xlabel, ylabel: str. Say the units in the labels.
        baseline: `(value, label)` or a list of them: dashed horizontal reference lines (chance, a uniform guess).
        ax: matplotlib Axes to draw into; None makes a figure and shows it.
        log_scale: bool, a logarithmic y axis.
        ylim: (low, high) or None.
        marker: str, the points' marker ("" for none).
        vlines: sequence of `(x, label)`: dotted vertical lines (a phase change, a warmup end).

    Returns:
        The Axes.
    """
    plt = _pyplot()
    show = ax is None
    if ax is None:
        _, ax = plt.subplots()
    for label, values in series.items():
        values = np.asarray(values, dtype=float)
        xs = np.arange(1, len(values) + 1) if x is None else np.asarray(x)
        ax.plot(xs, values, marker=marker, label=label)
    colors = ("grey", "black", "tab:red")
    for index, (value, label) in enumerate(_baselines(baseline)):
        ax.axhline(value, color=colors[index % len(colors)], linestyle="--", label=label)
    for value, label in vlines:
        ax.axvline(value, color="grey", linestyle=":", label=label)
    if log_scale:
        ax.set_yscale("log")
    if ylim is not None:
        ax.set_ylim(*ylim)
    ax.set_title(title)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.legend()
    return _finish(ax, show)


def plot_history(history, series, baseline=None, title="", xlabel=None, ylabel="", ax=None, **options):
    """Training curves from a run's history: `series` maps a legend label to a key of the history.

    Args:
        history: the records of a `bertlib` run (a list of dicts with a "step", as `pretrain` returns), or a
            Keras `History` or its `.history` dict (one value per epoch).
        series: dict {label: key}, e.g. `{"masked LM": "mlm_loss"}`.
        baseline, title, ylabel, ax, options: as `plot_lines`.
        xlabel: str, defaults to "optimizer step" for records and "epoch" for a Keras history.

    Returns:
        The Axes.
    """
    history = getattr(history, "history", history)  # a keras.callbacks.History
    if isinstance(history, dict):
        curves = {label: history[key] for label, key in series.items()}
        return plot_lines(curves, None, title, translate("epoch") if xlabel is None else xlabel, ylabel, baseline, ax,
                          **options)
    records = list(history)
    x = [record.get("step", index + 1) for index, record in enumerate(records)]
    curves = {label: [record[key] for record in records] for label, key in series.items()}
    return plot_lines(curves, x, title, translate("optimizer step") if xlabel is None else xlabel, ylabel, baseline, ax,
                      **options)


def plot_heatmaps(panels, title="", xlabel="", ylabel="", xticks=None, yticks=None, cmap="Blues", vmin=0.0,
                  vmax=None, annotations=None, panel_size=(4.0, 4.0), rotation=90):
    """Matrices side by side, one panel each: attention maps, masks, weights.

    Args:
        panels: dict {panel title: 2-D array}; a boolean array is drawn in greys (dark = True).
        title: str, the figure's title.
        xlabel, ylabel: str, the axes' labels (every panel).
        xticks, yticks: labels of the columns and rows (e.g. the tokens), or None for numbers.
        cmap: str, the colour map of non-boolean panels; a dict {panel title: cmap} sets it per panel.
        vmin, vmax: the colour scale; vmax None is each panel's maximum.
        annotations: dict {panel title: [(x, y, text, colour), ...]}: words written on a panel.
        panel_size: (width, height) in inches of one panel.
        rotation: degrees of the column labels.

    Returns:
        The Figure.
    """
    plt = _pyplot()
    fig, axes = plt.subplots(1, len(panels), figsize=(panel_size[0] * len(panels), panel_size[1]), squeeze=False)
    for axis, (name, matrix) in zip(axes[0], panels.items()):
        matrix = np.asarray(matrix)
        colours = cmap.get(name, "Blues") if isinstance(cmap, dict) else cmap
        if matrix.dtype == bool:
            matrix, colours = matrix.astype(float), "Greys"
        top = matrix.max() if vmax is None else vmax
        axis.imshow(matrix, cmap=colours, vmin=vmin, vmax=top if top > vmin else vmin + 1, aspect="auto")
        if xticks is not None:
            axis.set_xticks(range(len(xticks)), xticks, rotation=rotation)
        if yticks is not None:
            axis.set_yticks(range(len(yticks)), yticks)
        for x, y, text, colour in (annotations or {}).get(name, []):
            axis.text(x, y, text, ha="right" if x > matrix.shape[1] / 2 else "left",
                      va="top" if y < matrix.shape[0] / 2 else "bottom", color=colour)
        axis.set_title(name)
        axis.set_xlabel(xlabel)
        axis.set_ylabel(ylabel)
        axis.grid(False)
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    plt.show()
    return fig


def plot_masks(masks, title, xlabel=None, ylabel=None, annotations=None):
    """Attention masks side by side (row i = query, column j = key; dark = may attend). See `plot_heatmaps`;
    the axes say "key position j (attended to)" and "query position i" unless given."""
    xlabel = translate("key position j (attended to)") if xlabel is None else xlabel
    ylabel = translate("query position i") if ylabel is None else ylabel
    return plot_heatmaps(masks, title, xlabel, ylabel, cmap="viridis", annotations=annotations)


def plot_bars(values, title="", xlabel="", ylabel="", errors=None, ax=None, horizontal=False):
    """One bar per name: `values` maps a name to a number; `errors` maps a name to its error bar (or None)."""
    plt = _pyplot()
    show = ax is None
    if ax is None:
        _, ax = plt.subplots()
    names = list(values)
    heights = [values[name] for name in names]
    spread = None if errors is None else [errors.get(name, 0.0) for name in names]
    if horizontal:
        ax.barh(names, heights, xerr=spread)
    else:
        ax.bar(names, heights, yerr=spread)
    ax.set_title(title)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    return _finish(ax, show)


def plot_grouped_bars(values, title="", ylabel="", legend_title=None, errors=None, ax=None):
    """Bars in groups: `values` maps a series (legend entry) to {group (x position): value}.

    `errors` has the same shape as `values` (error bars), or is None.

    Example:
    >>> plot_grouped_bars({"ours, 1,000": {"Python docs": 1.40, "SST-2": 2.09},
    ...                    "BERT uncased, 30,522": {"Python docs": 1.10, "SST-2": 1.11}}, ylabel="WordPieces per word")
    """
    plt = _pyplot()
    show = ax is None
    if ax is None:
        _, ax = plt.subplots(figsize=(8, 3.5))
    groups = list(next(iter(values.values())))
    width = 0.8 / len(values)
    for offset, (series, by_group) in enumerate(values.items()):
        positions = np.arange(len(groups)) + (offset - (len(values) - 1) / 2) * width
        spread = None if errors is None else [errors[series][group] for group in groups]
        ax.bar(positions, [by_group[group] for group in groups], width, yerr=spread, label=series)
    ax.set_xticks(range(len(groups)), groups)
    ax.set_title(title)
    ax.set_ylabel(ylabel)
    ax.legend(title=legend_title)
    return _finish(ax, show)


def plot_shares(shares, title="", xlabel=None, min_label=4.0, ax=None):
    """Stacked horizontal bars of shares: `shares` maps a row to {part: fraction}; parts above `min_label`
    percent are labelled with their percentage."""
    plt = _pyplot()
    show = ax is None
    if ax is None:
        _, ax = plt.subplots(figsize=(9, 2.8))
    rows = list(shares)
    parts = list(next(iter(shares.values())))
    left = np.zeros(len(rows))
    for part in parts:
        widths = np.array([shares[row][part] for row in rows]) * 100
        ax.barh(rows, widths, left=left, label=part)
        for row, (start, width) in enumerate(zip(left, widths)):
            if width > min_label:
                ax.text(start + width / 2, row, f"{width:.0f}%", ha="center", va="center", color="white")
        left += widths
    ax.set_xlim(0, 100)
    ax.set_xlabel(translate("share of all parameters (%)") if xlabel is None else xlabel)
    ax.set_title(title)
    ax.legend(ncol=len(parts), loc="upper center", bbox_to_anchor=(0.5, -0.3))
    return _finish(ax, show)


def plot_histogram(values, bins=30, lines=(), title="", xlabel="", ylabel=None, ax=None, labels=None):
    """A histogram of `values` (or several, overlaid: a dict {label: values}), with dashed vertical `lines`
    given as `(x, label)` (an expected value, a mean)."""
    plt = _pyplot()
    show = ax is None
    if ax is None:
        _, ax = plt.subplots()
    groups = values if isinstance(values, dict) else {labels or None: values}
    for label, group in groups.items():
        ax.hist(np.asarray(group), bins=bins, alpha=0.6 if len(groups) > 1 else 1.0, label=label)
    for x, label in lines:
        ax.axvline(x, color="black", linestyle="--", label=label)
    ax.set_title(title)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(translate("count") if ylabel is None else ylabel)
    if len(groups) > 1 or lines or labels:
        ax.legend()
    return _finish(ax, show)
