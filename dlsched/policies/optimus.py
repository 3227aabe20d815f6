"""Optimus (Peng et al., *Optimus: An Efficient Dynamic Resource Scheduler for Deep Learning
Clusters*, EuroSys'18) as an allocation policy.

Every round (§5, "the scheduler reallocates at every scheduling interval"):

1. each active job's speed function ``f(w)`` is fitted in the paper's form
   (``elastic/optimus_fit.py``, §4.2) and its remaining time is ``remaining_work / f(w)``
   (§4.1: Optimus estimates the remaining epochs, here the throughput model's remaining work);
2. every job gets its minimum (one worker, or its declared minimum) in submission order while
   GPUs last (§5.1: "we first allocate one worker to each job" so none starves);
3. the rest go one at a time to the job with the largest reduction of remaining time per added
   worker (§5.1 marginal gain), until GPUs run out or no job gains;
4. workers are placed on the fewest nodes (§5.2, ``scheduling/fewest_nodes.py``); with
   ``placement="most-free"`` as the Pollux artifact's Optimus places them instead (smallest
   job first, each on the nodes with the most free GPUs: ``scheduling/most_free_place.py``).

With ``speed="exact"`` step 1 uses the throughput model's true rate at each packed size instead
of the fitted curve. ``speed="step-time"`` is the Pollux artifact's "Optimus+Oracle"
(``simulator/optimus.py``), which the ``pollux-osdi21`` setting runs: remaining time is the
remaining steps the model counts (``remaining_steps``: from the end of the current epoch) times
the predicted seconds per step at the job's batch (``step_rate``, the ``pollux-progress``
model). With either, step 3 adds one worker at a time and a job stops growing at its first
size that gains nothing (``stepwise_greedy``; those curves need not be convex).

A changed size is a checkpoint-restart the core charges; Optimus ignores that cost (§5.1).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from dlsched.policies.elastic.optimus_fit import (
    fitted_curve,
    marginal_greedy,
    stepwise_greedy,
)
from dlsched.policies.elastic.speed import (
    DEFAULT_MAX_WORKERS,
    ElasticAllocator,
    SpeedCurves,
    UsableCache,
    job_bounds,
    node_capacity,
    remaining_times,
    usable_gpus,
)
from dlsched.policies.fifo import SubmitOrder
from dlsched.scheduling.allocation import Assignment
from dlsched.scheduling.fewest_nodes import place
from dlsched.scheduling.most_free_place import place_most_free
from dlsched.scheduling.profile import Profile
from dlsched.scheduling.registry import at_least, register_policy
from dlsched.scheduling.state import CycleState
from dlsched.workload.job import Job

SPEEDS = ("fitted", "exact", "step-time")
ROUND_SECONDS = 600.0  # Optimus reallocates at a fixed interval (§5); the length is ours


class OptimusAllocator(ElasticAllocator):
    """AllocatePlugin: fitted speed functions and the marginal-gain greedy (module docstring)."""

    name = "optimus-allocate"

    def __init__(self, elastic: str = "all", max_workers: int = DEFAULT_MAX_WORKERS,
                 speed: str = "fitted", placement: str = "consolidated") -> None:
        super().__init__(elastic, max_workers)
        if speed not in SPEEDS:
            raise ValueError(f"speed must be one of {', '.join(SPEEDS)}, got {speed!r}")
        self.speed = speed
        if speed == "step-time":
            self.curves = SpeedCurves("step_rate")
        self.place = place_most_free if placement == "most-free" else place

    def allocate(self, state: CycleState) -> Mapping[str, Assignment]:
        jobs, capacity, total = self.begin_round(state)
        if not jobs or total == 0:
            return {}
        times, base = self.remaining_time_table(state, jobs, total)
        greedy = marginal_greedy if self.speed == "fitted" else stepwise_greedy
        counts = greedy(times, base, total - int(base.sum()))
        by_id = {j.job_id: j for j in jobs}
        return self.place(state, {j.job_id: int(c) for j, c in zip(jobs, counts, strict=True)},
                     by_id, capacity)

    def remaining_time_table(self, state: CycleState, jobs: list[Job],
                             total: int) -> tuple[np.ndarray, np.ndarray]:
        """``times[j, n]``: fitted remaining time of job j on n workers (``inf`` outside its
        bounds); ``base[j]``: its starting size (its minimum, or 0 when GPUs ran out)."""
        times = np.full((len(jobs), total + 1), np.inf)
        base = np.zeros(len(jobs), dtype=np.int64)
        free = total
        capacity, usable = node_capacity(state), UsableCache()
        for row, job in enumerate(jobs):
            lo, hi = job_bounds(job, self.elastic, self.max_workers,
                                usable_gpus(state, job, capacity, usable))
            if lo > hi:
                continue
            rates = (fitted_curve(self.curves, state, job, lo, hi) if self.speed == "fitted"
                     else self.curves.curve(state, job, hi))
            times[row, lo:hi + 1] = remaining_times(self.remaining(state, job),
                                                    rates[lo:hi + 1])
            if np.isfinite(times[row, lo]) and lo <= free:
                base[row] = lo
                free -= lo
        return times, base

    def remaining(self, state: CycleState, job: Job) -> float:
        """The job's remaining work in the unit of its speed curve: the trace's work, or with
        ``speed="step-time"`` the steps the model counts as left (``remaining_steps``)."""
        left = job.remaining_work(state.now)
        if self.speed != "step-time":
            return left
        return float(state.snapshot.throughput.remaining_steps(job.spec, left))


@register_policy("optimus")
def optimus(elastic: str = "all", max_workers: int = DEFAULT_MAX_WORKERS,
            round_seconds: float = ROUND_SECONDS, placement: str = "consolidated",
            speed: str = "fitted") -> Profile:
    """Optimus: fitted speed functions, marginal-gain GPU allocation, fewest-node placement."""
    at_least(1, max_workers=max_workers)
    allocator = OptimusAllocator(elastic, max_workers, speed, placement)
    return Profile("optimus", SubmitOrder(), plugins=(allocator,), placement=placement,
                   round_seconds=round_seconds, acts_on_running=True)
