"""A whole training run on one placement, tabulated along its progress (Pollux OSDI'21 §3, §5.2).

Pollux's jobs re-pick their batch size as training goes on: the gradient noise scale ``φ`` grows
(§3.1), so the batch of highest goodput grows too (§3.3), and AdaptDL re-tunes it every few
steps even on a fixed allocation. A ``RunTable`` holds the goodput ``g(P)`` of one placement at
knots of training progress ``P`` (examples at ``M0``): the best over batch configurations
(``best_goodputs``, co-adapted as in §3.3) or that of one fixed configuration.

Knots: 0, every epoch end (where ``grad_sqr``/``grad_var`` were measured, ``efficiency.py``)
and ``GRID_POINTS`` evenly spaced points (bert has only two epochs). Between knots ``g`` is taken
as linear in ``P``, so the seconds to go from ``p`` to ``q`` are
``(q − p)·ln(g_q / g_p) / (g_q − g_p)``; ``seconds[i]`` accumulates them from 0. The exact
closed form at a fixed configuration (``progress.seconds_to_progress``) agrees to well under
1 % (tested) and costs ~1000× more: a table is a few numpy operations, cached per placement
shape, so the first round of a policy that rates every job at every size stays cheap.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from dlsched.perf.goodput.goodput import GoodputFunction, pollux_accumulation
from dlsched.perf.goodput.iteration_time import throughput

GRID_POINTS = 33


@dataclass(frozen=True)
class RunTable:
    """Goodput at knots of progress, the global batch giving it, and the seconds to reach each
    knot from 0 (``inf`` from the first knot where the placement cannot train: ``g ≤ 0``)."""

    progress: NDArray[np.float64]
    goodput: NDArray[np.float64]
    seconds: NDArray[np.float64]
    batch: NDArray[np.float64]

    @classmethod
    def of(cls, progress: NDArray[np.float64], goodput: NDArray[np.float64],
           batch: NDArray[np.float64] | None = None) -> RunTable:
        batches = np.zeros_like(goodput) if batch is None else batch
        return cls(progress, goodput, cumulative_seconds(progress, goodput), batches)

    def batch_at(self, progress: float) -> float:
        """The batch chosen at the last knot at or before ``progress``."""
        index = int(np.searchsorted(self.progress, progress, side="right")) - 1
        return float(self.batch[min(max(index, 0), len(self.batch) - 1)])

    @property
    def total_seconds(self) -> float:
        """Seconds for the whole run (``inf`` if it cannot run)."""
        return float(self.seconds[-1])

    def goodput_at(self, progress: float) -> float:
        """``g(P)`` by linear interpolation between knots (clamped at both ends)."""
        return float(np.interp(progress, self.progress, self.goodput))

    def progress_at_fraction(self, fraction: float) -> float:
        """The progress ``P`` reached after ``fraction`` of the run's seconds."""
        if not np.isfinite(self.total_seconds):
            return 0.0
        target = min(max(fraction, 0.0), 1.0) * self.total_seconds
        return float(np.interp(target, self.seconds, self.progress))


def cumulative_seconds(progress: NDArray[np.float64],
                       goodput: NDArray[np.float64]) -> NDArray[np.float64]:
    """Seconds from ``progress[0]`` to each knot at goodput linear between knots."""
    width = np.diff(progress)
    low, high = goodput[:-1], goodput[1:]
    ok = (low > 0) & (high > 0) & np.isfinite(low) & np.isfinite(high)
    safe_low, safe_high = np.where(ok, low, 1.0), np.where(ok, high, 1.0)
    close = np.abs(safe_high - safe_low) <= 1e-9 * safe_low
    with np.errstate(divide="ignore", invalid="ignore"):
        log_mean = np.where(close, safe_low,
                            (safe_high - safe_low) / np.log(safe_high / safe_low))
    segment = np.where(ok, width / log_mean, np.inf)
    return np.concatenate([[0.0], np.cumsum(segment)])


@functools.cache
def progress_knots(total: float, epoch_ends: tuple[float, ...]) -> NDArray[np.float64]:
    knots = np.union1d(np.linspace(0.0, total, GRID_POINTS), np.asarray(epoch_ends))
    knots = knots[knots <= total]
    knots.flags.writeable = False
    return knots


def knots_of(fn: GoodputFunction) -> NDArray[np.float64]:
    return progress_knots(fn.stats.total_progress, fn.stats.progress)


@dataclass(frozen=True)
class Candidates:
    """Every allowed ``(m, s)`` on ``K`` replicas and its efficiency at each knot."""

    atomic: NDArray[np.int64]
    accum: NDArray[np.int64]
    efficiency: NDArray[np.float64]  # knots × candidates

    @classmethod
    def of(cls, fn: GoodputFunction, num_replicas: int) -> Candidates:
        m, s = fn.candidates(num_replicas)
        batch = num_replicas * m * (s + 1)
        return cls(m, s, fn.stats.efficiency_along(knots_of(fn), batch))


Along = tuple[NDArray[np.float64], NDArray[np.float64]]  # goodput, global batch per knot


def best_goodput_along(fn: GoodputFunction, num_nodes: int, num_replicas: int,
                       candidates: Candidates | None = None) -> Along:
    """The best goodput over batch configurations at each knot (``-inf`` where the limits
    allow none) and its global batch: ``GoodputFunction.optimize`` at every knot, vectorised.
    ``candidates`` (``Candidates.of(fn, num_replicas)``) may be shared by one size's shapes."""
    table = candidates or Candidates.of(fn, num_replicas)
    knots = len(knots_of(fn))
    if len(table.atomic) == 0:
        return np.full(knots, -np.inf), np.zeros(knots)
    rate = throughput(fn.params, num_nodes, num_replicas, table.atomic, table.accum)
    good = table.efficiency * rate[None, :]
    best = good.argmax(axis=1)
    batch = num_replicas * table.atomic * (table.accum + 1)
    return good[np.arange(knots), best], batch[best].astype(float)


def fixed_goodput_along(fn: GoodputFunction, num_nodes: int, num_replicas: int,
                        batch: int) -> Along:
    """Goodput at each knot at the global ``batch``, split into micro-batches as Pollux does."""
    atomic, accum = pollux_accumulation(batch, num_replicas, fn.limits.max_local_bsz)
    rate = float(throughput(fn.params, num_nodes, num_replicas, atomic, accum))
    real_batch = num_replicas * atomic * (accum + 1)
    good = rate * fn.stats.efficiency_along(knots_of(fn), real_batch)[:, 0]
    return good, np.full(len(good), float(real_batch))
