"""Seeded synthetic workloads: Poisson arrivals, job shapes resampled from a real trace.

``generate(n_jobs, rate_per_hour, seed, fit_from)`` draws inter-arrival gaps from an exponential
distribution with mean ``3600 / rate_per_hour`` seconds (a Poisson process; the first job
arrives at 0) and, for each job, one job of ``fit_from`` uniformly at random with replacement:
its GPU count and work are taken together (the empirical joint distribution, so large jobs keep
their long durations), and so is the rest of its spec (model, batch size, queue, GPU types,
share), which keeps work and model consistent for iteration-based traces. A deadline keeps its
distance from submission. This is the bootstrap Gavel's generator uses with Philly's
``(duration, num_gpus)`` pairs, with arrivals decoupled from the source trace's.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from dlsched.workload.job import JobSpec
from dlsched.workload.trace import Trace

SECONDS_PER_HOUR = 3600.0


def arrival_times(n_jobs: int, rate_per_hour: float, rng: np.random.Generator) -> np.ndarray:
    """``n_jobs`` Poisson arrival times in seconds, the first at 0."""
    gaps = rng.exponential(SECONDS_PER_HOUR / rate_per_hour, size=max(n_jobs - 1, 0))
    return np.concatenate(([0.0], np.cumsum(gaps)))[:n_jobs]


def _resampled(source: JobSpec, job_id: str, submit: float) -> JobSpec:
    deadline = None if source.deadline is None else submit + source.deadline - source.submit_time
    return replace(source, job_id=job_id, submit_time=submit, deadline=deadline)


def generate(n_jobs: int, rate_per_hour: float, seed: int, fit_from: Trace) -> Trace:
    """A trace of ``n_jobs`` jobs; the same arguments always give the same trace."""
    if n_jobs < 0:
        raise ValueError(f"n_jobs must be >= 0, got {n_jobs}")
    if not rate_per_hour > 0:
        raise ValueError(f"rate_per_hour must be > 0, got {rate_per_hour}")
    if not fit_from.jobs:
        raise ValueError(f"trace {fit_from.name} has no jobs to resample")
    rng = np.random.default_rng(seed)
    times = arrival_times(n_jobs, rate_per_hour, rng)
    picks = rng.integers(len(fit_from.jobs), size=n_jobs)
    width = len(str(max(n_jobs - 1, 0)))
    jobs = tuple(_resampled(fit_from.jobs[pick], f"synthetic-{i:0{width}d}", float(t))
                 for i, (pick, t) in enumerate(zip(picks.tolist(), times.tolist(), strict=True)))
    return Trace(name=f"synthetic-{fit_from.name}-seed{seed}", jobs=jobs,
                 source=f"synthetic from {fit_from.source or fit_from.name}", format="synthetic",
                 throughput=fit_from.throughput)
