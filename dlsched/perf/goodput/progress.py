"""Training progress at goodput: examples at the initial batch ``M0`` (Pollux §3.1, §5.2).

A step at global batch ``M`` with efficiency ``E(M)`` makes as much progress as ``M·E(M)``
examples at ``M0``, so progress advances at the goodput ``THROUGHPUT × E``. A job is done when its
progress reaches the application's total (``GradientStats.total_progress``: the end of its last
epoch at ``M0``). Pollux's simulator advances progress this way; dlsched integrates exactly.

At a fixed configuration the throughput ``X`` is constant and, between two epoch ends, both
``grad_sqr`` and ``grad_var`` are linear in progress ``P`` (``efficiency.py``), so
``1/E = (M0·var + M·sqr) / (M0·(var + sqr))`` is a ratio of linear functions and the time to
go from ``p`` to ``q`` has the closed form ``(1/X) ∫ₚ^q dP/E(P)``. ``advance`` inverts it with
``scipy.optimize.brentq`` inside the epoch where the interval ends.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from dlsched.perf.goodput.efficiency import GradientStats
from dlsched.perf.goodput.goodput import BatchConfig


@dataclass(frozen=True, slots=True)
class Advance:
    """Progress after an interval, and the seconds actually used (less if the job finished)."""

    progress: float
    seconds: float
    finished: bool


def _linear_parts(stats: GradientStats, batch: float, p: float, q: float) -> tuple[float, ...]:
    """``N(P) = n0 + n1·x``, ``D(P) = d0 + d1·x`` on ``P = p + x``, with ``1/E = N/D``."""
    def nd(point: float) -> tuple[float, float]:
        sqr_files = [np.interp(point, stats.progress, row) for row in stats.sqr]
        var_files = [np.interp(point, stats.progress, row) for row in stats.var]
        at = float(stats.stats_batch(batch))
        sqr = float(np.interp(at, stats.batch_sizes, sqr_files))
        var = float(np.interp(at, stats.batch_sizes, var_files))
        m0 = stats.init_batch
        return m0 * var + batch * sqr, m0 * (var + sqr)

    (n_p, d_p), (n_q, d_q) = nd(p), nd(q)
    width = q - p
    return n_p, (n_q - n_p) / width, d_p, (d_q - d_p) / width


def _inverse_efficiency_integral(stats: GradientStats, batch: float, p: float, q: float) -> float:
    """``∫ₚ^q dP / E(P)`` for ``p, q`` within one epoch (no knot strictly between them)."""
    width = q - p
    if width <= 0:
        return 0.0
    n0, n1, d0, d1 = _linear_parts(stats, batch, p, q)
    ratio = d1 * width / d0
    if abs(ratio) < 1e-6:  # D almost constant: second-order expansion of the closed form
        return n0 * width / d0 + (n1 * d0 - n0 * d1) * width**2 / (2 * d0**2)
    return n1 / d1 * width + (n0 * d1 - n1 * d0) / d1**2 * math.log1p(ratio)


def _segments(stats: GradientStats, start: float, end: float) -> list[tuple[float, float]]:
    cuts = [k for k in stats.progress if start < k < end]
    points = [start, *cuts, end]
    return list(zip(points[:-1], points[1:], strict=True))


def seconds_to_progress(stats: GradientStats, config: BatchConfig, start: float,
                        end: float) -> float:
    """Seconds to go from ``start`` to ``end`` examples of progress at a fixed configuration."""
    area = sum(_inverse_efficiency_integral(stats, config.batch, p, q)
               for p, q in _segments(stats, start, end))
    return area / config.throughput


def advance(stats: GradientStats, config: BatchConfig, start: float, seconds: float) -> Advance:
    """Progress after ``seconds`` at a fixed configuration from ``start``, capped at the total."""
    if config.throughput <= 0 or seconds <= 0:
        return Advance(start, 0.0, start >= stats.total_progress)
    budget = seconds * config.throughput  # in units of ∫ dP/E
    for p, q in _segments(stats, start, stats.total_progress):
        area = _inverse_efficiency_integral(stats, config.batch, p, q)
        if area > budget * (1 + 1e-12):
            def excess(x: float, p: float = p, target: float = budget) -> float:
                return _inverse_efficiency_integral(stats, config.batch, p, x) - target

            from scipy.optimize import brentq  # SciPy only when a root is needed

            end = brentq(excess, p, q, xtol=1e-9 * max(q, 1.0))
            return Advance(float(end), seconds, False)
        budget -= area
    used = seconds - budget / config.throughput
    return Advance(stats.total_progress, used, True)
