"""The tenant layer as scheduling-framework plugins (``profile.with_tenants`` wraps a policy).

``TenantAdmission`` is one object at several extension points:
- QueueSort: ``ordering.admission_key`` around the wrapped policy's own key;
- PreFilter: queue known, StrictFIFO, requeue backoff, flavor assignment on quota (Kueue's
  nominate step); ``UNRESOLVABLE`` when no preemption can help, ``UNSCHEDULABLE`` with the
  victims chosen when the job needs preemption (the cycle then runs PostFilter), or with none
  chosen when the wrapped policy's own preemption inside the job's queue may free its quota
  (``_policy_turn``: a swap inside one queue is quota-neutral);
- Filter: the assigned flavor's nodes;
- Permit: the quota fits in the assigned flavor (the cycle asks Permit in its victim search,
  so "does it fit now?" counts quota as well as GPUs);
- PostFilter: the quota victims chosen at PreFilter (the tenant layer decides victims across
  queues; the wrapped policy's own preemption runs after it, inside the job's own queue, for a
  job whose quota fits and for one whose quota only that preemption may free);
- Reserve: the quota a started job takes, for later jobs of the same cycle;
- Blocked: the structured reason, and for a StrictFIFO queue ``skip_queue`` for the rest of
  it (Kueue's heads of queues); Wakeup: minimum runtime, backoff.
"""

from __future__ import annotations

import bisect
import functools
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from dlsched.scheduling.cycle import BLOCKED_QUEUES, skip_queue
from dlsched.scheduling.framework import SUCCESS, Code, Status, unschedulable
from dlsched.scheduling.plugins.preemption import protection_ends
from dlsched.scheduling.state import CycleState
from dlsched.tenancy import orders
from dlsched.tenancy.assignment import Assignment, Mode, Victims, assign
from dlsched.tenancy.audit import TenantAudit
from dlsched.tenancy.config import (
    AdmissionOrder,
    ClusterQueue,
    QueueingStrategy,
    Reclaim,
    TenantConfig,
)
from dlsched.tenancy.fairshare import DecayedUsage, ShareRank, admission_rank, path_to_root
from dlsched.tenancy.groups import (
    Carried,
    Group,
    Groups,
    GroupWalk,
    KeptMiss,
    Refusal,
    groupable,
    miss_key,
    shape_of,
)
from dlsched.tenancy.lines import WaitingLines
from dlsched.tenancy.memo import (
    FailedSearch,
    MemoKey,
    SameAssignment,
    flavor_key,
    still_fails,
)
from dlsched.tenancy.ordering import admission_key
from dlsched.tenancy.preemption import Admitted, Target, Why, select_targets
from dlsched.tenancy.preemption import Victims as Found
from dlsched.tenancy.quota import EPS, QuotaTree, Usage, request_of
from dlsched.tenancy.reasons import Pending, PendingBook, Reason, not_placed
from dlsched.tenancy.skip import closes_queue
from dlsched.tenancy.view import FlavorNodes, Ledger, QuotaView, admitted_of
from dlsched.workload.job import Job

NAME = "tenants"


def _at_least(request: Mapping[str, float], other: Mapping[str, float]) -> bool:
    return all(request.get(r, 0.0) >= v for r, v in other.items())


class _Cycle:
    """What the plugin keeps for one cycle (in ``CycleState.scratch``)."""

    def __init__(self, view: QuotaView) -> None:
        self.view = view
        self.keys: dict[str, tuple] = {}
        self.positions: Mapping[str, tuple[str, int]] = {}
        self.assigned: dict[str, Assignment] = {}
        self.targets: dict[str, list[Target]] = {}
        self.no_borrow: set[str] = set()  # victims found by a pass that forbade borrowing
        self.seen_evicted: set[str] = set()  # evictions already logged
        self.blocked: dict[str, str] = {}  # StrictFIFO queue -> head that blocks it
        # The walk by groups gave every job it was to give (it was not stopped early), and
        # whether a job needed its queue's quota by preemption (``next_wakeup``)
        self.walked = False
        self.preempting = False
        # (queue, GPU types, priority, borrows) -> (usage version, request, submitted, reason)
        # of a job that failed on quota
        self.least: dict[str, dict[str, float]] = {}  # per queue, the least a job asks
        self.ranks: dict[tuple, ShareRank] = {}  # (queue, request) -> borrow rank
        self.options: dict[str, list[Assignment]] = {}  # job -> each flavor's assignment
        self.failed: dict[tuple, tuple[int, Mapping[str, float], float, Reason]] = {}
        self.searches: dict[MemoKey, FailedSearch] = {}  # per flavor: memo.py
        # (queue, GPU types, priority, request, usage version) -> a flavor assignment in a
        # queue of several flavors whose oracle found no victims (memo.SameAssignment)
        self.several: dict[tuple, SameAssignment] = {}
        self.rank_usage: Usage | None = None  # usage at the cycle's start, for the order
        # (queue, GPU types, request, usage version) -> the flavor assignment, for queues of
        # one flavor; (queue, request, usage version) -> whether it borrows: jobs alike in a
        # cycle whose usage did not change get the same answers (``assign`` is a function of
        # these alone)
        self.assignments: dict[tuple, Assignment] = {}
        self.borrows: dict[tuple, bool] = {}
        # The walk by groups (groups.py): on until a PreFilter fails; per (shape, flavor) the
        # fewest GPUs a job failed placement with, and that failure's text
        self.bulk = True
        self.misses: dict[tuple, tuple[int, str, int | None]] = {}
        self.walk: GroupWalk | None = None
        self.terms: dict[Group, tuple[ShareRank, float]] = {}
        self.available: tuple[int, dict[tuple, float]] = (-1, {})
        self.queue_fits: tuple[int, dict[str, bool]] = (-1, {})  # per usage version
        self.group_fits: tuple[int, dict[Group, bool]] = (-1, {})  # ``_droppable``'s, the same
        # The wrapped policies' victims epoch of each cluster queue when first asked in the
        # cycle (``carried_miss`` asks it for every group as the walk starts, with nothing
        # changed in between): computed once per queue
        self.start_epochs: dict[str, tuple | None] = {}
        # job -> the most GPUs that may be wholly free for its failed victim search to fail
        # again (``victims_short``; None: it failed for another reason than room)
        self.short: dict[str, int | None] = {}
        # Cluster queues a job was admitted to by borrowing in this cycle, and whether a
        # reclaim waits for a second cycle at this time (``_deferred``)
        self.borrowed: set[str] = set()
        self.deferred = False
        # Jobs whose quota Kueue's victim search could not free, left to the wrapped policy's
        # own preemption inside their cluster queue (``_policy_turn``): job -> (reason,
        # assignment, request), what a failure then records (``on_unschedulable``)
        self.policy_turn: dict[str, tuple[Reason, Assignment, Mapping[str, float]]] = {}


class TenantAdmission:
    name = NAME
    static = False

    def __init__(self, config: TenantConfig, inner: Any) -> None:
        self.config, self.inner = config, inner
        self.tree = QuotaTree(config)
        self.flavor_nodes = FlavorNodes(config)
        self.ledger = Ledger(config, self.tree, self.flavor_nodes)
        half_life = config.fair_sharing.usage_half_life
        self.history = DecayedUsage(half_life) if half_life > 0 else None
        self.pending = PendingBook()  # the last cycle's reasons, for visibility
        self.evicted_by: dict[str, set[str]] = {}  # victim -> the jobs that evicted it
        # (time, jobs) whose reclaim was deferred to a second cycle at that time, and the
        # time a second cycle was last asked for (``_deferred``, ``next_wakeup``)
        self._deferrals: tuple[float, set[str]] = (-1.0, set())
        self._second_cycle_at: float | None = None
        self.audit = TenantAudit()
        self._requests: dict[str, Mapping[str, float]] = {}
        self._names: dict[str, tuple[str, ...]] = {}
        self._queue_names: dict[str, str] = {}  # JobSpec.queue -> cluster queue name
        self._submission_order = bool(getattr(inner, "static", False))
        # A static key that changes while a job waits is told by the policy (Tiresias'
        # promotions), as the core asks of a QueueSort of its own (``scheduler.py``).
        self._key_changes = getattr(inner, "key_changes", None)
        self.lines = WaitingLines(self.queue_of, self.request, self._submission_order)
        # Whether the cycle may walk waiting jobs by groups (groups.py; set by with_tenants)
        self.by_groups = False
        # Whether every victim a job whose quota fits can get is the wrapped policy's, of its
        # own cluster queue, and only the flavor narrows its nodes beyond the static filters
        # (set by with_tenants): then failed victim searches tell about later jobs
        # (``victim_miss_scope``).
        self.scoped_victims = False
        # Whether the walk by groups runs under the wrapped policy's own preemption (set by
        # with_tenants): a group is dropped only once a job of its queue and priority failed
        # its victim search too (``groups.miss_key``).
        self.preemptive_walk = False
        # The wrapped policies' ``victims_epoch`` (set by with_tenants where each has one): a
        # failed victim search then tells about later cycles too, while no job stops
        # anywhere, none starts in its queue and the epochs stay (``carried_miss``).
        self.victim_epochs: list[Callable[[CycleState, str], Hashable | None]] = []
        # The wrapped policies' ``walk_ready`` (backfill: set by with_tenants): until each
        # says so in a cycle, the walk passes over no job, and no group starts cold; once all
        # say so, they do for the rest of the cycle (backfill's reservation stays made).
        self.walk_gates: list[Callable[[CycleState], bool]] = []
        # Their ``walk_refusal`` (backfill's reservation): what a PreFilter of theirs refuses
        # for the rest of a cycle (GPUs asked above, a test a job passes, the reason); the
        # walk passes over steady jobs so refused (``GroupWalk._refuse``).
        self.walk_refusals: list[Callable[[CycleState], Any]] = []
        # The wrapped policy's plugin names (set by with_tenants): a job one of them fails
        # after its quota was reserved waits for POLICY_HOLDS, not NO_NODE_FITS
        self.policy_plugins: frozenset[str] = frozenset()
        # Whether the wrapped policy's own preemption may find victims for a job (set by
        # with_tenants; None: the policy does not preempt): ``_policy_turn``
        self.policy_victims: Callable[[CycleState, Job], bool] | None = None
        self.groups = Groups(self.request)
        if self._submission_order:
            self.lines.on_join, self.lines.on_leave = self.groups.join, self.groups.leave
        self._one_flavor = {cq.name: cq.flavors[0] for cq in config.cluster_queues.values()
                            if len(cq.flavors) == 1
                            and cq.queueing_strategy is not QueueingStrategy.STRICT_FIFO}
        self._hierarchy: orders.Hierarchy | None = None  # Slurm's tree, built when first used
        self._min_runtimes = sorted({cq.preemption.min_runtime
                                     for cq in config.cluster_queues.values()
                                     if cq.preemption.min_runtime})
        # Whether a cycle that changed nothing stays so while nothing but time moves (set by
        # with_tenants): then such a cycle asks no wake-up for the ends of protection
        self.steady_when_quiet = False
        # The time of the last cycle that asked no wake-up for the ends of protection
        # (``next_wakeup``); the next cycle first advances the fair-sharing history through
        # the cycles those ends would have run (``_replay_quiet``)
        self._quiet_since: float | None = None
        # The wrapped policies' wake-ups that quiet cycles left out between two times
        # (Tiresias' demotions that matter to no one: ``DiscretizedLas.left_out``), replayed
        # with the ends of protection (set by with_tenants)
        self.left_out: list[Callable[[float, float], list[float]]] = []
        # (the ledger's usage version, its memos: ``_share_memos``)
        self._memos: tuple[int, dict, dict, dict, dict] | None = None
        # Fair-sharing ranks by the usage values they read (``_fair_rank``), and each queue's
        # path below the root
        self._fair_ranks: dict[tuple, ShareRank] = {}
        self._rank_paths: dict[str, tuple[str, ...]] = {}

    # -- per-cycle data ---------------------------------------------------------------------
    def cycle(self, state: CycleState) -> _Cycle:
        data = state.scratch.get(NAME)
        if data is None:
            if self._quiet_since is not None:
                self._replay_quiet(state.now)
            self.ledger.told = self.by_groups  # every start passes Reserve (profile.py)
            data = state.scratch[NAME] = _Cycle(QuotaView(self.config, self.ledger, state))
            self._share_memos(data)
            self._advance_history(state, data.view)
            self.pending = PendingBook(data.positions)
            self.pending.policy_plugins = self.policy_plugins
            if self.by_groups:
                self.pending.bulk = lambda job_id: self._skipped(data, job_id)
        return data

    def _share_memos(self, data: _Cycle) -> None:
        """Give the cycle the memos of quota read from the usage its view starts with
        (``available``, ``queue_fits`` at view version 0; the borrowing ranks join them in
        ``_prepare``), kept from the last cycle while the ledger's usage is the same: they
        depend on nothing else."""
        version, memos = self.ledger.version, self._memos
        if memos is None or memos[0] != version:
            memos = self._memos = (version, {}, {}, {}, {})
        data.available, data.queue_fits = (0, memos[1]), (0, memos[2])
        data.group_fits = (0, memos[4])

    def _advance_history(self, state: CycleState, view: QuotaView) -> None:
        if self.history is not None:
            self.history.advance(state.now, self._rates())

    def _rates(self) -> Mapping[str, float]:
        """GPUs held per cluster queue by the jobs the ledger admitted."""
        if self.ledger.integral:  # the same sums, kept as jobs start and stop
            return self.ledger.rates
        rates: dict[str, float] = {}
        for a in self.ledger.admitted.values():
            rates[a.cq] = rates.get(a.cq, 0.0) + a.request.get("gpu", 0.0)
        return rates

    def _replay_quiet(self, now: float) -> None:
        """Advance the fair-sharing history through the cycles that the wake-ups
        ``next_wakeup`` did not ask would have run (each protection end after the quiet
        cycle and before ``now``), with the rates of then (the ledger is not updated yet),
        so that it holds the values, to the last bit, that those cycles would have left."""
        since, self._quiet_since = self._quiet_since, None
        if since is None:
            return
        ends = {at for left_out in self.left_out for at in left_out(since, now)}
        if self.history is None:
            return
        starts = self.ledger.starts
        for runtime in self._min_runtimes:  # ``Ledger.protection_ends``' sums, in order
            low = bisect.bisect_right(starts, since, key=lambda s: s + runtime)
            high = bisect.bisect_left(starts, now, key=lambda s: s + runtime)
            ends.update(start + runtime for start in starts[low:high])
        rates = self._rates()
        for end in sorted(ends):
            self.history.advance(end, rates)

    def queue_names(self, cq: str) -> tuple[str, ...]:
        """The names jobs use for cluster queue ``cq``: its own and its local queues'."""
        names = self._names.get(cq)
        if names is None:
            names = self._names[cq] = (cq, *(lq.name for lq in self.config.local_queues.values()
                                             if lq.cluster_queue == cq))
        return names

    def queue_of(self, job: Job) -> str:
        return self.queue_named(job.spec.queue)

    def queue_named(self, name: str) -> str:
        """The cluster queue of a job whose ``JobSpec.queue`` is ``name`` (``?name``: none)."""
        found = self._queue_names.get(name)
        if found is None:
            cq = self.config.cluster_queue_of(name)
            found = self._queue_names[name] = cq.name if cq is not None else f"?{name}"
        return found

    def on_waiting(self, job: Job) -> None:
        """The core tells each job that starts waiting (the lines join it at the next cycle)."""
        self.lines.joined(job)

    # -- QueueSort --------------------------------------------------------------------------
    def sort_key(self, state: CycleState | None, job: Job) -> tuple:
        if state is None:  # a static order is never asked of this plugin
            return admission_key(0, (0.0,), 0.0, job, self.inner.sort_key(None, job))
        data = self.cycle(state)
        self._prepare(state, data)
        key = data.keys.get(job.job_id)
        if key is None:
            key = data.keys[job.job_id] = self._key(state, data, job)
        return key

    def victim_miss_scope(self, state: CycleState, job: Job) -> tuple[str, str, int] | None:
        """(cluster queue, flavor, priority) of a job whose quota fits in one flavor (so Kueue
        names no victims for it and the quota Permit passes), when the victims are the wrapped
        policy's within the job's cluster queue (``scoped_victims``): a later job of the queue
        and priority ranks lower by the policy's key, so its victims are among an earlier
        one's. (A queue orders by priority first and the policy's victims by its key alone: a
        later job of a lower priority may rank higher by the key.) None otherwise."""
        if not self.scoped_victims or not groupable(job.spec):
            return None
        assignment = self.cycle(state).assigned.get(job.job_id)
        if assignment is None or assignment.mode is not Mode.FIT or not assignment.flavor:
            return None
        return self.queue_of(job), assignment.flavor, job.spec.priority

    def victims_short(self, state: CycleState, job: Job, free_max: int | None) -> None:
        """``job``'s victim search failed; with at most ``free_max`` GPUs wholly free (None:
        unknown) a later one of its scope fails too (``carried_miss``)."""
        self.cycle(state).short[job.job_id] = free_max

    def ordered(self, state: CycleState) -> Iterator[Job]:
        """The waiting jobs in ``sort_key`` order, one round of queue positions at a time
        (all heads, then all second jobs, ...): a queue the cycle closed (``skip_queue``) drops
        out of later rounds before its keys are computed."""
        data = self.cycle(state)
        self._prepare(state, data)
        order = self.config.fair_sharing.admission_order
        if order is not AdmissionOrder.KUEUE:
            yield from self._other_order(state, data, order)
            return
        lines = self.lines.lines
        blocked = state.scratch.setdefault(BLOCKED_QUEUES, {})
        queues, position = list(lines), 0
        while queues:
            heads, still = [], []
            for cq in queues:
                line = lines[cq]
                if position >= len(line) or (blocked and self._closed(cq, blocked)):
                    continue
                still.append(cq)
                heads.append(line[position])
            heads.sort(key=lambda j: self.sort_key(state, j))
            yield from heads
            queues, position = still, position + 1

    def tries(self, state: CycleState) -> Iterator[Job]:
        """The jobs the cycle tries, in ``ordered``'s order: with the walk by groups
        (``groups.py``), less the jobs told to fail placement without a try."""
        if not self.by_groups or (self.config.fair_sharing.admission_order
                                  is not AdmissionOrder.KUEUE):
            return self.ordered(state)
        data = self.cycle(state)
        self._prepare(state, data)
        return self._walk(state, data)

    def _other_order(self, state: CycleState, data: _Cycle, order: AdmissionOrder
                     ) -> Iterator[Job]:
        if order is AdmissionOrder.DRF:
            totals, queues = orders.quota_totals(self.tree), self.config.cluster_queues

            def share(cq: str) -> float:
                queue = queues.get(cq)
                return 0.0 if queue is None else orders.drf_share(
                    data.view.sync(), cq, totals, queue.weight)

            yield from orders.progressive_filling(self, state, share)
            return
        if self._hierarchy is None:
            self._hierarchy = orders.hierarchy(self.config)
        usage = self.history.values if self.history is not None else {}
        factors = orders.slurm_factors(self.config, self._hierarchy, usage)
        yield from orders.by_queue_factor(self, state, factors)

    # -- the walk by groups (groups.py) -----------------------------------------------------
    def _walk(self, state: CycleState, data: _Cycle) -> Iterator[Job]:
        blocked = state.scratch.setdefault(BLOCKED_QUEUES, {})
        keys, bisect_left = self.lines.keys, bisect.bisect_left

        def position(group: Group, entry: Any) -> int:
            return bisect_left(keys[group.cq], entry)

        def key(group: Group, entry: Any, job: Job) -> tuple:
            terms = data.terms.get(group)
            if terms is None:
                terms = data.terms[group] = self._terms(data, group)
            return admission_key(bisect_left(keys[group.cq], entry), terms[0], terms[1], job,
                                 entry[1])

        gates, droppable_now = self.walk_gates, functools.partial(self._droppable, data)

        def gated(group: Group) -> bool:
            if not all([gate(state) for gate in gates]):
                return False
            data.walk.droppable = droppable_now  # the gates stay open for the cycle
            return droppable_now(group)

        droppable = gated if gates else droppable_now
        data.walk = GroupWalk(
            self.groups, key, position, droppable,
            functools.partial(self._fits_queue, data),
            lambda cq: bool(blocked) and self._closed(cq, blocked),
            lambda: (data.bulk, len(state.evicted), data.view.version), data.misses,
            lambda group: self._one_flavor.get(group.cq), lambda: state.free_whole,
            self.preemptive_walk,
            functools.partial(self.carried_miss, state, data) if self.victim_epochs else None,
            cold_start=not gates,
            refusal=self._refusal(state) if self.walk_refusals else None)
        try:
            yield from data.walk
            data.walked = True
        finally:  # the pending book keeps the walk's record, not the cycle's state
            data.walk.release()

    def _refusal(self, state: CycleState) -> Callable[[], Refusal | None]:
        """The walk's ``refusal``: the one PreFilter's that refuses now (None: none does)."""
        if len(self.walk_refusals) != 1:  # which refuses would be job by job: none skips
            return lambda: None
        refusal = self.walk_refusals[0]

        def refused() -> Refusal | None:
            found = refusal(state)
            return None if found is None else Refusal(*found)

        return refused

    def _terms(self, data: _Cycle, group: Group) -> tuple[ShareRank, float]:
        """A group's borrowing rank and historic usage (``_key``'s: alike for its jobs)."""
        cq = self.config.cluster_queues.get(group.cq)
        if cq is None or not cq.flavors:
            return (0.0,), 0.0
        history = 0.0
        if self.history is not None:
            history = self.history.value(cq.name) / cq.weight if cq.weight else np.inf
        return self._rank(data, cq, group.request), history

    def _droppable(self, data: _Cycle, group: Group) -> bool:
        """Whether the group's jobs would pass PreFilter now with its queue's one flavor,
        FIT (``assign``'s first branch: the request is available in that flavor); kept per
        usage version, as ``_fits``' memos."""
        if not data.bulk:
            return False
        known = _of_version(data, "group_fits")
        fits = known.get(group)
        if fits is None:
            fits = known[group] = self._group_fits(data, group)
        return fits

    def _group_fits(self, data: _Cycle, group: Group) -> bool:
        flavor = self._one_flavor.get(group.cq)
        if flavor is None:
            return False
        served = self.config.flavors[flavor].gpu_types
        if group.gpu_types and served and not set(group.gpu_types) & set(served):
            return False
        return self._fits(data, group.cq, group.request)

    def _fits_queue(self, data: _Cycle, cq: str) -> bool:
        """Whether every group of ``cq`` fits its quota now (``_fits`` of the most any group
        asks), kept while the usage stays."""
        if not data.bulk:
            return False
        known = _of_version(data, "queue_fits")
        fits = known.get(cq)
        if fits is None:
            fits = known[cq] = self._fits(data, cq, self.groups.most(cq))
        return fits

    def _fits(self, data: _Cycle, cq: str, request: Mapping[str, float]) -> bool:
        """``request`` is available to ``cq`` in its one flavor now (while the walk skips)."""
        flavor = self._one_flavor.get(cq)
        if not data.bulk or flavor is None:
            return False
        known = _of_version(data, "available")
        usage = data.view.usage
        for resource, amount in request.items():
            fr = (cq, flavor, resource)
            free = known.get(fr)
            if free is None:
                free = known[fr] = usage.available(cq, (flavor, resource))
            if amount > free + EPS:
                return False
        return True

    def _missed(self, state: CycleState, data: _Cycle, job: Job, text: str) -> None:
        """``job`` passed PreFilter (FIT in its flavor) and failed placement: a later job of
        its shape and flavor (and under the policy's own preemption, of its queue and priority)
        asking as many GPUs fails too until the next eviction (the walk then clears the
        misses)."""
        assignment = data.assigned.get(job.job_id)
        if (assignment is None or assignment.mode is not Mode.FIT or not assignment.flavor
                or data.targets.get(job.job_id) or not groupable(job.spec)):
            return
        key = miss_key(shape_of(job.spec), assignment.flavor, self.queue_of(job),
                       job.spec.priority, self.preemptive_walk)
        known = data.misses.get(key)
        if known is not None and job.spec.num_gpus >= known[0]:
            return
        short = data.short.get(job.job_id)
        data.misses[key] = (job.spec.num_gpus, text, short)
        if self.victim_epochs:
            cq = self.queue_of(job)
            epoch = self._victims_epoch(state, cq)
            if epoch is not None:
                ledger = self.ledger
                self.groups.carry.setdefault(key, {})[job.spec.num_gpus] = KeptMiss(
                    job.spec.num_gpus, text, ledger.stops, ledger.starts_in.get(cq, 0), epoch,
                    short, self.lines.entries.get(job.job_id))

    def _victims_epoch(self, state: CycleState, cq: str) -> tuple | None:
        """The wrapped policies' victims epochs for the jobs of ``cq`` (their victims are of
        their own cluster queue: ``QueueScope``), or None."""
        epochs = tuple([epoch(state, cq) for epoch in self.victim_epochs])
        return None if None in epochs else epochs

    def carried_miss(self, state: CycleState, data: _Cycle, group: Group) -> Carried | None:
        """A failed placement and victim search of an earlier cycle that tells about
        ``group``'s jobs now, or None.

        It tells while none started in the group's queue (no new victims) since the cycle it
        was made in (the ledger's counts are those of each cycle's start, so a start later in
        that cycle counts too), the wrapped policies' ``victims_epoch`` of its queue is the
        same (their victims only shrink with time in between; a demotion in another queue
        gives none) and the group's quota still fits
        (``_droppable``). Then a job of the group's queue, priority, shape and flavor asking
        no more GPUs failed, and
        - while no job stopped anywhere (free GPUs only shrank), every job of the group
          failed in that cycle and fails again;
        - after stops, if its search failed for room and no more GPUs are wholly free than it
          could bear (``victims_short``), the jobs ranked after it fail: their candidates are
          among its own. With more free as the walk starts, it is carried ``lazy``: the walk
          checks the bound at the group's turn, when the jobs started before it may have
          taken the GPUs that the stops freed (``GroupWalk._miss``)."""
        flavor = self._one_flavor.get(group.cq)
        if flavor is None or self.groups.typed.get(group.cq):
            return None
        key = group.carry_key
        if key is None:
            key = group.carry_key = miss_key(group.shape, flavor, group.cq, group.priority, True)
        kept = self.groups.carry.get(key)
        if not kept:
            return None
        cq, ledger = group.cq, self.ledger
        start_epochs = data.start_epochs
        epoch = start_epochs.get(cq, _UNASKED)
        if epoch is _UNASKED:
            epoch = start_epochs[cq] = self._victims_epoch(state, cq)
        starts, stops, num_gpus = ledger.starts_in.get(cq, 0), ledger.stops, group.num_gpus
        found: Carried | None = None
        lazy: Carried | None = None
        free: int | None = None
        stale: list[int] = []
        for gpus, known in kept.items():
            if gpus > num_gpus:
                continue
            if known.starts != starts or known.epoch != epoch:
                stale.append(gpus)
                continue
            if known.stops == stops:
                most = known.most if known.entry is not None else None
                found = Carried(known.detail, True, most, known.entry)
                break
            if known.entry is None or known.most is None:
                stale.append(gpus)
                continue
            if free is None:
                free = state.free_whole
            if free > known.most:  # it may tell once starts leave fewer free
                if lazy is None or known.most > lazy.most:
                    lazy = Carried(known.detail, False, known.most, known.entry, True)
                continue
            if found is None or known.entry < found.entry:
                found = Carried(known.detail, False, known.most, known.entry)
        for gpus in stale:
            del kept[gpus]
        found = found or lazy
        if found is None or not self._droppable(data, group):
            return None
        return found

    def _skipped(self, data: _Cycle, job_id: str) -> str | None:
        """The detail of the miss that skipped ``job_id`` in the cycle, or None."""
        entry = self.lines.entries.get(job_id)
        if data.walk is None or entry is None:
            return None
        return data.walk.skipped_at(job_id, entry)

    def closed(self, cq: str, blocked: Mapping[str, str]) -> bool:
        """Whether the cycle closed every name of cluster queue ``cq`` (``skip_queue``)."""
        return self._closed(cq, blocked)

    def _closed(self, cq: str, blocked: Mapping[str, str]) -> bool:
        return cq in self.config.cluster_queues and all(
            name in blocked for name in self.queue_names(cq))

    def _prepare(self, state: CycleState, data: _Cycle) -> None:
        """Bring the queues' lines up to this cycle's waiting jobs, once per cycle; freeze the
        usage that borrowing ranks read (Kueue orders a cycle's heads by its snapshot)."""
        if data.rank_usage is not None:
            return
        inner_key = self.inner.sort_key

        def within(job: Job) -> Any:
            return inner_key(state, job)

        self.groups.settle(self.lines.entries)
        self.lines.update(state.snapshot.waiting, within)
        if self._key_changes is not None:  # the core asks only its own QueueSort
            self.lines.refile(self._key_changes(state.now), within)
        data.positions = self.pending.positions = self.lines.positions
        data.least = self.lines.least
        # At view version 0 the view's usage is the ledger's, which no cycle changes before
        # the next cycle's update: no copy needed.
        data.rank_usage = (self.ledger.usage if not data.view.version
                           else data.view.usage.copy())
        if not data.view.version and self._memos is not None:
            # The ranks are read from the cycle's starting usage (the version never went
            # back): those kept across cycles serve, with those read so far in the cycle.
            shared = self._memos[3]
            shared.update(data.ranks)
            data.ranks = shared

    def _key(self, state: CycleState, data: _Cycle, job: Job) -> tuple:
        cq = self.config.cluster_queue_of(job.spec.queue)
        rank: ShareRank = (0.0,)
        history = 0.0
        if cq is not None and cq.flavors:
            rank = self._rank(data, cq, self.request(job))
            if self.history is not None:
                history = self.history.value(cq.name) / cq.weight if cq.weight else np.inf
        where = self.lines.positions.get(job.job_id)
        if where is None:  # not waiting: asked by another plugin
            return admission_key(0, rank, history, job, self.inner.sort_key(state, job))
        return admission_key(where[1], rank, history, job, self.lines.within(job))

    def _rank(self, data: _Cycle, cq: ClusterQueue, request: Mapping[str, float]
              ) -> ShareRank:
        """Borrowing first-term of the cross-queue key, the same for equal requests (cached)."""
        flavor, usage = cq.flavors[0], data.rank_usage or data.view.usage
        key = (cq.name, tuple(request.items()))
        rank = data.ranks.get(key)
        if rank is None:
            if self.config.fair_sharing.enabled:
                rank = self._fair_rank(usage, cq.name, flavor, request, key)
            else:  # Kueue's classical order: borrowing from less far up the tree first
                rank = (float(max((usage.borrow_height(cq.name, (flavor, r), v)[0]
                                   for r, v in request.items()), default=0)),)
            data.ranks[key] = rank
        return rank

    def _fair_rank(self, usage: Usage, cq: str, flavor: str, request: Mapping[str, float],
                   key: tuple) -> ShareRank:
        """``admission_rank`` of a request, kept while the usage of the nodes it reads stays:
        the shares of the queue's path below the root read the usage of those nodes only
        (``_carried`` carries the request up from the queue; the rest is the tree's quotas
        and weights). Keyed by those values, a rank serves across cycles and ledger versions,
        whichever other queue's usage moved."""
        path = self._rank_paths.get(cq)
        if path is None:
            path = self._rank_paths[cq] = tuple(path_to_root(usage, cq)[:-1] or [cq])
        resources = usage.tree.resources
        seen = (key, tuple([usage.usage(node, fr) for node in path for fr in resources]))
        rank = self._fair_ranks.get(seen)
        if rank is None:
            if len(self._fair_ranks) >= _FAIR_RANKS_KEPT:
                self._fair_ranks.clear()
            rank = self._fair_ranks[seen] = admission_rank(
                usage, cq, {(flavor, r): v for r, v in request.items()})
        return rank

    # -- PreFilter --------------------------------------------------------------------------
    def pre_filter(self, state: CycleState, job: Job) -> Status:
        data = self.cycle(state)
        cq = self.config.cluster_queue_of(job.spec.queue)
        if cq is None:
            return self._fail(data, job, Reason.UNKNOWN_QUEUE, repr(job.spec.queue))
        data.assigned.pop(job.job_id, None)
        if data.policy_turn:  # (mostly empty: no call)
            data.policy_turn.pop(job.job_id, None)
        if cq.name in data.blocked:
            return self._fail(data, job, Reason.STRICT_FIFO, data.blocked[cq.name])
        if job.preemptions and self.config.requeue.base_seconds:
            ready = self.config.requeue.ready_at(job.queued_since, job.preemptions)
            if ready > state.now:
                return self._fail(data, job, Reason.BACKOFF, f"until t={ready:g}")
        request = self.request(job)
        if cq.name in data.view.holds:
            # The next job of a queue that held quota: Kueue would look at it in the next
            # cycle, with the held quota free again.
            data.view.release(cq.name)
        usage = data.view.sync()
        memo = self._memo_key(data, job, cq, request)
        failed = data.failed.get(memo) if memo else None
        if failed is not None and failed[0] == data.view.version and _at_least(
                request, failed[1]) and job.spec.submit_time >= failed[2]:
            # Nothing changed since a job of this queue, GPU types, priority and borrowing,
            # submitted no later and asking no more, failed on quota: its candidates were a
            # superset of this job's, and it needed less.
            return self._fail(data, job, failed[3])
        seen: list[Assignment] | None = [] if len(cq.flavors) > 1 else None
        if seen is None:
            same = (cq.name, job.spec.gpu_types, tuple(request.items()), data.view.version)
            assignment = data.assignments.get(same)  # type: ignore[assignment]
            if assignment is None:
                assignment = data.assignments[same] = assign(
                    cq, self.config.flavors, job.spec, request, usage)
        else:
            searched: dict[str, Found | None] = {}
            assignment, seen = self._assign_several(state, data, job, cq, request, usage,
                                                    searched)
        data.options[job.job_id] = seen or [assignment]
        status = SUCCESS
        if assignment.mode is Mode.NO_FIT:
            status = self._fail(data, job, assignment.reason or Reason.NO_QUOTA)
        else:
            data.assigned[job.job_id] = assignment
            if assignment.mode is Mode.PREEMPT:
                data.preempting = True
                status = self._nominate_victims(state, data, job, cq.name, assignment,
                                                searched if seen is not None else {})
                if status.ok:  # victims chosen: the cycle's PostFilter step evicts them
                    return _NEEDS_VICTIMS
                if job.job_id in data.policy_turn:  # the policy's PostFilter may free it
                    return status
        if not status.ok:
            self._refused(state, data, job, cq, request, memo, usage, searched=False)
        return status

    def _refused(self, state: CycleState, data: _Cycle, job: Job, cq: ClusterQueue,
                 request: Mapping[str, float], memo: tuple | None, usage: Usage,
                 searched: bool) -> None:
        """``job`` failed on quota (``searched``: after the wrapped policy's own victim search
        failed too): what it tells about later jobs of its queue in this cycle, the failure
        memo and the closing of the queue (``skip.py``), where they hold under the policy's
        preemption (``_alike_after``)."""
        if memo is None and len(cq.flavors) != 1:  # neither applies to several flavors
            return
        reason = self.pending[job.job_id].reason
        whole = not searched or self._whole(state, job)
        if memo is not None and whole:
            data.failed[memo] = (data.view.version, request, job.spec.submit_time, reason)
        if cq.queueing_strategy is not QueueingStrategy.STRICT_FIFO and whole and closes_queue(
                cq, job, request, reason, data.least.get(cq.name), usage,
                bool(self.evicted_by.get(job.job_id)), self._submission_order) and (
                self._rest_alike(job, cq.name)):
            # (a StrictFIFO queue is closed behind its head in ``on_unschedulable``)
            self._close(state, cq.name, reason, job.job_id)

    def _whole(self, state: CycleState, job: Job) -> bool:
        """Whether a job asking at least ``job``'s GPUs, among fewer victims, fits nowhere
        ``job`` did not: whole GPUs only (no job asks a fraction: a fraction may fit on a GPU
        in use where a whole one does not; no MIG instance)."""
        return not state.snapshot.has_fractional and job.spec.mig_profile is None

    def _rest_alike(self, job: Job, cq: str) -> bool:
        """Under the wrapped policy's own preemption, whether every later job of ``cq`` in
        this cycle has at most ``job``'s victims: the queue orders by priority, then the
        policy's key, and the policy's victims shrink along its key alone (Tiresias: lower
        queues; SRTF: longer remaining times), so only where the rest of the queue has
        ``job``'s priority (a later job of a lower one may rank higher by the key)."""
        if self.policy_victims is None:
            return True
        line = self.lines.lines.get(cq)
        return bool(line) and line[-1].spec.priority == job.spec.priority

    def _close(self, state: CycleState, cq: str, reason: Reason, job_id: str) -> None:
        """Skip the rest of ``cq`` in this cycle (``tenancy/skip.py``)."""
        detail = f"as {job_id}, which asks no more, in this cycle"
        self.pending.blocked.setdefault(cq, (reason, detail))
        self.audit.closed(state.now, cq, reason, detail)
        for name in self.queue_names(cq):
            skip_queue(state, name, f"[{NAME}] {reason.value} ({detail})")

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
        same = (cq.name, tuple(request.items()), data.view.version)
        borrows = data.borrows.get(same)
        if borrows is None:
            borrows = data.borrows[same] = data.view.usage.borrows(cq.name, cq.flavors[0],
                                                                   request)
        return (cq.name, job.spec.gpu_types, job.spec.priority, borrows)

    def _assign_several(self, state: CycleState, data: _Cycle, job: Job, cq: ClusterQueue,
                        request: Mapping[str, float], usage: Usage,
                        searched: dict[str, Found | None]
                        ) -> tuple[Assignment, list[Assignment]]:
        """The flavor assignment of a job in a queue of several flavors, and each flavor's
        option (``seen``): an earlier job's of this cycle where it is sure to be the same
        (``memo.SameAssignment``), else ``assign`` with the preemption oracle."""
        alike = (cq.name, job.spec.gpu_types, job.spec.priority, tuple(request.items()),
                 data.view.version)
        kept = data.several.get(alike)
        if kept is not None and (not kept.keys or not self.evicted_by.get(job.job_id)) and (
                self._covered(data, kept, request, job.spec.submit_time)):
            # every search the oracle would run is a hit of the per-flavor memo: no victims
            searched.update(dict.fromkeys(kept.keys))
            return kept.assignment, list(kept.seen)
        seen: list[Assignment] = []
        told: dict[str, Victims] = {}
        oracle = functools.partial(self._oracle, state, data, job, cq.name, searched)

        def asked(option: Assignment) -> Victims:
            found = told[option.flavor or ""] = oracle(option)
            return found

        assignment = assign(cq, self.config.flavors, job.spec, request, usage, seen, asked)
        if data.view.version == alike[-1] and all(v is Victims.NONE for v in told.values()):
            data.several[alike] = SameAssignment(assignment, tuple(seen), {
                flavor: flavor_key(usage, cq.name, job, request, Assignment(flavor, Mode.PREEMPT,
                                                                            False))
                for flavor in told})
        return assignment, seen

    def _covered(self, data: _Cycle, kept: SameAssignment, request: Mapping[str, float],
                 submitted: float) -> bool:
        """Whether each of ``kept``'s searches is a hit of the per-flavor memo for a job asking
        ``request`` (the kept job's) submitted at ``submitted`` (``still_fails``); a memo entry
        that covered this request before needs only the submission time checked again."""
        searches, version, covered = data.searches, data.view.version, kept.covered
        for key in kept.keys.values():
            failed = searches.get(key)
            if failed is None:
                return False
            if covered.get(key) is failed:
                if submitted < failed.submitted:
                    return False
                continue
            if not still_fails(searches, key, version, request, submitted):
                return False
            covered[key] = failed
        return True

    def _oracle(self, state: CycleState, data: _Cycle, job: Job, cq: str,
                searched: dict[str, Found | None], option: Assignment) -> Victims:
        """Kueue's preemption oracle in flavor assignment (``assignment.py``): whether the
        victim search finds anyone in ``option``'s flavor, and whether in other queues. The
        search is kept in ``searched`` for the flavor the job is then assigned."""
        found = searched[option.flavor or ""] = self._search(state, data, job, cq, option)
        if found is not None and not found.targets and not found.protected:
            self._remember_failure(data, job, cq, option)
        if found is None or not found.targets:
            return Victims.NONE
        return (Victims.RECLAIM if any(t.victim.cq != cq for t in found.targets)
                else Victims.OWN_QUEUE)

    def _search(self, state: CycleState, data: _Cycle, job: Job, cq: str,
                assignment: Assignment) -> Found | None:
        """The victim search for ``job`` in ``assignment``'s flavor (None: the per-flavor memo
        knows it fails)."""
        incoming = self._incoming(state, job, cq, assignment)
        usage, running = data.view.sync(), self._running_for(data, job)
        if not self.evicted_by.get(job.job_id) and len(
                self.config.cluster_queues[cq].flavors) > 1:  # memo.py
            key = flavor_key(usage, cq, job, incoming.request, assignment)
            if still_fails(data.searches, key, data.view.version, incoming.request,
                           job.spec.submit_time):
                return None
        return select_targets(self.config, usage, incoming, running, state.now)

    def _incoming(self, state: CycleState, job: Job, cq: str,
                  assignment: Assignment) -> Admitted:
        return Admitted(job.job_id, cq, assignment.flavor or "", self.request(job),
                        job.spec.priority, state.now, job.spec.submit_time)

    def _running_for(self, data: _Cycle, job: Job) -> Mapping[str, list[Admitted]]:
        """The running jobs by queue, less those that evicted ``job``: dlsched's rule beyond
        Kueue, a job never evicts a job that evicted it. Kueue's rules (reclaim "any", fair
        sharing) allow it once shares have moved; this makes every pair of jobs preempt in
        one direction at most (tests/tenancy/test_no_loops.py)."""
        running = data.view.running()
        evictors = self.evicted_by.get(job.job_id)
        if evictors:  # rebuild only the queues an evictor runs in
            admitted = data.view.admitted
            touched = {admitted[e].cq for e in evictors if e in admitted}
            if touched:
                running = {q: [a for a in jobs if a.job_id not in evictors] if q in touched
                           else jobs for q, jobs in running.items()}
        return running

    def _nominate_victims(self, state: CycleState, data: _Cycle, job: Job, cq: str,
                          assignment: Assignment,
                          searched: Mapping[str, Found | None]) -> Status:
        flavor = assignment.flavor or ""
        victims = (searched[flavor] if flavor in searched
                   else self._search(state, data, job, cq, assignment))
        if victims is None:  # the per-flavor memo's hit
            return self._no_victims(state, data, job, cq, assignment,
                                    assignment.reason or Reason.NEEDS_PREEMPTION,
                                    self.request(job))
        if victims.targets:
            if data.borrowed and self._deferred(state, data, job, cq, victims.targets):
                return self._fail(data, job, Reason.RECLAIM_DEFERRED)
            data.targets[job.job_id] = victims.targets
            if not victims.may_borrow:
                data.no_borrow.add(job.job_id)
            return SUCCESS
        incoming = self._incoming(state, job, cq, assignment)
        usage, running = data.view.sync(), self._running_for(data, job)
        # Minimum runtime is the reason only when the search would succeed without it.
        protected = victims.protected and bool(select_targets(
            self.config, usage, incoming, running, state.now, protect=False).targets)
        if not protected:
            self._remember_failure(data, job, cq, assignment)
        return self._no_victims(state, data, job, cq, assignment, Reason.MIN_RUNTIME
                                if protected else assignment.reason or Reason.NEEDS_PREEMPTION,
                                incoming.request)

    def _no_victims(self, state: CycleState, data: _Cycle, job: Job, cq: str,
                    assignment: Assignment, reason: Reason,
                    request: Mapping[str, float]) -> Status:
        """Kueue's victim search freed no quota for ``job`` (``reason``): it waits, holding
        what its queue may use of its request (``_hold``), unless the wrapped policy's own
        preemption inside the queue may free it (``_policy_turn``)."""
        if self._policy_turn(state, data, job, cq, assignment, request):
            data.bulk = False  # job by job now, as after a failure on quota (``_fail``)
            data.policy_turn[job.job_id] = (reason, assignment, request)
            return Status(Code.UNSCHEDULABLE, reason.value, NAME)
        self._hold(data, cq, assignment, request)
        return self._fail(data, job, reason)

    def _policy_turn(self, state: CycleState, data: _Cycle, job: Job, cq: str,
                     assignment: Assignment, request: Mapping[str, float]) -> bool:
        """Whether the cycle's PostFilter step should run the wrapped policy's preemption for
        a job whose quota is short (``UNSCHEDULABLE``, not ``UNRESOLVABLE``). Its victims are
        of the job's own cluster queue (``profile._Stripped``), so the swap is quota-neutral:
        their quota is freed as they are evicted, and the victim search asks the quota Permit
        after each eviction, so the job starts only where it then fits (its queue's nominal
        quota, borrowing limit and the cohort's unused quota: no more than any job of its
        queue may borrow). Only where Kueue lets the job look for victims at all (``PREEMPT``:
        ``assignment._may_preempt``), the policy may have some (``policy_victims``), and
        evicting every job of the queue would leave enough quota available."""
        if self.policy_victims is None or assignment.flavor is None or (
                not self.policy_victims(state, job)):
            return False
        usage = data.view.usage
        return all(amount <= usage.available(cq, fr) + usage.usage(cq, fr) + EPS
                   for fr, amount in ((( assignment.flavor, r), v) for r, v in request.items()))

    def _deferred(self, state: CycleState, data: _Cycle, job: Job, cq: str,
                  targets: Sequence[Target]) -> bool:
        """Whether ``job``'s reclaim waits for a second cycle at the same time: a job of
        the queue it would take from was admitted in this cycle by borrowing. That job is
        no candidate yet (it starts with the cycle), so the search took the queue's older
        jobs, within its nominal quota, of any priority, and left the borrower running
        (Kueue skips a preemption whose calculation another admission in the cohort
        invalidated, "Workload skipped because its preemption calculations were invalidated
        by another workload", and tries it again in its next cycle, where the borrower is
        the newest candidate). Once per job and time."""
        if not any(t.victim.cq != cq and t.victim.cq in data.borrowed for t in targets):
            return False
        at, jobs = self._deferrals
        if at != state.now:
            jobs = set()
            self._deferrals = (state.now, jobs)
        if job.job_id in jobs:
            return False
        jobs.add(job.job_id)
        data.deferred = True
        return True

    def _remember_failure(self, data: _Cycle, job: Job, cq: str,
                          assignment: Assignment) -> None:
        """A victim search in ``assignment``'s flavor failed, not for minimum runtimes only:
        the per-flavor memo of a queue of several flavors (``memo.py``)."""
        if self.evicted_by.get(job.job_id) or len(self.config.cluster_queues[cq].flavors) < 2:
            return
        request = self.request(job)
        key = flavor_key(data.view.sync(), cq, job, request, assignment)
        data.searches[key] = FailedSearch(data.view.version, request, job.spec.submit_time)

    def _hold(self, data: _Cycle, cq: str, assignment: Assignment,
              request: Mapping[str, float]) -> None:
        """A job that needs preemption but finds no victim keeps, for the rest of the cycle,
        what its queue may still use of its request, unless the queue can always reclaim
        (Kueue ``reserveCapacityForUnreclaimablePreempt``: ``reclaimWithinCohort`` not Any),
        so that later jobs of other queues cannot take the capacity it waits for."""
        queue = self.config.cluster_queues[cq]
        if queue.preemption.reclaim_within_cohort is Reclaim.ANY or assignment.flavor is None:
            return
        usage, tree, flavor = data.view.usage, self.tree, assignment.flavor
        held: dict[str, float] = {}
        for resource, amount in request.items():
            fr = (flavor, resource)
            used, nominal = usage.usage(cq, fr), tree.nominal(cq, fr)
            if assignment.borrows:
                limit = tree.borrowing_limit(cq, fr)
                held[resource] = amount if limit is None else min(amount,
                                                                 nominal + limit - used)
            else:
                held[resource] = max(0.0, min(amount, nominal - used))
        if any(v > 0 for v in held.values()):
            data.view.hold(cq, flavor, held)

    def _fail(self, data: _Cycle, job: Job, reason: Reason, detail: str = "") -> Status:
        data.bulk = False  # a quota failure may close queues or hold quota: job by job now
        self._record(data, job, reason, detail)
        text = f"{reason.value} ({detail})" if detail else reason.value
        return Status(Code.UNRESOLVABLE, text, NAME)

    def _record(self, data: _Cycle, job: Job, reason: Reason, detail: str = "") -> None:
        cq, position = data.positions.get(job.job_id, (self.queue_of(job), 0))
        self.pending[job.job_id] = Pending(job.job_id, cq, reason, position, detail)
        options = data.options.get(job.job_id, ())
        chosen = data.assigned.get(job.job_id)
        reasons = tuple((o.flavor or "", reason if o is chosen or len(options) == 1
                         else o.reason or reason) for o in options) or (("", reason),)
        never = reason in _NEVER and all(
            o.mode is Mode.NO_FIT and o.reason in _NEVER for o in options)
        self.audit.waits(data.view.now, job.job_id, cq, reasons, detail, never, reason)
        if self.by_groups:  # steady: a skipped try would log nothing (groups.py)
            flavor = self._one_flavor.get(cq)
            self.groups.mark(job.job_id, flavor is not None and len(reasons) == 1
                             and reasons[0][0] == flavor and _not_placed(reasons[0][1])
                             and groupable(job.spec) and not (
                                 job.preemptions and self.config.requeue.base_seconds))

    # -- Filter -----------------------------------------------------------------------------
    def filter(self, state: CycleState, job: Job, mask: np.ndarray) -> np.ndarray:
        data = self.cycle(state)
        assignment = data.assigned.get(job.job_id)
        if assignment is None or assignment.flavor is None or (
                assignment.flavor in self.flavor_nodes.everywhere(state.cluster)):
            return mask
        return mask & self.flavor_nodes.masks(state.cluster)[assignment.flavor]

    # -- Permit -----------------------------------------------------------------------------
    def permit(self, state: CycleState, job: Job, gpus: tuple[int, ...]) -> Status:
        data = self.cycle(state)
        assignment = data.assigned.get(job.job_id)
        cq = self.config.cluster_queue_of(job.spec.queue)
        if assignment is None or assignment.flavor is None or cq is None:
            return SUCCESS
        if data.view.sync().fits(cq.name, assignment.flavor, self.request(job),
                                 job.job_id not in data.no_borrow):
            return SUCCESS
        return _QUOTA_SHORT

    # -- PostFilter -------------------------------------------------------------------------
    def post_filter(self, state: CycleState, job: Job) -> Iterable[Job]:
        data = self.cycle(state)
        targets = data.targets.get(job.job_id)
        if not targets:
            return ()
        running = {j.job_id: j for j in state.snapshot.running}
        return [running[t.victim.job_id] for t in targets
                if t.victim.job_id not in state.evicted]

    # -- Reserve, Blocked, Wakeup -----------------------------------------------------------
    def reserve(self, state: CycleState, job: Job, gpus: tuple[int, ...]) -> None:
        data = self.cycle(state)
        self.pending.admit(job.job_id)
        self.lines.left(job.job_id)
        self.ledger.started(job.job_id)
        assignment = data.assigned.get(job.job_id)
        cq = self.config.cluster_queue_of(job.spec.queue)
        if assignment is not None and assignment.flavor is not None and cq is not None:
            data.view.reserve(admitted_of(job, cq.name, assignment.flavor))
            if assignment.borrows:
                data.borrowed.add(cq.name)
            self.ledger.assigned[job.job_id] = assignment.flavor
            self.audit.started(job.job_id, state.now, cq.name, assignment.flavor)
        self._log_evictions(state, data, job, cq.name if cq else self.queue_of(job))

    def _log_evictions(self, state: CycleState, data: _Cycle, job: Job, cq: str) -> None:
        """The jobs evicted for ``job`` (those evicted since the last start of this cycle),
        with Kueue's reason: the tenant layer's, or ``InClusterQueue`` for the wrapped
        policy's own preemption inside the queue."""
        if len(state.evicted) == len(data.seen_evicted):
            return
        whys = {t.victim.job_id: t.why for t in data.targets.get(job.job_id, ())}
        admitted = data.view.admitted
        for victim in [v for v in state.evicted if v not in data.seen_evicted]:
            why = whys.get(victim, Why.IN_CLUSTER_QUEUE)
            if victim in whys:
                self.evicted_by.setdefault(victim, set()).add(job.job_id)
            known = admitted.get(victim)
            self.audit.evicted(state.now, victim, known.cq if known else "",
                               known.flavor if known else "", job.job_id, cq, why.kueue,
                               "tenants" if victim in whys else "policy")
        data.seen_evicted = set(state.evicted)

    def on_unschedulable(self, state: CycleState, job: Job, status: Status) -> None:
        data = self.cycle(state)
        cq = self.config.cluster_queue_of(job.spec.queue)
        turn = data.policy_turn.pop(job.job_id, None) if data.policy_turn else None
        if turn is not None and cq is not None:  # the policy's preemption freed no quota
            reason, assignment, request = turn
            self._hold(data, cq.name, assignment, request)
            self._record(data, job, reason)
            usage = data.view.sync()  # (the search's evictions given back: the memo's key)
            self._refused(state, data, job, cq, request, self._memo_key(data, job, cq, request),
                          usage, searched=True)
        if job.job_id not in self.pending:
            text = str(status)
            plugin = status.plugin  # none: the futility memo's text names the last one's
            held = (plugin in self.policy_plugins if plugin
                    else not_placed(text, self.policy_plugins) is Reason.POLICY_HOLDS)
            self._record(data, job, Reason.POLICY_HOLDS if held else Reason.NO_NODE_FITS, text)
            if self.by_groups and status.plugin == "placement":
                self._missed(state, data, job, str(status))
        if cq is not None and cq.queueing_strategy is QueueingStrategy.STRICT_FIFO and (
                self.pending[job.job_id].reason is not Reason.BACKOFF):
            # A job backing off is not in its queue's heap (Kueue ``ClusterQueue.PushOrUpdate``
            # parks it with the inadmissible ones until ``requeueAt``): it is no head to wait
            # behind.
            head = data.blocked.setdefault(cq.name, job.job_id)
            if cq.name not in self.pending.blocked:  # the rest of the queue waits behind it
                self.pending.blocked[cq.name] = (Reason.STRICT_FIFO, head)
                self.audit.behind(state.now, cq.name, head)
            for name in self.queue_names(cq.name):
                skip_queue(state, name, f"[{NAME}] {Reason.STRICT_FIFO.value} ({head})")

    def quiet(self, state: CycleState) -> bool:
        """Whether this cycle changed nothing and stays so while only time moves, but for
        the wrapped policy's own wake-ups (``steady_when_quiet``).

        A minimum runtime keeps a running job from being a candidate of Kueue's preemption
        only, which serves jobs whose quota does not fit (PREEMPT). The walk gave every job
        whose quota does not fit (it passes over only jobs whose quota fits), none was, and
        the cycle changed nothing (after a cycle that did, the next may: a job tried before a
        start may evict the job started): until a job arrives, starts or stops (each a cycle
        of its own), no protection's end can start or evict anything."""
        data = state.scratch.get(NAME)
        if not (self.steady_when_quiet and state.snapshot.waiting) or data is None:
            return False
        return (data.walked and not data.preempting and not state.started
                and not state.evicted)

    def next_wakeup(self, state: CycleState) -> float | None:
        # One scan per distinct minimum runtime (a wake-up for a job of another queue is
        # early, never late: the cycle then finds nothing to do).
        quiet = self.quiet(state)
        if quiet:  # the next cycle first replays the wake-ups left out (``_replay_quiet``)
            self._quiet_since = state.now
        if self.by_groups and self._min_runtimes and state.snapshot.waiting:
            self.cycle(state)  # the ledger is this cycle's: the running jobs' starts
            ledger, now = self.ledger, state.now
            if quiet:
                times = []
            else:
                times = [ledger.protection_ends(now, runtime) for runtime in self._min_runtimes]
                if state.started:
                    times += [now + runtime for runtime in self._min_runtimes]
        else:
            times = [protection_ends(state, runtime) for runtime in self._min_runtimes]
        if self.config.requeue.base_seconds:
            times += [self.config.requeue.ready_at(j.queued_since, j.preemptions)
                      for j in state.snapshot.waiting if j.preemptions]
        future = [t for t in times if t is not None and t > state.now]
        data = state.scratch.get(NAME)
        if data is not None and data.deferred and self._second_cycle_at != state.now:
            # a reclaim deferred (``_deferred``): a second cycle now, once per time (it asks
            # its own wake-ups; a reclaim deferred in it waits for the next event)
            self._second_cycle_at = state.now
            return state.now
        return min(future) if future else None


def _not_placed(reason: Reason) -> bool:
    """``reason in NOT_PLACED``, without hashing the enum (a Python call) once a failure."""
    return reason is Reason.NO_NODE_FITS or reason is Reason.POLICY_HOLDS


# Reasons that no change of usage lifts: the request exceeds what the queue may ever use (in
# every flavor that serves the job: ``_record``), or the queue is unknown.
_NEVER = frozenset({Reason.NO_QUOTA, Reason.BORROWING_LIMIT, Reason.NO_FLAVOR,
                    Reason.UNKNOWN_QUEUE})


def _of_version(data: _Cycle, name: str) -> dict:
    """The cycle's memo ``name`` (``(usage version, dict)``) for the usage now: a new dict
    once the usage changed since it was filled."""
    data.view.sync()
    version, known = getattr(data, name)
    if version != data.view.version:
        known = {}
        setattr(data, name, (data.view.version, known))
    return known


_UNASKED = object()  # a queue whose victims epoch the cycle has not asked yet
_FAIR_RANKS_KEPT = 1 << 16  # fair-sharing ranks kept at most (``_fair_rank``), then forgotten
_NEEDS_VICTIMS = unschedulable(NAME, Reason.NEEDS_PREEMPTION.value)
_QUOTA_SHORT = unschedulable(NAME, "quota does not fit in the assigned flavor")
