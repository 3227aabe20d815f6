"""reproduce.html as a browser shows it (seen in Chromium): the figure fits a narrow window and
its log axes' tick labels do not run together."""

from __future__ import annotations

import re

from dlsched.reproduce.output import compact, parity_svg, render_html
from dlsched.reproduce.rows import ReproduceRow

# pollux-osdi21 workload-6's makespans: 0.4 decades on a 4-inch panel, where matplotlib labels
# every minor tick and '7 × 10⁴', '8 × 10⁴', '9 × 10⁴' overlapped.
ROWS = [ReproduceRow("e", "c", p, "makespan_s", ours, ref)
        for p, ours, ref in (("tiresias", 78557, 78609), ("optimus", 66165.8, 66299),
                             ("pollux", 57665.7, 58642))]


def test_tick_labels_are_short() -> None:
    assert [compact(v) for v in (70000, 1e6, 1.5e6, 120, 0.4)] == ["70k", "1M", "1.5M", "120",
                                                                   "0.4"]
    labels = re.findall(r">([^<>]+)</text>", parity_svg(ROWS))
    assert {"60k", "70k", "80k", "90k"} <= set(labels)
    assert not any("10" in label and "×" in label for label in labels)


def test_the_figure_shrinks_to_the_window() -> None:
    page = render_html(ROWS, "t", "dlsched reproduce e", parity_svg(ROWS))
    assert "figure svg{max-width:100%;height:auto}" in page


# gavel-osdi20 continuous-100's mean JCTs: 9.4k-13.4k s against 9.6k-13.4k s.
GAVEL = [ReproduceRow("gavel-osdi20", "continuous-100", p, "jct_mean_s", ours, ref)
         for p, ours, ref in (("gavel-fifo", 9567.57, 9633.98),
                              ("gavel-maxmin-agnostic", 13062.3, 13383.3),
                              ("gavel-maxmin", 9419.24, 9572.9), ("gavel-ftf", 9805.85, 9861.12))]


def test_both_axes_of_a_panel_have_the_same_range_and_labels() -> None:
    """The y range was the x range widened by the ±10% band: the diagonal was not at 45° and
    the y axis of gavel's jct_mean_s kept one label ('10k') against the x axis' 8k, 9k, 10k."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    from dlsched.reproduce.output import _panel

    figure = Figure(figsize=(4.0, 3.8))
    FigureCanvasAgg(figure)
    axes = figure.add_subplot()
    _panel(axes, "jct_mean_s", GAVEL)
    figure.canvas.draw()

    def labels(ticks: list) -> set[str]:  # type: ignore[type-arg]
        return {t.get_text() for t in ticks if t.get_text()}

    assert axes.get_xlim() == axes.get_ylim()
    x = labels(axes.get_xticklabels() + axes.get_xticklabels(minor=True))
    y = labels(axes.get_yticklabels() + axes.get_yticklabels(minor=True))
    assert x == y and len(y) >= 3
