"""``QuotaGate``: an allocation policy (Pollux, Sia, Optimus, AFS, ElasticFlow, Chronus, the
Gavel rounds; ``scheduling/allocation.py``) inside the tenant model, the policy unchanged.

Every round the wrapped ``AllocatePlugin`` decides every active job's target as if there were no
tenants; the gate then charges the targets to their cluster queues (``charge.py``, ``quota.py``:
nominal quota, borrowing within the cohort up to the borrowing limit, lending limits) and keeps
what fits, in Kueue's admission order:

1. order: running jobs that do not grow (they hold their quota already), then running jobs that
   grow, then waiting jobs; inside each group the tenant admission key (``ordering.py``:
   position in its queue, priority, the policy's own order; Kueue's ``entryOrdering``);
2. charge every target up to its queue's nominal quota first, then, in the same order, the rest
   by borrowing: whatever borrows comes after everything that does not (Kueue admits
   non-borrowing workloads first, concepts/cluster_queue#borrowingLimit and the scheduler's
   entry ordering). So when a lender's jobs come back, the lender gets its nominal quota at the
   next round and the borrowers are the ones cut;
3. a target that does not fit whole: an elastic job keeps the workers that fit when they are at
   least its minimum (those on nodes it holds first), a rigid job gets nothing;
4. a job left with nothing: a running job keeps its current GPUs if they still fit (quota and
   nodes), else it is preempted; a waiting job stays waiting. Both get the tenant reason
   (``Reason``), and the pending job its position in its cluster queue, in the
   ``TenantAdmission.pending`` book that jobs.csv, the API and ``dlsched jobs`` read;
5. in a round where step 2 cut a target, GPUs left idle go to waiting jobs the policy left out
   or the gate cut, in the same order, at their fewest workers, when their quota allows
   (``QuotaGate._fill``, work conservation); when no quota binds, the policy's targets stand
   as they are (an idle GPU it chose stays idle).

What this approximates in Kueue: elastic jobs as *workload slices* (KEP-77, dynamically sized
jobs; feature gate ``ElasticJobsViaWorkloadSlices``): a scale-up is a new slice admitted like a
new workload and replacing the old one once its quota is reserved, a scale-down gives quota back
at once. Here each round's grow is charged after every job that keeps its size. What it does not
do: it never preempts to reclaim lent quota (the policy re-allocates every round, and step 2
gives a lender its quota back at the next round); a job the policy left out starts only on GPUs
that the kept targets leave idle (step 5), never by cutting another queue's job; no minimum
runtime, requeue backoff or flavor fungibility (the policy preempts by design and chose the
nodes).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping

import numpy as np

from dlsched.scheduling.allocation import AllocatePlugin, Assignment, Targets, worker_bounds
from dlsched.scheduling.fewest_nodes import fit_nodes
from dlsched.scheduling.plugins.filters import allowed_nodes
from dlsched.scheduling.state import EPS, CycleState
from dlsched.tenancy.charge import Plan, workers_of
from dlsched.tenancy.plugins import NAME, TenantAdmission
from dlsched.tenancy.quota import Usage
from dlsched.tenancy.reasons import Pending, Reason
from dlsched.workload.job import Job


def explicit_targets(state: CycleState, targets: Mapping[str, Assignment]
                     ) -> Mapping[str, Assignment]:
    """A policy's targets with every job a ``Targets`` keeps given the assignment it holds
    (``Assignment.of``): the gate weighs each running job's target against its queue's quota
    and returns a plain mapping, in which a kept job left out was preempted (Gavel's
    simulator rounds under ``--tenants`` preempted every job that stayed, each round)."""
    if type(targets) is not Targets or not targets.kept:
        return targets
    kept, cluster, out = targets.kept, state.cluster, dict(targets)
    for job in state.snapshot.running:
        if job.job_id in kept:
            out[job.job_id] = Assignment.of(job, cluster)
    return out


class QuotaGate:
    """AllocatePlugin: the wrapped policy's targets, cut to its tenants' quotas (module
    docstring). It keeps the policy's name, worker bounds and rejections."""

    def __init__(self, inner: AllocatePlugin, admission: TenantAdmission) -> None:
        self.inner, self.admission, self.name = inner, admission, inner.name
        self.config = admission.config
        self.bounds = getattr(inner, "worker_bounds", worker_bounds)
        for point in ("worker_bounds", "rejections"):
            if hasattr(inner, point):
                setattr(self, point, getattr(inner, point))
        self._why: dict[str, str] = {}

    def reason_for(self, job_id: str) -> str | None:
        """The tenant reason a job got no GPUs in the last round (read by the core)."""
        return self._why.get(job_id)

    def allocate(self, state: CycleState) -> Mapping[str, Assignment]:
        return self.gate(state, explicit_targets(state, self.inner.allocate(state)))

    def gate(self, state: CycleState, targets: Mapping[str, Assignment]) -> dict[str, Assignment]:
        self._why = {}
        self.admission.cycle(state)  # this cycle's pending book, with queue positions
        plans = self._plans(state, targets)
        usage = Usage(self.admission.tree)
        for borrow in (False, True):
            for plan in plans:
                if not plan.complete:
                    plan.grant(usage, borrow)
        out = {p.job.job_id: a for p in plans if (a := p.assignment()) is not None}
        room = _Room(state, out)
        for plan in plans:
            if plan.job.job_id not in out:
                self._keep_or_drop(state, plan, usage, room, out)
        if any(not plan.complete for plan in plans):  # quotas cut the policy's targets
            self._fill(state, usage, room, out)
        for job in state.snapshot.waiting:
            if job.job_id in out:
                self.admission.pending.admit(job.job_id)
            elif job.job_id not in self._why:
                self._record(job, Reason.NOT_ALLOCATED, self.name)
        return out

    def _plans(self, state: CycleState, targets: Mapping[str, Assignment]) -> list[Plan]:
        """A plan per job with a target, in the gate's order (step 1)."""
        masks = self.admission.flavor_nodes.masks(state.cluster)
        gpu_node, sort_key = state.cluster.gpu_node, self.admission.sort_key
        keyed: list[tuple[tuple, Plan]] = []
        for job in (*state.snapshot.running, *state.snapshot.waiting):
            target = targets.get(job.job_id)
            if target is None or not target.nodes:
                continue
            cq = self.config.cluster_queue_of(job.spec.queue)
            if cq is None:
                self._drop(job, Reason.UNKNOWN_QUEUE, repr(job.spec.queue))
                continue
            group = 2 if not job.allocation else int(target.num_workers > len(job.allocation))
            workers = workers_of(job, target, cq, self.config, masks, gpu_node)
            plan = Plan(job, cq, target, workers, self.bounds(job)[0])
            keyed.append(((group, sort_key(state, job)), plan))
        keyed.sort(key=lambda pair: pair[0])
        return [plan for _, plan in keyed]

    def _fill(self, state: CycleState, usage: Usage, room: _Room,
              out: dict[str, Assignment]) -> None:
        """Step 5, work conservation in a round where quotas cut the policy's targets: GPUs
        that no kept target uses go to waiting jobs the policy left out or the gate cut, in
        the tenant admission order, each at its fewest
        workers (its requested size for a rigid job) on the fewest nodes, when its quota
        allows (nominal first, then borrowing). Kueue admits whatever fits; without this a
        rigid policy (Gavel, Chronus, Gandiva) that keeps giving the GPUs to a job beyond its
        queue's quota would leave the cluster idle and starve the jobs that fit."""
        refused = getattr(self.inner, "rejections", None)
        skip = set(refused(state)) if refused is not None else set()
        masks = self.admission.flavor_nodes.masks(state.cluster)
        sort_key = self.admission.sort_key
        left = sorted((j for j in state.snapshot.waiting
                       if j.job_id not in out and j.job_id not in skip),
                      key=lambda j: sort_key(state, j))
        for job in left:
            if not room.free.any():
                return
            cq = self.config.cluster_queue_of(job.spec.queue)
            if cq is None:
                continue
            count = self.bounds(job)[0]
            usable = allowed_nodes(state, job) & np.logical_or.reduce(
                [masks[f] for f in cq.flavors], initial=False)
            nodes = fit_nodes(count, room.free.copy(), usable)
            if nodes is None:
                continue
            target = Assignment(nodes)
            plan = Plan(job, cq, target, workers_of(job, target, cq, self.config, masks,
                                                     state.cluster.gpu_node), count)
            for borrow in (False, True):
                if not plan.complete:
                    plan.grant(usage, borrow)
            if plan.complete:
                out[job.job_id] = target
                room.take(target)
                self._why.pop(job.job_id, None)

    def _keep_or_drop(self, state: CycleState, plan: Plan, usage: Usage, room: _Room,
                      out: dict[str, Assignment]) -> None:
        """Step 4 for a job none of whose target fits."""
        job = plan.job
        reason, detail = plan.shortfall(usage, self.config)
        if job.allocation and room.holds(job):
            held = Assignment(tuple(int(state.cluster.gpu_node[g]) for g in job.allocation),
                              job.shares[0], tuple(job.allocation))
            keep = Plan(job, plan.cq, held, workers_of(
                job, held, plan.cq, self.config, self.admission.flavor_nodes.masks(
                    state.cluster), state.cluster.gpu_node), len(job.allocation))
            keep.grant(usage, borrow=True)
            if keep.complete:
                out[job.job_id] = held
                room.take(held)
                return
        self._drop(job, reason, detail)

    def _drop(self, job: Job, reason: Reason, detail: str) -> None:
        # The same text as the cycle policies' (``TenantAdmission``): the detail only for an
        # unknown queue; the structured ``Pending`` keeps it always.
        shown = f" ({detail})" if reason is Reason.UNKNOWN_QUEUE else ""
        self._why[job.job_id] = f"[{NAME}] {reason.value}{shown}"
        if not job.allocation:
            self._record(job, reason, detail)

    def _record(self, job: Job, reason: Reason, detail: str) -> None:
        pending = self.admission.pending
        cq, position = pending.positions.get(job.job_id, (self.admission.queue_of(job), 0))
        pending[job.job_id] = Pending(job.job_id, cq, reason, position, detail)


class _Room:
    """Whole GPUs per node that the accepted targets leave, and the share of each GPU a target
    named (so that a job kept in place never collides with a target's GPUs)."""

    def __init__(self, state: CycleState, accepted: Mapping[str, Assignment]) -> None:
        self.gpu_node = state.cluster.gpu_node
        self.free = np.array(state.cluster.node_gpus, dtype=np.int64)
        self.free[list(state.snapshot.down_nodes)] = 0
        self.named: dict[int, float] = {}
        for assignment in accepted.values():
            self.take(assignment)

    def take(self, assignment: Assignment) -> None:
        for node in assignment.nodes:
            self.free[node] -= 1
        share = assignment.share if assignment.share is not None else 1.0
        for gpu in assignment.gpus or ():
            self.named[gpu] = self.named.get(gpu, 0.0) + share

    def holds(self, job: Job) -> bool:
        per_node = Counter(int(self.gpu_node[g]) for g in job.allocation)
        return (all(self.free[n] >= k for n, k in per_node.items())
                and all(self.named.get(g, 0.0) + s <= 1.0 + EPS
                        for g, s in zip(job.allocation, job.shares, strict=True)))
