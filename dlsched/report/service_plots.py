"""Plots of inference services, as SVG for the HTML report (or PNG to look at): SLO attainment
over time, the end-to-end latency CDF with its p50/p99, running requests (batch size) over
time, replicas over time and KV-cache use over time.

Inputs are plain series (``ServiceSeries``), so the simulator's services and a real service's
measured run (``dlsched inference validate``) draw the same figures.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from dlsched.report.plots import _new_axes, _to_svg, cdf_points

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

GRID = 600  # points of each over-time curve
Step = tuple[np.ndarray, np.ndarray]  # a step function: values[i] holds from times[i]


@dataclass(frozen=True)
class ServiceSeries:
    name: str
    arrival: np.ndarray  # per request, seconds
    latency: np.ndarray  # end to end, seconds (NaN: never served)
    met: np.ndarray  # bool per request: met its SLO
    batch: Step  # running requests, all replicas together
    replicas_held: Step
    replicas_ready: Step
    kv_fraction: Step | None  # KV blocks in use / blocks of the replicas


def step_sum(steps: Sequence[Step], grid: np.ndarray) -> np.ndarray:
    """Several step functions (0 before their first time) summed on ``grid``."""
    total = np.zeros(len(grid))
    for times, values in steps:
        if len(times) == 0:
            continue
        index = np.searchsorted(times, grid, side="right") - 1
        total += np.where(index >= 0, np.asarray(values, dtype=float)[np.maximum(index, 0)],
                          0.0)
    return total


def intervals_count(starts: Sequence[float], ends: Sequence[float],
                    weights: Sequence[float] | None = None) -> Step:
    """How many [start, end) intervals (or their weights) hold at each change."""
    w = [1.0] * len(starts) if weights is None else list(weights)
    events = sorted([(s, x) for s, x in zip(starts, w, strict=True)]
                    + [(e, -x) for e, x in zip(ends, w, strict=True)])
    times, values, count = [], [], 0
    for t, step in events:
        count += step
        times.append(t)
        values.append(count)
    return np.array(times, dtype=float), np.array(values, dtype=float)


def _time_axis(series: Sequence[ServiceSeries]) -> tuple[np.ndarray, float, str]:
    ends = [float(np.nanmax(s.arrival)) for s in series if len(s.arrival)]
    ends += [float(s.batch[0][-1]) for s in series if len(s.batch[0])]  # the drain too
    end = max(ends, default=1.0)
    scale, unit = (3600.0, "hours") if end > 2 * 3600 else (60.0, "minutes") if end > 120 \
        else (1.0, "seconds")
    return np.linspace(0.0, max(end, 1e-9), GRID), scale, unit


Drawer = Callable[[Sequence[ServiceSeries]], tuple["Figure", "Axes", int]]


def attainment_over_time(series: Sequence[ServiceSeries]) -> tuple[Figure, Axes, int]:
    grid, scale, unit = _time_axis(series)
    figure, axes = _new_axes(f"arrival ({unit})", "SLO attainment (%)")
    edges = np.linspace(grid[0], grid[-1], 61)  # 60 buckets
    for s in series:
        bucket = np.clip(np.searchsorted(edges, s.arrival, side="right") - 1, 0, 59)
        counts = np.bincount(bucket, minlength=60)
        met = np.bincount(bucket, weights=s.met.astype(float), minlength=60)
        with np.errstate(invalid="ignore", divide="ignore"):
            share = np.where(counts > 0, 100 * met / np.maximum(counts, 1), np.nan)
        axes.step(edges[:-1] / scale, share, where="post",
                  label=f"{s.name} ({100 * s.met.mean():.1f}% overall)")
    axes.set_ylim(-2, 102)
    return figure, axes, len(series)


def latency_cdf(series: Sequence[ServiceSeries]) -> tuple[Figure, Axes, int]:
    figure, axes = _new_axes("end-to-end latency (s)", "fraction of requests")
    drawn = 0
    for s in series:
        served = s.latency[~np.isnan(s.latency)]
        if not len(served):
            continue
        x, y = cdf_points(served)
        p50, p99 = np.percentile(served, [50, 99])
        (line,) = axes.plot(x, y, label=f"{s.name} (p50 {p50:.2f} s, p99 {p99:.2f} s)")
        for q in (p50, p99):
            axes.axvline(q, color=line.get_color(), alpha=0.4, linestyle=":")
        drawn += 1
    if drawn:
        axes.set_xscale("log")
    return figure, axes, drawn


def _over_time(ylabel: str, pick: Callable[[ServiceSeries], list[tuple[str, Step]]],
               series: Sequence[ServiceSeries]) -> tuple[Figure, Axes, int]:
    grid, scale, unit = _time_axis(series)
    figure, axes = _new_axes(f"time ({unit})", ylabel)
    drawn = 0
    for s in series:
        for label, step in pick(s):
            axes.step(grid / scale, step_sum([step], grid), where="post", label=label)
            drawn += 1
    return figure, axes, drawn


def batch_over_time(series: Sequence[ServiceSeries]) -> tuple[Figure, Axes, int]:
    return _over_time("running requests (batch)", lambda s: [(s.name, s.batch)], series)


def replicas_over_time(series: Sequence[ServiceSeries]) -> tuple[Figure, Axes, int]:
    return _over_time("replicas", lambda s: [(f"{s.name}: holding GPUs", s.replicas_held),
                                             (f"{s.name}: serving", s.replicas_ready)], series)


def kv_over_time(series: Sequence[ServiceSeries]) -> tuple[Figure, Axes, int]:
    figure, axes, drawn = _over_time(
        "KV cache in use (%)", lambda s: [] if s.kv_fraction is None else [
            (s.name, (s.kv_fraction[0], 100 * s.kv_fraction[1]))], series)
    return figure, axes, drawn


@dataclass(frozen=True)
class SharedCluster:
    """GPUs held by the services' replicas and by training jobs over time, and when training
    jobs were preempted (a reclaim, when the services took the GPUs back)."""

    service_gpus: Step
    training_gpus: Step
    preemptions: tuple[float, ...]


def cluster_gpus(shared: SharedCluster) -> tuple[Figure, Axes, int]:
    """Up to half as long again as the services held GPUs: the training jobs' long tail
    after the services' hours would squeeze the part where they share the cluster."""
    times = shared.service_gpus[0]
    end = 1.5 * float(times[-1]) if len(times) else float(shared.training_gpus[0][-1])
    scale, unit = (3600.0, "hours") if end > 2 * 3600 else (60.0, "minutes")
    grid = np.linspace(0.0, end, GRID * 2)
    figure, axes = _new_axes(f"time ({unit})", "GPUs held")
    for label, step in (("service replicas", shared.service_gpus),
                        ("training jobs", shared.training_gpus)):
        axes.step(grid / scale, step_sum([step], grid), where="post", label=label)
    if shared.preemptions:
        at = np.array(shared.preemptions) / scale
        axes.plot(at, np.zeros(len(at)), "|", color="red", markersize=14,
                  label=f"training preemptions ({len(at)})")
    return figure, axes, 2


FIGURES: tuple[tuple[str, Drawer], ...] = (
    ("SLO attainment over time (by arrival)", attainment_over_time),
    ("End-to-end latency (CDF)", latency_cdf),
    ("Batch size over time", batch_over_time),
    ("Replicas over time", replicas_over_time),
    ("KV-cache use over time", kv_over_time),
)


def service_svgs(series: Sequence[ServiceSeries]) -> list[tuple[str, str]]:
    return [(heading, _to_svg(*draw(series))) for heading, draw in FIGURES]


def service_pngs(series: Sequence[ServiceSeries], folder: Path) -> list[Path]:
    """The same figures as PNG files (to look at them outside a browser)."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for i, (_, draw) in enumerate(FIGURES):
        figure, axes, drawn = draw(series)
        if drawn:
            axes.legend(loc="best", fontsize="small")
        path = folder / f"service-{i}-{draw.__name__}.png"
        figure.savefig(path, dpi=90, bbox_inches="tight")
        paths.append(path)
    return paths
