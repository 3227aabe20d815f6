"""Small server-rendered SVG charts for the dashboard (no JavaScript plotting library): a time
series as an area under a line, with a ceiling line (e.g. the cluster's GPUs) and a few axis
labels. Everything written into the SVG is a number or an escaped label."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from html import escape

WIDTH, HEIGHT = 640, 160
LEFT, RIGHT, TOP, BOTTOM = 44, 8, 10, 22


@dataclass(frozen=True)
class Series:
    times: Sequence[float]  # UNIX times
    values: Sequence[float]
    ceiling: float | None = None  # drawn as a dashed line (capacity)
    unit: str = ""
    # per point, the run it belongs to (a job's attempt): a new run starts a new line, so the
    # time between two attempts (a backoff, a wait in the queue) is left blank, not drawn as
    # a straight line across it as if the job had run meanwhile
    runs: Sequence[int | None] = ()


def _runs(series: Series) -> list[tuple[int, int]]:
    """``(first, end)`` index ranges of the series' points, one per run (all one without
    ``runs``)."""
    if not series.runs:
        return [(0, len(series.times))]
    bounds = [i for i in range(1, len(series.runs)) if series.runs[i] != series.runs[i - 1]]
    starts, ends = [0, *bounds], [*bounds, len(series.times)]
    return list(zip(starts, ends, strict=True))


def time_chart(series: Series, title: str) -> str:
    """An SVG area chart of ``series``; an empty series says so instead."""
    if not series.times:
        return (f'<svg class="chart" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" '
                f'aria-label="{escape(title)}"><text x="{WIDTH / 2}" y="{HEIGHT / 2}" '
                f'text-anchor="middle" class="chart-empty">no data yet</text></svg>')
    t0, t1 = min(series.times), max(series.times)
    top = max([*series.values, series.ceiling or 0.0, 1e-9]) * 1.05
    x = _scale(t0, t1 if t1 > t0 else t0 + 1, LEFT, WIDTH - RIGHT)
    y = _scale(0.0, top, HEIGHT - BOTTOM, TOP)
    parts = [f'<svg class="chart" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" '
             f'aria-label="{escape(title)}">']
    for first, end in _runs(series):
        line = " ".join(f"{x(t):.1f},{y(v):.1f}" for t, v in zip(
            series.times[first:end], series.values[first:end], strict=True))
        area = (f"{x(series.times[first]):.1f},{y(0):.1f} {line} "
                f"{x(series.times[end - 1]):.1f},{y(0):.1f}")
        parts += [f'<polygon class="chart-area" points="{area}"/>',
                  f'<polyline class="chart-line" points="{line}"/>']
    if series.ceiling is not None:
        parts.append(f'<line class="chart-ceiling" x1="{LEFT}" x2="{WIDTH - RIGHT}" '
                     f'y1="{y(series.ceiling):.1f}" y2="{y(series.ceiling):.1f}"/>')
    parts += _axes(x, y, t0, t1, top, series.unit)
    parts.append("</svg>")
    return "".join(parts)


def _scale(lo: float, hi: float, out_lo: float, out_hi: float):  # type: ignore[no-untyped-def]
    span = (hi - lo) or 1.0
    return lambda v: out_lo + (v - lo) / span * (out_hi - out_lo)


def _axes(x, y, t0: float, t1: float, top: float, unit: str) -> list[str]:  # type: ignore[no-untyped-def]
    parts = [f'<line class="chart-axis" x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{y(0):.1f}" '
             f'y2="{y(0):.1f}"/>']
    for value in (0.0, top / 1.05 / 2, top / 1.05):
        parts.append(f'<text class="chart-label" x="{LEFT - 4}" y="{y(value) + 4:.1f}" '
                     f'text-anchor="end">{_number(value)}{escape(unit)}</text>')
    fmt = "%H:%M:%S" if t1 - t0 < 600 else "%H:%M" if t1 - t0 < 2 * 86400 else "%m-%d %H:%M"
    for i in range(5):
        t = t0 + (t1 - t0) * i / 4
        anchor = "start" if i == 0 else "end" if i == 4 else "middle"
        parts.append(f'<text class="chart-label" x="{x(t):.1f}" y="{HEIGHT - 6}" '
                     f'text-anchor="{anchor}">{time.strftime(fmt, time.localtime(t))}</text>')
    return parts


def _number(value: float) -> str:
    return f"{value:.0f}" if value >= 10 or value == int(value) else f"{value:.2g}"
