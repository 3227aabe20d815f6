"""``DIR/reproduce.csv``, ``DIR/reproduce.svg`` (dlsched against the reference, one panel per
metric) and ``DIR/reproduce.html`` (the table, the figure and how it was made)."""

from __future__ import annotations

import csv
import html
import io
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dlsched import __version__
from dlsched.reproduce.rows import COLUMNS, ReproduceRow

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

CSV_NAME, HTML_NAME, SVG_NAME = "reproduce.csv", "reproduce.html", "reproduce.svg"
SVG_RC = {"svg.hashsalt": "dlsched", "svg.fonttype": "none"}


def write_outputs(rows: Sequence[ReproduceRow], out: Path, title: str, command: str) -> Path:
    """Write the three files into ``out``; returns the CSV's path."""
    out.mkdir(parents=True, exist_ok=True)
    write_csv(rows, out / CSV_NAME)
    svg = parity_svg(rows)
    (out / SVG_NAME).write_text(svg)
    (out / HTML_NAME).write_text(render_html(rows, title, command, svg))
    return out / CSV_NAME


def write_csv(rows: Sequence[ReproduceRow], path: Path) -> None:
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(COLUMNS)
        writer.writerows(row.cells() for row in rows)


def parity_svg(rows: Sequence[ReproduceRow]) -> str:
    """dlsched's value against the reference (log-log), one panel per metric, one colour per
    policy, the diagonal and a ±10% band: points off the band are disagreements."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    paired = [r for r in rows if r.dlsched and r.reference and r.dlsched > 0 and r.reference > 0]
    metrics = sorted({r.metric for r in paired}) or ["(no reference numbers)"]
    figure = Figure(figsize=(4.0 * len(metrics), 3.8))
    FigureCanvasAgg(figure)
    for index, metric in enumerate(metrics, start=1):
        _panel(figure.add_subplot(1, len(metrics), index), metric,
               [r for r in paired if r.metric == metric])
    figure.tight_layout()
    return _svg(figure)


def _panel(ax: Axes, metric: str, rows: Sequence[ReproduceRow]) -> None:
    ax.set_title(metric, fontsize="medium")
    ax.set_xlabel("reference")
    ax.set_ylabel("dlsched")
    if not rows:
        ax.text(0.5, 0.5, "no data", ha="center", va="center",
                transform=ax.transAxes)
        return
    for policy in sorted({r.policy for r in rows}):
        mine = [r for r in rows if r.policy == policy]
        ax.scatter([r.reference for r in mine], [r.dlsched for r in mine],
                   s=14, label=policy)
    low = min(min(r.reference or 0, r.dlsched or 0) for r in rows) / 1.2
    high = max(max(r.reference or 0, r.dlsched or 0) for r in rows) * 1.2
    line = [low, high]
    ax.plot(line, line, color="grey", linewidth=0.8)
    ax.fill_between(line, [v * 0.9 for v in line], [v * 1.1 for v in line],
                    color="grey", alpha=0.15, label="±10%")
    ax.set_xscale("log")
    ax.set_yscale("log")
    # the same range on both axes: both get the same labelled ticks (the y axis of
    # jct_mean_s, wider by the band, kept only '10k' against the x axis' 8k, 9k, 10k)
    ax.set_xlim(low, high)
    ax.set_ylim(low, high)
    for axis in (ax.xaxis, ax.yaxis):  # '7 × 10⁴8 × 10⁴9 × 10⁴' ran together: write 70k
        _ticks(axis, low, high)
    ax.grid(True, alpha=0.3)
    ax.legend(loc="best", fontsize="small")


def _ticks(axis: Any, low: float, high: float) -> None:
    """Within a decade or so, three to five round values (25k, 30k, 35k): matplotlib's log
    ticks labelled every minor tick there ('30k32.5k35k37.5k' ran together) or, with the range
    a little wider, one; wider ranges keep the log ticks, labelled with ``compact``."""
    from matplotlib.ticker import FuncFormatter, MaxNLocator, NullLocator

    if high / low > 12:
        axis.set_major_formatter(_short_labels(minor=False))
        axis.set_minor_formatter(_short_labels(minor=True))
        return
    axis.set_major_locator(MaxNLocator(nbins=5, steps=[1, 2, 2.5, 5, 10], min_n_ticks=3))
    axis.set_minor_locator(NullLocator())
    axis.set_major_formatter(FuncFormatter(lambda value, _: compact(value)))


def compact(value: float) -> str:
    """A tick label short enough not to run into its neighbours: 70k, 1.5M, 0.4."""
    for size, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= size:
            return f"{value / size:g}{suffix}"
    return f"{value:g}"


def _short_labels(minor: bool) -> Any:
    """Labels the ticks matplotlib's log formatter labels (a subset of the minor ones on a
    wide axis), written with ``compact``."""
    from matplotlib.ticker import LogFormatterSciNotation

    class Short(LogFormatterSciNotation):
        def __call__(self, x: float, pos: int | None = None) -> str:
            return compact(x) if super().__call__(x, pos) else ""

    return Short(labelOnlyBase=not minor)


def _svg(figure: Figure) -> str:
    import matplotlib

    buffer = io.StringIO()
    with matplotlib.rc_context(SVG_RC):
        figure.savefig(buffer, format="svg", metadata={"Date": None})
    text = buffer.getvalue()
    return text[text.index("<svg"):]


def render_html(rows: Sequence[ReproduceRow], title: str, command: str, svg: str) -> str:
    head = "".join(f"<th class='{kind}'>{html.escape(name)}</th>"
                   for kind, name in zip(_CELL_CLASS, COLUMNS, strict=True))
    body = "\n".join(_html_row(r) for r in rows)
    return (f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}"
            f"</title><style>{_STYLE}</style></head><body><h1>{html.escape(title)}</h1>"
            f"<p>dlsched {html.escape(__version__)}: <code>{html.escape(command)}</code>. "
            f"rel_diff = dlsched / reference − 1; green within 5%, amber within 10%.</p>"
            f"<figure>{svg}</figure><div class='rows'><table><tr>{head}</tr>\n{body}</table>"
            "</div></body></html>\n")


# Each column's cell class: names stay on one line (a browser broke 'gavel-osdi20' and
# 'continuous-100' at their hyphen beside a wide source column), numbers line up on the right.
_CELL_CLASS = ("name", "name", "name", "name", "num", "num", "num", "source")


def _html_row(row: ReproduceRow) -> str:
    cells = list(row.cells(exact=False))
    diff = row.rel_diff
    cells[6] = "" if diff is None else f"{diff * 100:+.1f}%"
    classes = list(_CELL_CLASS)
    classes[6] += "" if diff is None else " ok" if abs(diff) <= 0.05 else \
        " near" if abs(diff) <= 0.1 else " off"
    return "<tr>" + "".join(f"<td class='{kind}'>{html.escape(text)}</td>"
                            for kind, text in zip(classes, cells, strict=True)) + "</tr>"


_STYLE = ("body{font-family:sans-serif;margin:2em}table{border-collapse:collapse;font-size:13px}"
          "td,th{border:1px solid #ccc;padding:3px 6px;text-align:left}.ok{background:#dfd}"
          ".near{background:#ffd}.off{background:#fdd}"
          ".name{white-space:nowrap}.num{white-space:nowrap;text-align:right;"
          "font-variant-numeric:tabular-nums}"
          # on a narrow window the table scrolls sideways rather than breaking names
          ".rows{overflow-x:auto}"
          # the figure shrinks to a narrow window instead of running off it
          "figure{margin:1em 0}figure svg{max-width:100%;height:auto}")
