"""The tenant layer as scheduling-framework plugins, and ``with_tenants`` to wrap any policy.

``TenantAdmission`` is one object at several extension points:
- QueueSort: ``ordering.admission_key`` around the wrapped policy's own key;
- PreFilter: queue known, StrictFIFO, requeue backoff, flavor assignment on quota (Kueue's
  nominate step); a job that needs preemption is let through with its victims chosen;
- Filter: the assigned flavor's nodes, and none while the quota does not fit (so the cycle's
  victim search, which asks "does it fit now?", counts quota as well as GPUs);
- PostFilter: the quota victims chosen at PreFilter (the tenant layer decides victims across
  queues; the wrapped policy's own preemption runs after it, inside the job's own queue);
- Reserve: the quota a started job takes, for later jobs of the same cycle;
- Blocked: StrictFIFO blocking and the structured reason; Wakeup: minimum runtime, backoff.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from dlsched.scheduling.framework import SUCCESS, Status, unschedulable
from dlsched.scheduling.plugins.preemption import protection_ends
from dlsched.scheduling.profile import Profile
from dlsched.scheduling.state import CycleState
from dlsched.tenancy.assignment import Assignment, Mode, assign
from dlsched.tenancy.config import ClusterQueue, QueueingStrategy, TenantConfig
from dlsched.tenancy.fairshare import DecayedUsage, share_value
from dlsched.tenancy.ordering import admission_key, queue_positions
from dlsched.tenancy.preemption import Admitted, Target, candidates, select_targets
from dlsched.tenancy.quota import QuotaTree, request_of
from dlsched.tenancy.reasons import Pending, Reason
from dlsched.tenancy.view import FlavorNodes, QuotaView, admitted_of
from dlsched.workload.job import Job

NAME = "tenants"


def _at_least(request: Mapping[str, float], other: Mapping[str, float]) -> bool:
    return all(request.get(r, 0.0) >= v for r, v in other.items())


class _Cycle:
    """What the plugin keeps for one cycle (in ``CycleState.scratch``)."""

    def __init__(self, view: QuotaView) -> None:
        self.view = view
        self.keys: dict[str, tuple] = {}
        self.positions: dict[str, tuple[str, int]] = {}
        self.assigned: dict[str, Assignment] = {}
        self.targets: dict[str, list[Target]] = {}
        self.blocked: dict[str, str] = {}  # StrictFIFO queue -> head that blocks it
        self.lenient: str | None = None
        # (queue, GPU types, priority, borrows) -> (usage version, request, submitted, reason)
        # of a job that failed on quota
        self.failed: dict[tuple, tuple[int, Mapping[str, float], float, Reason]] = {}


class TenantAdmission:
    name = NAME
    static = False

    def __init__(self, config: TenantConfig, inner: Any) -> None:
        self.config, self.inner = config, inner
        self.tree = QuotaTree(config)
        self.flavor_nodes = FlavorNodes(config)
        half_life = config.fair_sharing.usage_half_life
        self.history = DecayedUsage(half_life) if half_life > 0 else None
        self.pending: dict[str, Pending] = {}  # the last cycle's reasons, for visibility
        self.evicted_by: dict[str, set[str]] = {}  # victim -> the jobs that evicted it
        self._requests: dict[str, Mapping[str, float]] = {}

    # -- per-cycle data ---------------------------------------------------------------------
    def cycle(self, state: CycleState) -> _Cycle:
        data = state.scratch.get(NAME)
        if data is None:
            data = state.scratch[NAME] = _Cycle(QuotaView(self.config, self.tree,
                                                          self.flavor_nodes, state))
            self._advance_history(state, data.view)
            self.pending = {}
        return data

    def _advance_history(self, state: CycleState, view: QuotaView) -> None:
        if self.history is None:
            return
        rates: dict[str, float] = {}
        for a in view.admitted.values():
            rates[a.cq] = rates.get(a.cq, 0.0) + a.request.get("gpu", 0.0)
        self.history.advance(state.now, rates)

    def queue_of(self, job: Job) -> str:
        cq = self.config.cluster_queue_of(job.spec.queue)
        return cq.name if cq is not None else f"?{job.spec.queue}"

    # -- QueueSort --------------------------------------------------------------------------
    def sort_key(self, state: CycleState | None, job: Job) -> tuple:
        if state is None:  # a static order is never asked of this plugin
            return (0, 0.0, 0.0, -job.spec.priority, self.inner.sort_key(None, job), job.job_id)
        data = self.cycle(state)
        if not data.keys:
            self._order(state, data)
        key = data.keys.get(job.job_id)
        return key if key is not None else self._key(state, data, job, 0)

    def _order(self, state: CycleState, data: _Cycle) -> None:
        data.positions = queue_positions(state.snapshot.waiting, self.queue_of,
                                         lambda j: self.inner.sort_key(state, j))
        for job in state.snapshot.waiting:
            data.keys[job.job_id] = self._key(state, data, job, data.positions[job.job_id][1])

    def _key(self, state: CycleState, data: _Cycle, job: Job, position: int) -> tuple:
        cq = self.config.cluster_queue_of(job.spec.queue)
        rank, history = 0.0, 0.0
        if cq is not None and cq.flavors:
            usage, request = data.view.usage, self.request(job)
            flavor = cq.flavors[0]
            if self.config.fair_sharing.enabled:
                rank = share_value(usage, cq.name, {(flavor, r): v for r, v in request.items()})
            else:
                rank = float(usage.borrows(cq.name, flavor, request))
            if self.history is not None:
                history = self.history.value(cq.name) / cq.weight if cq.weight else np.inf
        return admission_key(position, rank, history, job, self.inner.sort_key(state, job))

    # -- PreFilter --------------------------------------------------------------------------
    def pre_filter(self, state: CycleState, job: Job) -> Status:
        data = self.cycle(state)
        cq = self.config.cluster_queue_of(job.spec.queue)
        if cq is None:
            return self._fail(data, job, Reason.UNKNOWN_QUEUE, repr(job.spec.queue))
        if cq.name in data.blocked:
            return self._fail(data, job, Reason.STRICT_FIFO, data.blocked[cq.name])
        if job.preemptions and self.config.requeue.base_seconds:
            ready = self.config.requeue.ready_at(job.queued_since, job.preemptions)
            if ready > state.now:
                return self._fail(data, job, Reason.BACKOFF, f"until t={ready:g}")
        request = self.request(job)
        usage = data.view.sync()
        memo = self._memo_key(data, job, cq, request)
        failed = data.failed.get(memo) if memo else None
        if failed is not None and failed[0] == data.view.version and _at_least(
                request, failed[1]) and job.spec.submit_time >= failed[2]:
            # Nothing changed since a job of this queue, GPU types, priority and borrowing,
            # submitted no later and asking no more, failed on quota: its candidates were a
            # superset of this job's, and it needed less.
            return self._fail(data, job, failed[3])
        assignment = assign(cq, self.config.flavors, job.spec, request, usage)
        status = SUCCESS
        if assignment.mode is Mode.NO_FIT:
            status = self._fail(data, job, assignment.reason or Reason.NO_QUOTA)
        else:
            data.assigned[job.job_id] = assignment
            if assignment.mode is Mode.PREEMPT:
                status = self._nominate_victims(state, data, job, cq.name, assignment)
        if not status.ok and memo is not None:
            data.failed[memo] = (data.view.version, request, job.spec.submit_time,
                                 self.pending[job.job_id].reason)
        return status

    def request(self, job: Job) -> Mapping[str, float]:
        asked = self._requests.get(job.job_id)
        if asked is None:
            asked = self._requests[job.job_id] = request_of(job.spec)
        return asked

    def _memo_key(self, data: _Cycle, job: Job, cq: ClusterQueue,
                  request: Mapping[str, float]) -> tuple | None:
        """The failure memo's key, for a queue with one flavor (with several, a larger job
        may be assigned another flavor) and a job that no other job evicted."""
        if len(cq.flavors) != 1 or self.evicted_by.get(job.job_id):
            return None
        borrows = data.view.usage.borrows(cq.name, cq.flavors[0], request)
        return (cq.name, job.spec.gpu_types, job.spec.priority, borrows)

    def _nominate_victims(self, state: CycleState, data: _Cycle, job: Job, cq: str,
                          assignment: Assignment) -> Status:
        incoming = Admitted(job.job_id, cq, assignment.flavor or "", self.request(job),
                            job.spec.priority, state.now, job.spec.submit_time)
        usage, running = data.view.sync(), data.view.running()
        # dlsched's rule beyond Kueue: a job never evicts a job that evicted it. Kueue's rules
        # (reclaim "any", fair sharing) allow it once shares have moved; this makes every
        # pair of jobs preempt in one direction at most (tests/tenancy/test_no_loops.py).
        evictors = self.evicted_by.get(job.job_id)
        if evictors:
            running = {q: [a for a in jobs if a.job_id not in evictors]
                       for q, jobs in running.items()}
        targets = select_targets(self.config, usage, incoming, running, state.now)
        if targets:
            data.targets[job.job_id] = targets
            return SUCCESS
        protected = data.view.any_protected and bool(
            candidates(self.config, usage, incoming, running, float("inf")))
        return self._fail(data, job, Reason.MIN_RUNTIME if protected
                          else assignment.reason or Reason.NEEDS_PREEMPTION)

    def _fail(self, data: _Cycle, job: Job, reason: Reason, detail: str = "") -> Status:
        self._record(data, job, reason, detail)
        text = f"{reason.value} ({detail})" if detail else reason.value
        return unschedulable(NAME, text)

    def _record(self, data: _Cycle, job: Job, reason: Reason, detail: str = "") -> None:
        cq, position = data.positions.get(job.job_id, (self.queue_of(job), 0))
        self.pending[job.job_id] = Pending(job.job_id, cq, reason, position, detail)

    # -- Filter -----------------------------------------------------------------------------
    def filter(self, state: CycleState, job: Job, mask: np.ndarray) -> np.ndarray:
        data = self.cycle(state)
        assignment = data.assigned.get(job.job_id)
        if assignment is None or assignment.flavor is None:
            return mask
        mask = mask & self.flavor_nodes.masks(state.cluster)[assignment.flavor]
        if data.lenient == job.job_id:
            data.lenient = None  # the victim search's first look: nodes only
            return mask
        cq = self.config.cluster_queue_of(job.spec.queue)
        fits = data.view.sync().fits(cq.name, assignment.flavor,  # type: ignore[union-attr]
                                     request_of(job.spec))
        return mask if fits else np.zeros_like(mask)

    # -- PostFilter -------------------------------------------------------------------------
    def post_filter(self, state: CycleState, job: Job) -> Iterable[Job]:
        data = self.cycle(state)
        targets = data.targets.get(job.job_id)
        if not targets:
            return ()
        data.lenient = job.job_id
        running = {j.job_id: j for j in state.snapshot.running}
        return [running[t.victim.job_id] for t in targets
                if t.victim.job_id not in state.evicted]

    # -- Reserve, Blocked, Wakeup -----------------------------------------------------------
    def reserve(self, state: CycleState, job: Job, gpus: tuple[int, ...]) -> None:
        data = self.cycle(state)
        assignment = data.assigned.get(job.job_id)
        cq = self.config.cluster_queue_of(job.spec.queue)
        if assignment is not None and assignment.flavor is not None and cq is not None:
            data.view.reserve(admitted_of(job, cq.name, assignment.flavor))
        for target in data.targets.get(job.job_id, ()):
            if target.victim.job_id in state.evicted:
                self.evicted_by.setdefault(target.victim.job_id, set()).add(job.job_id)

    def on_unschedulable(self, state: CycleState, job: Job, status: Status) -> None:
        data = self.cycle(state)
        data.lenient = None
        cq = self.config.cluster_queue_of(job.spec.queue)
        if job.job_id not in self.pending:
            self._record(data, job, Reason.NO_NODE_FITS, str(status))
        if cq is not None and cq.queueing_strategy is QueueingStrategy.STRICT_FIFO:
            data.blocked.setdefault(cq.name, job.job_id)

    def next_wakeup(self, state: CycleState) -> float | None:
        times = [protection_ends(state, cq.preemption.min_runtime)
                 for cq in self.config.cluster_queues.values() if cq.preemption.min_runtime]
        if self.config.requeue.base_seconds:
            times += [self.config.requeue.ready_at(j.queued_since, j.preemptions)
                      for j in state.snapshot.waiting if j.preemptions]
        future = [t for t in times if t is not None and t > state.now]
        return min(future) if future else None


_POINTS = ("pre_filter", "filter", "score", "permit", "reserve", "on_unschedulable",
           "next_wakeup")


class _Stripped:
    """A wrapped policy's plugin without its QueueSort: the tenant layer orders across queues.
    Its PostFilter (the policy's own preemption: Tiresias' 2D-LAS, SRTF) still runs, limited
    to victims of the preemptor's own cluster queue, so it cannot take another tenant's quota;
    victims across queues are the tenant layer's (Kueue's) to choose."""

    def __init__(self, inner: Any, config: TenantConfig) -> None:
        self.inner, self.name, self.config = inner, inner.name, config
        self.static = getattr(inner, "static", False)
        for point in _POINTS:
            if hasattr(inner, point):
                setattr(self, point, getattr(inner, point))
        if hasattr(inner, "post_filter"):
            self.post_filter = self._same_queue_victims

    def _same_queue_victims(self, state: CycleState, job: Job) -> Iterable[Job]:
        own = self.config.cluster_queue_of(job.spec.queue)
        return (victim for victim in self.inner.post_filter(state, job)
                if own is not None and self.config.cluster_queue_of(victim.spec.queue) is own)


def with_tenants(profile: Profile, config: TenantConfig) -> Profile:
    """``profile``'s policy inside the tenant model, the policy itself unchanged."""
    own = list({id(p): p for p in (profile.queue_sort, *profile.plugins)}.values())
    kept = [_Stripped(p, config) for p in own
            if any(hasattr(p, point) for point in (*_POINTS, "post_filter"))]
    filters = [f for f in profile.filters if f not in own]
    return Profile(f"{profile.name}+tenants", TenantAdmission(config, profile.queue_sort),
                   kept, placement=profile.placement, filters=filters, strict_fifo=False,
                   round_seconds=profile.round_seconds, acts_on_running=profile.acts_on_running,
                   options=dict(profile.options))
