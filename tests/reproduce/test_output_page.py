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
