"""`bertlib_course.plots`: each helper draws what it is given (the data, labels, reference lines), nothing else."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

import bertlib_course as course  # noqa: E402
from bertlib_course import plots  # noqa: E402


@pytest.fixture(autouse=True)
def no_windows(monkeypatch):
    monkeypatch.setattr(plt, "show", lambda: None)
    yield
    plt.close("all")


def lines_of(ax):
    return {line.get_label(): (list(line.get_xdata()), list(line.get_ydata())) for line in ax.get_lines()}


def test_plot_history_reads_records_by_key_and_draws_the_baseline():
    history = [{"step": 50, "mlm_loss": 9.4, "nsp_loss": 0.7}, {"step": 100, "mlm_loss": 6.4, "nsp_loss": 0.69}]
    ax = course.plot_history(history, {"masked LM": "mlm_loss", "next sentence": "nsp_loss"},
                             baseline=(10.3, "uniform guess"), title="Pretraining losses", ylabel="nats")
    drawn = lines_of(ax)
    assert drawn["masked LM"] == ([50, 100], [9.4, 6.4]) and drawn["next sentence"][1] == [0.7, 0.69]
    assert drawn["uniform guess"][1] == [10.3, 10.3]
    assert (ax.get_title(), ax.get_xlabel(), ax.get_ylabel()) == ("Pretraining losses", "optimizer step", "nats")
    assert [text.get_text() for text in ax.get_legend().get_texts()] == ["masked LM", "next sentence", "uniform guess"]


def test_plot_history_takes_a_keras_history_per_epoch():
    class History:
        history = {"accuracy": [0.5, 0.75, 1.0]}

    ax = course.plot_history(History(), {"bidirectional": "accuracy"}, baseline=[(0.5, "chance")], log_scale=True)
    assert lines_of(ax)["bidirectional"] == ([1, 2, 3], [0.5, 0.75, 1.0])
    assert ax.get_xlabel() == "epoch" and ax.get_yscale() == "log"


def test_plot_lines_draws_into_a_given_axes_without_showing(monkeypatch):
    shown = []
    monkeypatch.setattr(plt, "show", lambda: shown.append(True))
    _, ax = plt.subplots()
    returned = plots.plot_lines({"a": [1, 2]}, x=[10, 20], ax=ax, vlines=[(15, "switch")], ylim=(0, 3))
    assert returned is ax and not shown
    assert lines_of(ax)["a"] == ([10, 20], [1.0, 2.0]) and lines_of(ax)["switch"][0] == [15, 15]
    assert ax.get_ylim() == (0, 3)


def test_heatmaps_and_masks_draw_one_panel_per_matrix_with_labels():
    causal = np.tril(np.ones((4, 4), bool))
    figure = course.plot_masks({"causal": causal, "both": np.ones((4, 4), int) * 3}, "Who may attend to whom",
                               annotations={"both": [(3, 0, "backward", "white")]})
    left, right = figure.axes
    assert left.get_title() == "causal" and right.get_title() == "both"
    assert np.array_equal(left.get_images()[0].get_array(), causal.astype(float))
    assert left.get_images()[0].get_cmap().name == "Greys" and right.get_images()[0].get_cmap().name == "viridis"
    assert [text.get_text() for text in right.texts] == ["backward"]
    assert figure._suptitle.get_text() == "Who may attend to whom"
    figure = course.plot_heatmaps({"head 0": np.eye(3)}, xticks=["a", "b", "c"], yticks=["x", "y", "z"])
    assert [label.get_text() for label in figure.axes[0].get_xticklabels()] == ["a", "b", "c"]


def test_bars_grouped_bars_shares_and_histograms_draw_their_values():
    ax = course.plot_grouped_bars({"small": {"docs": 1.4, "reviews": 2.1}, "large": {"docs": 1.0, "reviews": 1.6}},
                                  ylabel="pieces per word", errors={"small": {"docs": 0.1, "reviews": 0.2},
                                                                    "large": {"docs": 0.0, "reviews": 0.1}})
    heights = sorted(round(patch.get_height(), 3) for patch in ax.patches)
    assert heights == [1.0, 1.4, 1.6, 2.1]
    assert [label.get_text() for label in ax.get_xticklabels()] == ["docs", "reviews"]
    ax = course.plot_shares({"BASE": {"embeddings": 0.22, "rest": 0.78}}, title="Where the parameters are")
    assert sorted(round(patch.get_width()) for patch in ax.patches) == [22, 78]
    assert sorted(text.get_text() for text in ax.texts) == ["22%", "78%"]
    ax = course.plot_bars({"a": 1.0, "b": 2.0}, errors={"a": 0.5})
    assert [patch.get_height() for patch in ax.patches] == [1.0, 2.0]
    ax = course.plot_histogram(np.arange(10), bins=5, lines=[(4.5, "mean")])
    assert sum(patch.get_height() for patch in ax.patches) == 10 and lines_of(ax)["mean"][0] == [4.5, 4.5]
