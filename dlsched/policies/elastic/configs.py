"""Shared inputs of the goodput-driven elastic policies (Pollux, Sia): goodput curves and bounds.

A job's best goodput on ``K`` GPUs of one type depends on the placement only through whether
the ``K`` replicas share one node (Pollux OSDI'21 §3.2: the sync time has one law within a node
and one across nodes). ``goodput_curves`` therefore gives, per job, two vectors indexed by ``K``:
the best goodput (``GoodputFunction.optimize``, §3.3: the batch co-adapts to the allocation) on
one node and over several nodes. They are computed for every ``K`` at once with numpy and cached
per (application, GPU type, progress bucket): training progress is rounded to 1/``BUCKETS`` of
the run, so a round over hundreds of jobs of six applications costs a few table look-ups.

Progress of a running job is the training progress its reference run (the unit of the
``goodput`` throughput model: reference seconds) reaches after its share of work done
(``RunTable.progress_at_fraction``); without a batch size, that share times the total.

A job whose model has no goodput profile keeps its declared bounds (``goodput_bounds``) and
is valued as scaling linearly (goodput ``K``) within them.
"""

from __future__ import annotations

import functools
import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from dlsched.perf.goodput.bundle import load_grad_stats
from dlsched.perf.goodput.goodput import MAX_ACCUM_STEPS, GoodputFunction, atomic_grid
from dlsched.perf.goodput.iteration_time import PerfParams, throughput
from dlsched.perf.goodput.throughput_model import goodput_function, reference_run
from dlsched.policies.elastic.speed import job_bounds
from dlsched.scheduling.allocation import worker_bounds
from dlsched.workload.job import Job

BUCKETS = 50
UNLIMITED = 1 << 30  # no cluster-size cap on a job's bounds
STAY_TIE_BREAK = 1e-6  # relative bonus of a running job's current size: ties do not swap jobs


@dataclass(frozen=True, slots=True)
class Curves:
    """Best goodput per worker count ``K = 0..len-1``: ``single[K]`` on one node, ``multi[K]``
    over several; ``-inf`` where the batch limits allow no configuration, 0 at ``K = 0``."""

    single: NDArray[np.float64]
    multi: NDArray[np.float64]


def app_of(job: Job) -> str | None:
    """The job's application when the goodput model knows it, else ``None``."""
    model = job.spec.model
    if model is None:
        return None
    app = model.casefold()
    return app if app in load_grad_stats() else None


def goodput_bounds(job: Job, elastic: str, max_workers: int, capacity: int) -> tuple[int, int]:
    """``speed.job_bounds``, except that ``elastic="all"`` makes a job elastic only when the
    goodput model knows its application (no model, no evidence that it scales: it keeps its
    declared bounds), and then up to ``max_batch // min_local_bsz`` workers (Pollux's simulator
    rule: the batch limit over the smallest per-GPU batch, with ``max_workers`` = 64)."""
    app = app_of(job)
    if app is None:
        low, high = worker_bounds(job)
        return low, min(high, capacity)
    low, high = job_bounds(job, elastic, max_workers, capacity)
    if job.spec.is_elastic or elastic == "declared":
        return low, high
    limits = goodput_function(app).limits
    return low, max(low, min(high, limits.max_batch // limits.min_local_bsz))


def progress_fraction(job: Job, now: float) -> float:
    work = job.spec.work
    return 0.0 if work <= 0 else min(max(job.work_done(now) / work, 0.0), 1.0)


def job_curves(job: Job, now: float, gpu: str, kmax: int,
               params: Mapping[tuple[str, str], PerfParams] | None = None) -> Curves:
    """The job's goodput curves on ``gpu`` for ``K = 0..kmax`` (see the module docstring);
    ``params[(app, gpu)]`` overrides the bundled iteration-time parameters."""
    return curves_of(curve_key(job, now), gpu, kmax, params)


def curve_key(job: Job, now: float) -> tuple[str, int] | None:
    """``(application, progress bucket)``, what a job's curves depend on; ``None`` without a
    goodput profile."""
    app = app_of(job)
    if app is None:
        return None
    share = progress_fraction(job, now)
    if job.spec.batch_size is not None:
        run = reference_run(app, job.spec.batch_size, job.spec.num_gpus)
        if math.isfinite(run.total_seconds):
            share = run.progress_at_fraction(share) / run.progress[-1]
    return app, min(int(share * BUCKETS), BUCKETS - 1)


def curves_of(key: tuple[str, int] | None, gpu: str, kmax: int,
              params: Mapping[tuple[str, str], PerfParams] | None = None) -> Curves:
    """The curves of a ``curve_key`` on ``gpu`` (linear without a goodput profile)."""
    if key is None:
        linear = np.arange(kmax + 1, dtype=float)
        return Curves(linear, linear)
    app, bucket = key
    chosen = (params or {}).get((app, gpu)) or goodput_function(app, gpu).params
    return _cached_curves(app, gpu, bucket, kmax, chosen)


@functools.lru_cache(maxsize=8192)
def _cached_curves(app: str, gpu: str, bucket: int, kmax: int, params: PerfParams) -> Curves:
    fn = goodput_function(app, gpu)
    progress = fn.stats.total_progress * (bucket + 0.5) / BUCKETS
    single, multi = best_goodputs(GoodputFunction(params, fn.stats, fn.limits), kmax, progress)
    for array in (single, multi):
        array.flags.writeable = False
    return Curves(single, multi)


def best_goodputs(fn: GoodputFunction, kmax: int,
                  progress: float) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """``max over (m, s)`` of goodput for every ``K ≤ kmax``, on one node and on two or more
    (the same search as ``GoodputFunction.optimize``, vectorised over ``K``)."""
    lim = fn.limits
    m, s = (a.ravel() for a in np.meshgrid(atomic_grid(lim.min_local_bsz, lim.max_local_bsz),
                                           np.arange(MAX_ACCUM_STEPS + 1)))
    replicas = np.arange(1, kmax + 1)[:, None]
    batch = replicas * m[None, :] * (s[None, :] + 1)
    lowest = np.maximum(lim.init_batch, replicas * lim.min_local_bsz)
    allowed = (batch >= lowest) & (batch <= lim.max_batch)
    eff = fn.stats.efficiency(progress, batch)
    result = []
    for nodes in (1, 2):
        good = throughput(fn.params, nodes, replicas, m[None, :], s[None, :]) * eff
        best = np.where(allowed, good, -np.inf).max(axis=1)
        result.append(np.concatenate([[0.0], best]))
    return result[0], result[1]




def restart_factor(age: float, restarts: int, restart_seconds: float) -> float:
    """Pollux §4.2's re-allocation factor ``(T − R·δ) / (T + δ)`` (clamped at 0): the share of
    a job's life ``T`` not lost to its ``R`` past restarts and the one a change would cost."""
    if restart_seconds <= 0:
        return 1.0
    return max(age - restarts * restart_seconds, 0.0) / (age + restart_seconds)


class RestartLog:
    """A policy's count of each active job's re-allocations (Pollux §4.2's ``R_j``)."""

    def __init__(self) -> None:
        self.counts: dict[str, int] = {}

    def factor(self, job: Job, now: float, restart_seconds: float) -> float:
        age = max(now - job.spec.submit_time, 0.0)
        return restart_factor(age, self.counts.get(job.job_id, 0), restart_seconds)

    def record(self, jobs: Sequence[Job], held: Sequence[Counter[int]],
               nodes: Sequence[tuple[int, ...]]) -> None:
        """Count a restart for each job that held GPUs and gets other nodes (or none)."""
        active = {job.job_id for job in jobs}
        self.counts = {k: v for k, v in self.counts.items() if k in active}
        for job, before, after in zip(jobs, held, nodes, strict=True):
            if before and before != Counter(after):
                self.counts[job.job_id] = self.counts.get(job.job_id, 0) + 1


def power_utility(speedup: NDArray[np.float64], p: float) -> NDArray[np.float64]:
    """A monotone transform whose sum ranks allocations as the power mean
    ``(Σ w·S^p)^(1/p)`` does: ``sign(p)·S^p`` (``log S`` for ``p = 0``)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        if p == 0:
            return np.log(speedup)
        return math.copysign(1.0, p) * np.power(speedup, p)

