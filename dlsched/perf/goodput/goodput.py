"""Goodput = throughput × statistical efficiency, and its best batch configuration (Pollux §3.3).

``GOODPUT(a, m, s) = THROUGHPUT(a, m, s) × EFFICIENCY(M)`` with ``M = K·m·(s + 1)`` for an
allocation ``a`` of ``K`` replicas on ``N`` nodes, per-GPU (atomic) batch ``m`` and ``s``
gradient-accumulation steps. Pollux co-adapts the batch to the allocation: for given ``(N, K)``
it picks the ``(m, s)`` of highest goodput within the application's limits (§3.3, ``optimize``):

- ``min_local_bsz ≤ m ≤ max_local_bsz`` (above the GPU-memory limit, accumulate);
- ``max(M0, K·min_local_bsz) ≤ M ≤ max_batch``, ``M0`` the initial batch.

The limits are Pollux's ``applications.py`` defaults, as ``dlsched.workload.readers.
pollux_profile`` reads them: ``M0`` and ``max_batch`` the smallest and largest batch with a
validation file, ``max_local_bsz`` the largest measured per-GPU batch (yolov3: 8), and
``min_local_bsz`` the smallest measured one. The search is exhaustive over a grid of atomic
batches (every integer up to 64 values, then geometric) and accumulation steps.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from dlsched.perf.goodput.efficiency import GradientStats
from dlsched.perf.goodput.iteration_time import PerfParams, throughput

MAX_ACCUM_STEPS = 31
_GRID_POINTS = 64


@dataclass(frozen=True, slots=True)
class BatchLimits:
    """An application's batch-size limits (Pollux's ``applications.py``)."""

    init_batch: int
    max_batch: int
    min_local_bsz: int
    max_local_bsz: int

    @classmethod
    def pollux(cls, app: str) -> BatchLimits:
        from dlsched.workload.readers.pollux_profile import load_profile

        profile = load_profile()
        sizes = profile.batch_sizes(app)
        if not sizes:
            raise KeyError(f"no Pollux profile for application {app!r}")
        smallest = min(c.local_bsz[0] for (a, _), c in profile.curves.items() if a == app)
        return cls(sizes[0], sizes[-1], int(smallest), profile.max_local_bsz[app])


@dataclass(frozen=True, slots=True)
class BatchConfig:
    """A batch configuration on an allocation and how fast it trains there."""

    atomic_bsz: int
    accum_steps: int
    batch: int  # global batch K·m·(s + 1)
    throughput: float  # examples/s
    efficiency: float

    @property
    def goodput(self) -> float:
        """Progress (examples at ``M0``) per second."""
        return self.throughput * self.efficiency


@dataclass(frozen=True)
class GoodputFunction:
    """One application on one GPU type: ``goodput`` and the batch that maximizes it."""

    params: PerfParams
    stats: GradientStats
    limits: BatchLimits

    def config(self, num_nodes: int, num_replicas: int, atomic_bsz: int, accum_steps: int,
               progress: float) -> BatchConfig:
        """Throughput and efficiency of one configuration after ``progress`` examples."""
        batch = num_replicas * atomic_bsz * (accum_steps + 1)
        rate = float(throughput(self.params, num_nodes, num_replicas, atomic_bsz, accum_steps))
        return BatchConfig(atomic_bsz, accum_steps, batch, rate,
                           float(self.stats.efficiency(progress, batch)))

    def candidates(self, num_replicas: int) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
        """Every allowed ``(m, s)`` on ``num_replicas`` replicas (empty arrays if none)."""
        lim = self.limits
        atomic = atomic_grid(lim.min_local_bsz, lim.max_local_bsz)
        accum = np.arange(MAX_ACCUM_STEPS + 1)
        m, s = (a.ravel() for a in np.meshgrid(atomic, accum))
        batch = num_replicas * m * (s + 1)
        lowest = max(lim.init_batch, num_replicas * lim.min_local_bsz)
        keep = (batch >= lowest) & (batch <= lim.max_batch)
        return m[keep], s[keep]

    def optimize(self, num_nodes: int, num_replicas: int, progress: float) -> BatchConfig | None:
        """The configuration of highest goodput after ``progress`` examples; ``None`` when the
        limits allow none (e.g. ``K·min_local_bsz`` above the largest batch)."""
        m, s = self.candidates(num_replicas)
        if len(m) == 0:
            return None
        rate = throughput(self.params, num_nodes, num_replicas, m, s)
        good = rate * self.stats.efficiency(progress, num_replicas * m * (s + 1))
        best = int(np.argmax(good))
        return self.config(num_nodes, num_replicas, int(m[best]), int(s[best]), progress)


def atomic_grid(low: int, high: int) -> NDArray[np.int64]:
    if high - low < _GRID_POINTS:
        return np.arange(low, high + 1)
    return np.unique(np.geomspace(low, high, _GRID_POINTS).round().astype(np.int64))


def pollux_accumulation(batch: int, num_replicas: int, max_local_bsz: int) -> tuple[int, int]:
    """``(m, s)`` for a fixed global batch, as Pollux's ``get_configurations``: the per-GPU
    batch ``ceil(batch / K)`` split into the fewest micro-batches within ``max_local_bsz``."""
    local = int(np.ceil(batch / num_replicas - 1e-8))
    accum = int(np.ceil(local / max_local_bsz - 1e-8)) - 1
    return int(np.ceil(local / (accum + 1) - 1e-8)), accum
