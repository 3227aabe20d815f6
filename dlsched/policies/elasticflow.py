"""ElasticFlow (Gu et al., *ElasticFlow: An Elastic Serverless Training Platform for
Distributed Deep Learning*, ASPLOS'23 §4) as an allocation policy.

Every round (one slot of the plan):

1. **Admission** (§4.2): a job with a deadline seen for the first time is admitted only if
   every admitted job and it still meet their deadlines when planned in deadline order at their
   minimum satisfactory shares (``elastic/elasticflow_plan.py``). ElasticFlow drops a job it
   cannot admit: by default (``rejected="drop"``) the core fails it at once with the reason;
   ``rejected="best-effort"`` runs it after every admitted one instead (the report counts its
   deadline as missed either way).
2. **Minimum shares now**: the admitted jobs are re-planned (progress since and restarts change
   the plan) and each gets its plan's first slot. A job with no deadline, a rejected one and an
   admitted one whose plan no longer meets its deadline are best effort: each gets its smallest
   size in submission order while GPUs last.
3. **Leftover GPUs** go by marginal return (§4.3, ``elastic/elasticflow_growth.py``).
4. Sizes are powers of two (plus a declared minimum) and placement is buddy-style best fit
   (§4.4, ``scheduling/fewest_nodes.py``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np

from dlsched.policies.edf import DeadlineOrder
from dlsched.policies.elastic.elasticflow_growth import grow
from dlsched.policies.elastic.elasticflow_plan import JobPlan, allowed_sizes, plan
from dlsched.policies.elastic.speed import (
    DEFAULT_MAX_WORKERS,
    ElasticAllocator,
    UsableCache,
    job_bounds,
    usable_gpus,
)
from dlsched.scheduling.allocation import Assignment
from dlsched.scheduling.fewest_nodes import place
from dlsched.scheduling.profile import Profile
from dlsched.scheduling.registry import at_least, register_policy
from dlsched.scheduling.state import CycleState
from dlsched.workload.job import Job

ROUND_SECONDS = 300.0  # one plan slot; the length is ours (configurable)
REJECTED_MODES = ("best-effort", "drop")


class ElasticFlowAllocator(ElasticAllocator):
    """AllocatePlugin: admission by minimum satisfactory shares, then marginal return."""

    name = "elasticflow-allocate"

    def __init__(self, elastic: str = "all", max_workers: int = DEFAULT_MAX_WORKERS,
                 slot_seconds: float = ROUND_SECONDS, rejected: str = "drop",
                 max_slots: int = 20_000) -> None:
        if rejected not in REJECTED_MODES:
            raise ValueError(f"rejected must be one of {', '.join(REJECTED_MODES)}")
        super().__init__(elastic, max_workers)
        self.slot, self.max_slots = slot_seconds, max_slots
        self.rejected_mode = rejected
        self.admitted: set[str] = set()
        self.rejected: set[str] = set()

    def allocate(self, state: CycleState) -> Mapping[str, Assignment]:
        jobs, capacity, total = self.begin_round(state)
        if not jobs or total == 0:
            return {}
        usable: UsableCache = {}
        plans = {j.job_id: self._job_plan(state, j, usable_gpus(state, j, capacity, usable))
                 for j in jobs}
        self._admit(state, jobs, plans, total)
        counts = self._minimum_shares(state, jobs, plans, total)
        counts = self._best_effort(jobs, plans, counts, total)
        free = total - sum(counts)
        grown = grow(counts, [plans[j.job_id].sizes for j in jobs],
                     [plans[j.job_id].rates for j in jobs], free)
        return place(state, {j.job_id: c for j, c in zip(jobs, grown, strict=True)},
                     {j.job_id: j for j in jobs}, capacity)

    def _job_plan(self, state: CycleState, job: Job, total: int) -> JobPlan:
        lo, hi = job_bounds(job, self.elastic, self.max_workers, total)
        sizes = np.array(allowed_sizes(lo, hi), dtype=np.int64)
        rates = self.curves.rates(state, job, sizes)
        keep = rates > 0
        deadline = job.spec.deadline
        horizon = math.inf if deadline is None else deadline - state.now
        return JobPlan(sizes[keep], rates[keep], job.remaining_work(state.now), horizon)

    def rejections(self, state: CycleState) -> Mapping[str, str]:
        """Under ``rejected="drop"`` the jobs admission refused leave the system (§4.2)."""
        if self.rejected_mode != "drop":
            return {}
        return {job_id: "deadline cannot be met at admission (dropped)"
                for job_id in self.rejected}

    def _admit(self, state: CycleState, jobs: list[Job], plans: dict[str, JobPlan],
               total: int) -> None:
        """§4.2 admission of the deadline jobs seen for the first time, in arrival order."""
        for job in jobs:
            if job.spec.deadline is None or job.job_id in self.admitted | self.rejected:
                continue
            trial = [j for j in jobs if j.job_id in self.admitted or j is job]
            usage = self._plan(trial, plans, total)
            ok = all(u is not None for u in usage)
            (self.admitted if ok else self.rejected).add(job.job_id)

    def _plan(self, jobs: list[Job], plans: dict[str, JobPlan],
              total: int) -> list[np.ndarray | None]:
        ordered = sorted(jobs, key=lambda j: DeadlineOrder().sort_key(None, j))
        horizons = [plans[j.job_id].horizon for j in ordered]
        slots = min(self.max_slots, max([1, *(math.ceil(h / self.slot) for h in horizons
                                              if h > 0)]))
        usage = plan([plans[j.job_id] for j in ordered], total, self.slot, slots)
        by_id = {j.job_id: u for j, u in zip(ordered, usage, strict=True)}
        return [by_id[j.job_id] for j in jobs]

    def _minimum_shares(self, state: CycleState, jobs: list[Job], plans: dict[str, JobPlan],
                        total: int) -> list[int]:
        admitted = [j for j in jobs if j.job_id in self.admitted]
        usage = dict(zip((j.job_id for j in admitted), self._plan(admitted, plans, total),
                         strict=True))
        return [int(usage[j.job_id][0]) if usage.get(j.job_id) is not None else 0
                for j in jobs]

    def _best_effort(self, jobs: list[Job], plans: dict[str, JobPlan], counts: list[int],
                     total: int) -> list[int]:
        """Each best-effort job's smallest size, in submission order, while GPUs last."""
        counts = list(counts)
        free = total - sum(counts)
        for row, job in enumerate(jobs):
            sizes = plans[job.job_id].sizes
            dropped = job.job_id in self.rejected and self.rejected_mode == "drop"
            if counts[row] or dropped or not len(sizes) or sizes[0] > free:
                continue
            counts[row] = int(sizes[0])
            free -= counts[row]
        return counts


@register_policy("elasticflow")
def elasticflow(elastic: str = "all", max_workers: int = DEFAULT_MAX_WORKERS,
                round_seconds: float = ROUND_SECONDS, rejected: str = "drop",
                placement: str = "consolidated") -> Profile:
    """ElasticFlow: deadline admission by minimum satisfactory shares, elastic leftovers."""
    at_least(1, max_workers=max_workers)
    allocator = ElasticFlowAllocator(elastic, max_workers, round_seconds, rejected)
    return Profile("elasticflow", DeadlineOrder(), plugins=(allocator,), placement=placement,
                   round_seconds=round_seconds, acts_on_running=True)
