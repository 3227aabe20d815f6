"""Plots comparing runs, each returned as an SVG string to embed inline in the HTML report.

Figures are drawn on an Agg canvas attached to the figure itself, so the process-wide pyplot
backend is never touched (an interactive session keeps its own). Long timelines are resampled
to at most ``MAX_POINTS`` points so the report stays small: utilization by time-weighted mean
per bucket (the area, hence the utilization figure, is kept), queue length by maximum per
bucket (peaks stay visible).
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal

import numpy as np

from dlsched.report.job_table import JobTable
from dlsched.report.metrics import finished_jcts
from dlsched.sim.result import SimulationResult
from dlsched.wording import DURATION_UNITS, duration_text

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

MAX_POINTS = 2000
UNIT_NAMES = {"s": "seconds", "min": "minutes", "h": "hours", "d": "days"}
FIGSIZE = (7.0, 3.6)
# A fixed salt makes the SVG element ids, hence the whole file, the same on every run.
SVG_RC = {"svg.hashsalt": "dlsched", "svg.fonttype": "none"}
# Runs that behave alike draw the same curve, and the last one drawn hid the others: each run
# gets a line style with its colour, so every run the legend names stays visible.
LINE_COLORS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
               "#7f7f7f", "#bcbd22", "#17becf")
LINE_STYLES = ("-", "--", ":", "-.", (0, (6, 2, 1, 2, 1, 2)))


def time_axis(longest: float) -> tuple[float, str]:
    """(seconds per unit, unit name) for an axis whose values reach ``longest`` seconds: the
    unit ``duration_text`` writes that value in, as the tables and the console do (hours
    alone drew a service's seconds-long jobs at 0.001)."""
    unit = duration_text(longest).rsplit(" ", 1)[1]
    size = next(size for size, name, _, _ in DURATION_UNITS if name == unit)
    return size, UNIT_NAMES[unit]


def run_label(result: SimulationResult) -> str:
    """The policy name, with its options when it has any: ``tiresias (queues=3)``."""
    options = ", ".join(f"{k}={v}" for k, v in result.info.policy_options)
    return f"{result.info.policy} ({options})" if options else result.info.policy


def downsample_step(times: Sequence[float], values: Sequence[float],
                    max_points: int = MAX_POINTS,
                    how: Literal["mean", "max"] = "mean") -> tuple[np.ndarray, np.ndarray]:
    """A step function (``values[i]`` holds from ``times[i]``) on at most ``max_points`` knots:
    equal-width buckets, each the time-weighted mean or the maximum over the bucket."""
    t = np.asarray(times, dtype=float)
    v = np.asarray(values, dtype=float)
    if t.size <= max_points or t[-1] <= t[0]:
        return t, v
    edges = np.linspace(t[0], t[-1], max_points)
    bucketed = _bucket_mean(t, v, edges) if how == "mean" else _bucket_max(t, v, edges)
    return edges, np.append(bucketed, v[-1])


def _bucket_mean(t: np.ndarray, v: np.ndarray, edges: np.ndarray) -> np.ndarray:
    # The integral of a step function is piecewise linear between knots, so interp is exact.
    integral = np.concatenate(([0.0], np.cumsum(v[:-1] * np.diff(t))))
    return np.diff(np.interp(edges, t, integral)) / np.diff(edges)


def _bucket_max(t: np.ndarray, v: np.ndarray, edges: np.ndarray) -> np.ndarray:
    holding = np.searchsorted(t, edges, side="right") - 1  # value in force at each edge
    inside = np.maximum.reduceat(v, holding[:-1])
    return np.maximum(inside, v[holding[1:]])


def _new_axes(xlabel: str, ylabel: str) -> tuple[Figure, Axes]:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=FIGSIZE)
    FigureCanvasAgg(figure)
    axes = figure.add_subplot()
    axes.set_prop_cycle(color=LINE_COLORS, linestyle=LINE_STYLES * 2)
    axes.set_xlabel(xlabel)
    axes.set_ylabel(ylabel)
    axes.grid(True, alpha=0.3)
    return figure, axes


def _to_svg(figure: Figure, axes: Axes, drawn: int) -> str:
    import matplotlib

    if drawn:
        axes.legend(loc="best", fontsize="small")
    else:
        axes.text(0.5, 0.5, "no data", ha="center", va="center", transform=axes.transAxes)
    buffer = io.StringIO()
    with matplotlib.rc_context(SVG_RC):
        figure.savefig(buffer, format="svg", metadata={"Date": None}, bbox_inches="tight")
    text = buffer.getvalue()
    return text[text.index("<svg"):]  # drop the XML prolog and doctype: inline in HTML


def cdf_points(values: Sequence[float],
               max_points: int = MAX_POINTS) -> tuple[np.ndarray, np.ndarray]:
    """Points ``(x, fraction <= x)`` of the empirical CDF, thinned to ``max_points``."""
    x = np.sort(np.asarray(values, dtype=float))
    if x.size == 0:
        return x, x
    ranks = np.unique(np.linspace(0, x.size - 1, min(x.size, max_points)).round().astype(int))
    return x[ranks], (ranks + 1) / x.size


def jct_cdf_svg(results: Sequence[SimulationResult],
                tables: Sequence[JobTable] | None = None) -> str:
    """Empirical CDF of job completion time (log scale, in the unit of the longest JCT), one
    line per run (``tables``: each run's jobs as columns, when the caller has made them)."""
    every = [finished_jcts(result, tables[at] if tables is not None else None)
             for at, result in enumerate(results)]
    scale, unit = time_axis(max((max(j, default=0.0) for j in every), default=0.0))
    figure, axes = _new_axes(f"job completion time ({unit}, log scale)", "fraction of jobs")
    drawn = 0
    for jcts, result in zip(every, results, strict=True):
        x, y = cdf_points(jcts)
        positive = x > 0  # a log axis cannot show a zero JCT
        if positive.any():
            x, y = x[positive], y[positive]
            # the curve rises at the shortest JCT shown from the share below it (0 but for
            # zero JCTs), as a CDF does, rather than starting in mid-air at 1/n
            below = np.count_nonzero(np.asarray(jcts) < x[0]) / len(jcts)
            axes.step(np.append(x[0], x) / scale, np.append(below, y), where="post",
                      label=run_label(result))
            drawn += 1
    if drawn:
        axes.set_xscale("log")
    axes.set_ylim(0, 1.02)
    return _to_svg(figure, axes, drawn)


def utilization_svg(results: Sequence[SimulationResult]) -> str:
    """Fraction of the cluster's GPUs in use over simulated time, one line per run."""
    scale, unit = time_axis(_last_time(results))
    figure, axes = _new_axes(f"time ({unit})", "GPUs in use / total")
    drawn = 0
    for result in results:
        timeline = result.timeline
        if not timeline.times or result.total_gpus <= 0:
            continue
        t, used = downsample_step(timeline.times, timeline.used_gpus, how="mean")
        axes.step(t / scale, used / result.total_gpus, where="post", label=run_label(result))
        drawn += 1
    axes.set_ylim(0, 1.05)
    return _to_svg(figure, axes, drawn)


def queue_length_svg(results: Sequence[SimulationResult]) -> str:
    """Jobs waiting to run over simulated time, one line per run."""
    scale, unit = time_axis(_last_time(results))
    figure, axes = _new_axes(f"time ({unit})", "jobs waiting")
    drawn = 0
    for result in results:
        timeline = result.timeline
        if not timeline.times:
            continue
        t, waiting = downsample_step(timeline.times, timeline.waiting, how="max")
        axes.step(t / scale, waiting, where="post", label=run_label(result))
        drawn += 1
    from matplotlib.ticker import MaxNLocator

    # A count of jobs: whole-number ticks, and 0..1 rather than 0..0.05 when no job waited.
    axes.yaxis.set_major_locator(MaxNLocator(integer=True))
    axes.set_ylim(bottom=0, top=max(1.0, axes.get_ylim()[1]))
    return _to_svg(figure, axes, drawn)


def _last_time(results: Sequence[SimulationResult]) -> float:
    """The latest time any run's timeline reaches (seconds; 0 without one)."""
    return max((float(r.timeline.times[-1]) for r in results if len(r.timeline.times)),
               default=0.0)
