"""Chronus (Gao et al., *Chronus: A Novel Deadline-aware Scheduler for Deep Learning Training
Jobs*, SoCC'21 §4) as an allocation policy: leases, SLO admission by a MILP, best-effort fill.

Jobs run on leases of ``lease_seconds``; at every lease boundary the scheduler decides anew
which jobs hold GPUs for the next lease (§4.1, lease-based training, possible because DL jobs
checkpoint and resume). Chronus is not elastic: a job runs on exactly its requested GPUs.

At a lease boundary:

1. **SLO jobs** (those with a deadline): each needs ``ceil(remaining time / (lease - restart))``
   more leases before its deadline (every lease may start with a restart pause; the last lease
   may end mid-slot), its remaining time from the throughput model at its requested size.
   The lease-slot MILP (``elastic/chronus_milp.py``, HiGHS) admits a new SLO job only if every
   admitted one still meets its deadline (§4.2); a job it cannot admit runs best effort (its
   deadline counts as missed). The admitted jobs the MILP places in the first slot run now.
   HiGHS stops on a deterministic budget of ``milp_nodes`` branch-and-bound nodes, never on
   wall-clock time (the same run gives the same schedule under any load); when the budget
   runs out the best plan found is used (``chronus_milp.py``). A wall-clock safety net, if it
   ever stops a solve, is reported (a warning and ``solver`` in summary.json): that result
   may depend on load. If it leaves no plan at all, no admission is decided that lease: new
   SLO jobs stay undecided (best effort now, tried again at the next lease, not refused for
   good on a load-dependent stop), admitted jobs that hold GPUs keep them (the previous
   plan's first slot), the other admitted ones take what is left by earliest deadline.
2. **Best-effort jobs** (no deadline, or not admitted, not late) fill the GPUs left, the least
   remaining GPU time first (remaining seconds at the requested size x GPUs; ties by arrival),
   each only if its whole gang fits: Chronus's artifact ranks best-effort and unadmitted SLO
   jobs by their ``emergence``, ``-(estimated remaining time) x GPUs``
   (S-Lab-System-Group/ChronusArtifact, ``code/alg/scheduler/time_aware_with_lease.py``,
   ``flush_pending_jobs`` and ``best_func``), shortest remaining service first, as durations
   are known from profiling (§4.1).
3. Admitted SLO jobs not in the first slot take what is still free (earliest deadline first),
   which only moves their work earlier.
4. **Late SLO jobs** come last: an SLO job whose deadline can no longer be met, even running
   uninterrupted from now (deadline < now + its remaining time at its requested size), or has
   passed, is demoted for good to the lowest priority, below best effort, admitted or not. It
   leaves the MILP and runs only on GPUs nobody else takes, the most overdue GPU time first
   (``(now + remaining time - deadline) x GPUs``, ties by arrival). This is the artifact's
   ``LOWEST`` queue (``flush_pending_jobs`` demotes such pending jobs; ``best_func`` ranks
   ``LOWEST`` below accepted, unaccepted and best-effort jobs, by that ``emergence``). Its
   ``filling_jobs`` pass, which hands the GPUs left after a placement to ``LOWEST`` jobs first,
   is not reproduced: here they only take what step 2 and 3 leave.

Between boundaries (arrivals, completions) running jobs (status RUNNING: a preempted job keeps
its last GPUs in ``allocation``) keep their GPUs until their lease ends and waiting jobs may
start on free GPUs in the same order. Placement packs each job on the
fewest nodes (``scheduling/fewest_nodes.py``; Chronus's consolidation, §4.4). The MILP has one
binary per (SLO job, slot before its deadline), at most ``max_slots`` slots per job: a job due
farther away must get inside the window only the leases that do not fit in the slots after it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np

from dlsched.policies.edf import DeadlineOrder
from dlsched.policies.elastic.chronus_milp import LEASE_BUDGET, lease_milp
from dlsched.policies.elastic.mip_budget import MipBudget, SolveLog
from dlsched.policies.elastic.speed import SpeedCurves, active_jobs, node_capacity
from dlsched.scheduling.allocation import Assignment
from dlsched.scheduling.fewest_nodes import place
from dlsched.scheduling.profile import Profile
from dlsched.scheduling.registry import at_least, register_policy
from dlsched.scheduling.state import CycleState
from dlsched.workload.job import Job, JobStatus

LEASE_SECONDS = 300.0  # the lease term is configurable; this default is ours, not the paper's
RESTART_SECONDS = 30.0  # the simulator's default restart overhead
EPS = 1e-9


def is_running(job: Job) -> bool:
    """Whether the job holds GPUs now. Not ``job.allocation``: a preempted job keeps its last
    GPUs there while it waits (the core's record of where it ran)."""
    return job.status is JobStatus.RUNNING


class ChronusAllocator:
    """AllocatePlugin: lease-slot MILP admission for SLO jobs, least remaining GPU time first
    for best effort."""

    name = "chronus-allocate"

    def __init__(self, lease_seconds: float = LEASE_SECONDS, max_slots: int = 96,
                 restart_seconds: float = RESTART_SECONDS,
                 budget: MipBudget = LEASE_BUDGET) -> None:
        if lease_seconds <= 0:
            raise ValueError(f"lease_seconds must be > 0, got {lease_seconds}")
        if max_slots < 1:
            raise ValueError(f"max_slots must be >= 1, got {max_slots}")
        if not 0 <= restart_seconds < lease_seconds:
            raise ValueError(f"restart_seconds must be in [0, lease_seconds), "
                             f"got {restart_seconds}")
        self.lease, self.max_slots, self.restart = lease_seconds, max_slots, restart_seconds
        self.curves = SpeedCurves()
        self.admitted: set[str] = set()
        self.rejected: set[str] = set()
        self.demoted: set[str] = set()  # late SLO jobs, lowest priority for good (step 4)
        self.lease_end = -math.inf
        self.budget, self.solve_log = budget, SolveLog()

    def allocate(self, state: CycleState) -> Mapping[str, Assignment]:
        jobs = active_jobs(state)
        self.curves.forget(jobs)
        capacity = node_capacity(state)
        by_id = {j.job_id: j for j in jobs}
        self._demote_late(state, jobs)
        if state.now < self.lease_end - EPS:  # mid-lease: running jobs keep their GPUs
            first = [j for j in jobs if is_running(j)]
        else:
            self.lease_end = state.now + self.lease
            first = self._admit(state, jobs, int(capacity.sum()))
        counts = self._fill(state, jobs, first, int(capacity.sum()))
        return place(state, counts, by_id, capacity)

    def _admit(self, state: CycleState, jobs: list[Job], total: int) -> list[Job]:
        """Run the lease MILP; returns the SLO jobs that hold GPUs in the first slot."""
        slo = [j for j in jobs if j.spec.deadline is not None
               and j.job_id not in self.rejected and j.job_id not in self.demoted]
        plans = [self._plan(state, j) for j in slo]
        need = np.array([n for n, _ in plans], dtype=np.int64)
        horizon = np.array([h for _, h in plans], dtype=np.int64)
        fits = (need <= horizon) & (need > 0) & np.array(
            [j.spec.num_gpus <= total for j in slo], dtype=bool)
        for job, ok in zip(slo, fits, strict=True):
            if not ok and job.job_id not in self.admitted:
                self.rejected.add(job.job_id)
        chosen = [j for j, ok in zip(slo, fits, strict=True) if ok]
        # A deadline beyond the window leaves (horizon - window) slots after it: only the
        # leases that do not fit there must be planned inside the window.
        window = np.minimum(horizon[fits], self.max_slots)
        inside = np.maximum(need[fits] - (horizon[fits] - window), 0)
        new = sum(1 for j in chosen if j.job_id not in self.admitted)
        weight = np.array([1.0 + new if j.job_id in self.admitted else 1.0 for j in chosen])
        keep = np.array([is_running(j) for j in chosen], dtype=bool)
        plan = lease_milp(np.array([j.spec.num_gpus for j in chosen]), inside,
                          np.maximum(window, 1), weight, total, keep, self.budget, self.solve_log)
        if plan is None:  # no plan at all: no admission decided, running admitted jobs stay
            return [j for j in chosen if j.job_id in self.admitted and is_running(j)]
        scheduled, first = plan
        for job, ok in zip(chosen, scheduled, strict=True):
            if job.job_id not in self.admitted:
                (self.admitted if ok else self.rejected).add(job.job_id)
        return [j for j, now in zip(chosen, first, strict=True) if now]

    def _plan(self, state: CycleState, job: Job) -> tuple[int, int]:
        """``(need, horizon)``: the leases the job still needs and the slots it may use.

        Its remaining time comes from the throughput model at its requested size. Every lease
        is counted as ``lease - restart`` seconds of work, as Chronus charges checkpoint and
        resume overhead to each lease of a job's estimate (§4.1): a lease plan may stop and
        resume a job at any boundary, and a plan that ignored the pause would fall behind and
        miss the deadline it promised. The last lease may be partial: ending ``last`` seconds
        into a slot, the job may use slot ``t`` while ``t·lease + last`` is by its deadline."""
        rate = float(self.curves.rates(state, job, [job.spec.num_gpus])[0])
        if rate <= 0:
            return 0, 0
        seconds, work = job.remaining_work(state.now) / rate, self.lease - self.restart
        need = max(1, math.ceil(seconds / work - EPS))
        last = self.restart + seconds - (need - 1) * work
        deadline = job.spec.deadline if job.spec.deadline is not None else state.now
        slack = deadline - state.now - last
        return need, (math.floor(slack / self.lease + EPS) + 1 if slack >= -EPS else 0)

    def _remaining_gpu_seconds(self, state: CycleState, job: Job) -> float:
        """Seconds left at the requested size times its GPUs (``inf`` if it cannot run)."""
        return self._remaining_seconds(state, job) * job.spec.num_gpus

    def _demote_late(self, state: CycleState, jobs: list[Job]) -> None:
        """Step 4: SLO jobs that cannot finish by their deadline even if run from now on
        leave the admitted and refused sets for the demoted one, for good (in the artifact only
        a job that overruns its duration estimate leaves ``LOWEST``; durations here are the
        throughput model's, not estimates)."""
        for job in jobs:
            deadline = job.spec.deadline
            if deadline is None or job.job_id in self.demoted:
                continue
            if deadline < state.now + self._remaining_seconds(state, job) - EPS:
                self.demoted.add(job.job_id)
                self.admitted.discard(job.job_id)
                self.rejected.discard(job.job_id)

    def _remaining_seconds(self, state: CycleState, job: Job) -> float:
        """Seconds left at the requested size (``inf`` if it cannot run)."""
        rate = float(self.curves.rates(state, job, [job.spec.num_gpus])[0])
        return job.remaining_work(state.now) / rate if rate > 0 else math.inf

    def _overdue_gpu_seconds(self, state: CycleState, job: Job) -> float:
        """The artifact's ``emergence`` of a ``LOWEST`` job: how late it would finish if run
        from now, times its GPUs."""
        deadline = job.spec.deadline if job.spec.deadline is not None else state.now
        late = state.now + self._remaining_seconds(state, job) - deadline
        return late * job.spec.num_gpus

    def _fill(self, state: CycleState, jobs: list[Job], first: list[Job],
              total: int) -> dict[str, int]:
        """Rigid counts: ``first`` jobs, then best effort by least remaining GPU time, then
        admitted SLO by EDF, then late SLO jobs by most overdue GPU time."""
        slo_rest = sorted((j for j in jobs if j.job_id in self.admitted and j not in first),
                          key=lambda j: DeadlineOrder().sort_key(None, j))
        best_effort = sorted((j for j in jobs if j.job_id not in self.admitted
                              and j.job_id not in self.demoted),
                             key=lambda j: (self._remaining_gpu_seconds(state, j),
                                            j.spec.submit_time, j.job_id))
        late = sorted((j for j in jobs if j.job_id in self.demoted),
                      key=lambda j: (-self._overdue_gpu_seconds(state, j),
                                     j.spec.submit_time, j.job_id))
        counts: dict[str, int] = {}
        free = total
        for job in [*first, *best_effort, *slo_rest, *late]:
            if job.job_id not in counts and job.spec.num_gpus <= free:
                counts[job.job_id] = job.spec.num_gpus
                free -= job.spec.num_gpus
        return counts


@register_policy("chronus")
def chronus(lease_seconds: float = LEASE_SECONDS, max_slots: int = 96,
            restart_seconds: float = RESTART_SECONDS, placement: str = "consolidated",
            milp_nodes: int = LEASE_BUDGET.max_nodes) -> Profile:
    """Chronus: leases, SLO admission by a lease-slot MILP (HiGHS, at most ``milp_nodes``
    branch-and-bound nodes a solve), best effort by least remaining GPU time, SLO jobs that
    can no longer meet their deadline last."""
    at_least(0, restart_seconds=restart_seconds)
    at_least(1, milp_nodes=milp_nodes)
    allocator = ChronusAllocator(lease_seconds, max_slots, restart_seconds,
                                 MipBudget(milp_nodes, LEASE_BUDGET.safety_seconds))
    return Profile("chronus", DeadlineOrder(), plugins=(allocator,), placement=placement,
                   round_seconds=lease_seconds, acts_on_running=True)
