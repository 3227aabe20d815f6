"""ElasticFlow's minimum satisfactory share and admission plan (Gu et al., *ElasticFlow: An
Elastic Serverless Training Platform for Distributed Deep Learning*, ASPLOS'23 §4.2).

Time ahead is cut into slots of one round. Jobs are planned in deadline order, each over the
GPUs that earlier-deadline jobs leave free in every slot. A job's *minimum satisfactory share*
is the smallest GPU count ``n`` (of its allowed sizes: powers of two, §4.3) such that running
on ``n`` GPUs, or on the largest allowed size that the slot still has room for, finishes its
remaining work by its deadline. The plan then reserves that usage up to the job's finishing
slot. A job for which no share suffices has no plan (ElasticFlow does not admit it).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

EPS = 1e-9


@dataclass(frozen=True)
class JobPlan:
    """Allowed sizes (ascending), their rates, remaining work and seconds to the deadline."""

    sizes: np.ndarray
    rates: np.ndarray
    work: float
    horizon: float


def allowed_sizes(lo: int, hi: int) -> list[int]:
    """``lo`` and the powers of two in ``(lo, hi]`` (ElasticFlow's power-of-two shares)."""
    sizes = [lo] if lo <= hi else []
    power = 1
    while power <= hi:
        if power > lo:
            sizes.append(power)
        power *= 2
    return sizes


def slot_lengths(horizon: float, slot: float, slots: int) -> np.ndarray:
    """Usable seconds of each of ``slots`` slots before a deadline ``horizon`` seconds away."""
    starts = np.arange(slots) * slot
    return np.clip(horizon - starts, 0.0, slot)


def satisfy(job: JobPlan, avail: np.ndarray, slot: float) -> np.ndarray | None:
    """The per-slot GPU usage of the job's minimum satisfactory share over ``avail`` (free
    GPUs per slot), or ``None`` when no share meets the deadline."""
    seconds = slot_lengths(job.horizon, slot, len(avail))
    for share in job.sizes:
        room = np.minimum(avail, share)
        index = np.searchsorted(job.sizes, room, side="right") - 1
        usage = np.where(index >= 0, job.sizes[np.maximum(index, 0)], 0)
        rate = np.where(index >= 0, job.rates[np.maximum(index, 0)], 0.0)
        done = np.cumsum(rate * seconds)
        finished = np.flatnonzero(done >= job.work * (1 - EPS))
        if len(finished):
            usage = usage.copy()
            usage[finished[0] + 1:] = 0
            return usage
    return None


def plan(jobs: list[JobPlan], capacity: int, slot: float,
         slots: int) -> list[np.ndarray | None]:
    """Plan ``jobs`` (already in deadline order) one after another; each job's usage, or
    ``None`` for one that cannot meet its deadline (it then reserves nothing)."""
    avail = np.full(slots, capacity, dtype=np.int64)
    out: list[np.ndarray | None] = []
    for job in jobs:
        usage = satisfy(job, avail, slot)
        if usage is not None:
            avail -= usage
        out.append(usage)
    return out
