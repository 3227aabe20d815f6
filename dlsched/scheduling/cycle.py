"""One scheduling cycle, in numbered steps (after Kueue's):

1. order the waiting jobs (QueueSort);
2. for each: PreFilter, then place (Filter + Score, gang-whole) and Permit;
3. if it does not fit, or a PreFilter said ``UNSCHEDULABLE`` (``UNRESOLVABLE`` stops here):
   PostFilter nominates victims; evict the fewest that let it fit (placement and Permit), then
   run the PreFilters that failed once more (Kubernetes retries a preemptor from PreFilter);
4. Reserve; under strict FIFO the first job of a queue that does not fit blocks the rest of
   its queue, and any plugin may block a queue for the rest of the cycle (``skip_queue``,
   Kueue's heads of queues);
5. collect the earliest wake-up any plugin asks for.

The cycle reads a ``ClusterSnapshot`` and returns a ``CycleResult``; it never mutates jobs.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from dlsched.scheduling.allocation_cycle import run_allocation_cycle
from dlsched.scheduling.bucket_scan import scan_buckets, scans_by_bucket, stop_reason
from dlsched.scheduling.decisions import CycleResult, Preempt, Start
from dlsched.scheduling.framework import SUCCESS, Code, Status
from dlsched.scheduling.placement import (
    count_fits,
    count_miss,
    filter_nodes,
    gpu_nodes,
    no_room_text,
    place,
    static_shape,
    unconstrained,
)
from dlsched.scheduling.plugin_checks import not_a_status, not_jobs, unorderable_keys
from dlsched.scheduling.plugins.gang import GangPermit
from dlsched.scheduling.profile import Profile
from dlsched.scheduling.state import EPS, ClusterSnapshot, CycleState
from dlsched.workload.job import Job

BLOCKED_QUEUES = "cycle:blocked-queues"


def skip_queue(state: CycleState, queue: str, reason: str) -> None:
    """Ask the cycle to try no more jobs of tenant queue ``queue`` (``JobSpec.queue``) in this
    cycle; ``reason`` becomes theirs. A plugin calls it from any extension point (the tenant
    layer does for a StrictFIFO queue whose head cannot be admitted: Kueue's heads of queues,
    kueue.sigs.k8s.io/docs/concepts/cluster_queue/#queueing-strategy)."""
    state.scratch.setdefault(BLOCKED_QUEUES, {}).setdefault(queue, reason)


def run_cycle(profile: Profile, snapshot: ClusterSnapshot) -> CycleResult:
    if profile.allocators:
        return run_allocation_cycle(profile.allocators[0], snapshot, profile.wakeups)
    if _preempt_lane.ENABLED and (lane := _preempt_lane.lane_of(profile)) is not None:
        decided = lane.decide(snapshot)  # Tiresias on one pool of whole GPUs
        if decided is not None:
            return decided
    state = CycleState.begin(snapshot)
    run = _CycleRun(profile, state)
    bulk: list = []
    stopped = ""
    walk = getattr(profile.queue_sort, "walk_waiting", None)  # a policy's own walk (backfill)
    if profile.strict_fifo and profile.static_order:
        run.heads_of(snapshot.by_queue)
    elif walk is not None and (walked := walk(run)) is not None:
        bulk = walked
    elif snapshot.buckets and scans_by_bucket(profile):
        bulk = [(name, _SMALLER_FAILED_TEXT) for name in scan_buckets(run, snapshot.buckets)]
        stopped = stop_reason(run)
    else:
        # A LazyOrder may also name the jobs a cycle must try (the order less those it can
        # tell will fail: the tenant layer's groups); ``ordered`` stays the whole order.
        tries = getattr(profile.lazy_order, "tries", None)
        run.in_order(tries(state) if tries is not None else ordered_waiting(profile, state))
    wakeups = [w for p in profile.wakeups if (w := p.next_wakeup(state)) is not None]
    return CycleResult(tuple(run.starts), tuple(run.preemptions), run.reasons,
                       min(wakeups) if wakeups else None, run.blocked,
                       bulk_reasons=tuple(bulk), stop_reason=stopped)


class _CycleRun:
    """The decisions of one cycle as they accumulate."""

    def __init__(self, profile: Profile, state: CycleState) -> None:
        self.profile, self.state = profile, state
        self.starts: list[Start] = []
        self.preemptions: list[Preempt] = []
        self.reasons: dict[str, str] = {}
        self.misses: dict[tuple, int] = {}  # shape -> fewest GPUs a job of it failed with
        self.pre_filter_names = frozenset(p.name for p in profile.pre_filters)
        self.placement_failed = False
        # queue -> why the rest of it waits (strict FIFO, or a plugin's ``skip_queue``)
        self.blocked: dict[str, str] = state.scratch.setdefault(BLOCKED_QUEUES, {})

    def in_order(self, order: Iterable[Job]) -> None:
        blocked, consider, misses = self.blocked, self.consider, self.misses
        # A known miss can be told without trying the job (see ``_known_miss``).
        shortcut = (not self.profile.pre_filters and bool(self.profile.post_filters)
                    and not self.profile.dynamic_filters)
        for job in order:
            if blocked and job.spec.queue in blocked:
                continue
            if shortcut and misses and self._known_miss(job):
                continue
            if not consider(job) and self.placement_failed and self._nothing_else_fits(job):
                return

    def _known_miss(self, job: Job) -> bool:
        """Whether a job as large or smaller of the same shape already failed in this cycle;
        if so, record it as failed. What ``consider`` would do, without its other checks: no
        PreFilter runs first, and for a preemptive policy ``_nothing_else_fits`` cannot hold
        (it would have held for the job that failed first: equal shape, evictions clear
        ``misses``)."""
        spec = job.spec
        if spec.num_gpus < self.misses.get(static_shape(self.state, job, self.profile.filters),
                                           1 << 62):
            return False
        self._failed(job, _SMALLER_FAILED)
        return True

    def heads_of(self, queues: Mapping[str, Sequence[Job]]) -> None:
        """Strict FIFO: only each queue's head can start; merge the heads in queue order and
        advance a queue while its head starts (Kueue's "heads of each queue")."""
        sort_key = self.profile.queue_sort.sort_key
        heap = [(sort_key(None, jobs[0]), name, 0) for name, jobs in queues.items() if jobs]
        heapq.heapify(heap)
        blocked = self.blocked
        while heap:
            _, name, index = heapq.heappop(heap)
            jobs = queues[name]
            if name in blocked:
                continue
            if self.consider(jobs[index]) and index + 1 < len(jobs):
                heapq.heappush(heap, (sort_key(None, jobs[index + 1]), name, index + 1))

    def consider(self, job: Job) -> bool:
        status, evicted = _try_job(self.profile, self.state, job, self.misses)
        # Whether it failed to be placed (not on a PreFilter: ``_nothing_else_fits`` reasons
        # about placement only).
        self.placement_failed = not status.ok and status.plugin not in self.pre_filter_names
        if status.ok:
            self.starts.append(Start(job.job_id, self.state.started[job.job_id],
                                     (job.spec.gpu_share,) * job.spec.num_gpus))
            self.preemptions.extend(Preempt(v.job_id, f"preempted by {job.job_id}")
                                    for v in evicted)
            if evicted:
                self.misses.clear()  # evictions may leave spare GPUs a failed shape could use
            return True
        self._failed(job, status)
        return False

    def _failed(self, job: Job, status: Status) -> None:
        self.reasons[job.job_id] = (_SMALLER_FAILED_TEXT if status is _SMALLER_FAILED
                                    else str(status))
        for plugin in self.profile.blocked:
            plugin.on_unschedulable(self.state, job, status)
        if self.profile.strict_fifo:
            self.blocked.setdefault(job.spec.queue, f"waiting behind {job.job_id} (strict FIFO)")

    def _nothing_else_fits(self, failed: Job) -> bool:
        """Whether every later job must fail too: the cluster is full and nothing may be
        evicted; or a job that asks the least possible (one whole GPU on any node) failed,
        no job asks for a fraction, and nothing was evicted in this cycle (later jobs rank
        lower, so their possible victims are a subset of its)."""
        state, profile = self.state, self.profile
        if not profile.post_filters:  # not preemptive
            return (state.free_whole == 0 and float(state.free.max()) <= EPS
                    and not state.mig_open)
        spec = failed.spec
        return (spec.num_gpus == 1 and spec.gpu_share >= 1.0 and not state.evicted
                and not state.snapshot.has_fractional and not profile.dynamic_filters
                and unconstrained(state, failed, profile.filters))


def ordered_waiting(profile: Profile, state: CycleState) -> Iterable[Job]:
    """Waiting jobs in queue order. A static order (FIFO, SJF) arrives sorted from the core; a
    QueueSort with ``ordered(state)`` generates the order itself, lazily (the tenant layer:
    queues the cycle closes are never sorted)."""
    if profile.static_order:
        return state.snapshot.waiting
    if profile.lazy_order is not None:
        return profile.lazy_order.ordered(state)
    sort_key, waiting = profile.queue_sort.sort_key, state.snapshot.waiting
    try:
        return sorted(waiting, key=lambda j: sort_key(state, j))
    except TypeError as error:  # keys that do not compare: name the plugin and two jobs
        unorderable = unorderable_keys(profile.name, profile.queue_sort, state, waiting)
        if unorderable is None:
            raise
        raise unorderable from error


_SMALLER_FAILED = Status(Code.UNSCHEDULABLE, "a job as large or smaller of the same kind did "
                         "not fit in this cycle", "placement")
_SMALLER_FAILED_TEXT = str(_SMALLER_FAILED)
_NO_CHANGE = "no change since it last failed"
_VERSION_SUMS = "futility-versions"  # scratch key: each mask's sum of node versions


def _try_job(profile: Profile, state: CycleState, job: Job,
             misses: dict[tuple, int]) -> tuple[Status, tuple[Job, ...]]:
    for index, plugin in enumerate(profile.pre_filters):
        status = plugin.pre_filter(state, job)
        try:
            ok = status.ok
        except AttributeError:
            raise not_a_status("PreFilter", plugin, status) from None
        if not ok:
            return _after_pre_filter(profile, state, job, index, status)
    spec = job.spec
    if misses:  # the shape is needed only to compare with known misses, or to record one
        shape = _shape(profile, state, job)
        if shape is not None and spec.num_gpus >= misses.get(shape, 1 << 62):
            return _SMALLER_FAILED, ()
    counted = False  # whether the free counts already said the job may fit
    if state.evicted and profile.no_victims is not None:
        missed = _victimless_miss(profile, state, job, misses)
        if missed is _MAY_FIT:
            counted = True
        elif missed is not None:
            return missed, ()
    if (not profile.post_filters and spec.gpu_share >= 1.0 and spec.num_gpus > state.free_whole
            and spec.mig_profile is None):  # a 7g that fits nowhere may drain a GPU
        return Status(Code.UNSCHEDULABLE, no_room_text(spec.num_gpus, state.free_whole, ""),
                      "placement"), ()
    prior = profile.futile.get(job.job_id)
    memo = _futility_key(profile, state, job) if prior is not None else None
    if memo is not None and memo == prior:
        # The reason from last time, as it was (no plugin prefix, so it does not grow).
        own = state.snapshot.own_reason
        reason = (own(job) if own is not None else job.pending_reason) or _NO_CHANGE
        return Status(Code.UNSCHEDULABLE, reason), ()
    status, victims = _attempt(profile, state, job, misses, counted)
    if status.ok:
        profile.futile.pop(job.job_id, None)
    else:
        profile.futile[job.job_id] = memo or _futility_key(profile, state, job)
    return status, victims


_MAY_FIT = Status(Code.SUCCESS, "the free counts do not rule it out")


def _victimless_miss(profile: Profile, state: CycleState, job: Job,
                     misses: dict[tuple, int]) -> Status | None:
    """A job no PostFilter has victims for (``no_victims``) that does not fit by the free
    counts: what ``_attempt`` would answer and leave, without its search (under Tiresias'
    starvation promotion most attempts after an eviction are such: jobs of the last queue).
    Only while jobs are evicted in this cycle, where no futility memo is kept. None: try it
    (``_MAY_FIT``: the counts, asked, did not rule it out)."""
    if profile.victim_miss is not None or not all(
            plugin.no_victims(state, job) for plugin in profile.no_victims):
        return None
    status = count_miss(state, job, profile.filters, profile.scores)
    if status is None:
        return _MAY_FIT
    profile.futile[job.job_id] = None  # ``_futility_key`` while jobs are evicted
    shape = _shape(profile, state, job)
    if shape is not None:
        need = job.spec.num_gpus
        misses[shape] = min(misses.get(shape, need), need)
    return status


def _after_pre_filter(profile: Profile, state: CycleState, job: Job, failed: int,
                      status: Status) -> tuple[Status, tuple[Job, ...]]:
    """PreFilter number ``failed`` said no. ``UNRESOLVABLE``: nothing can help.
    ``UNSCHEDULABLE``: PostFilter may nominate victims (Kubernetes scheduling framework:
    PostFilter runs when PreFilter or Filter finds the pod unschedulable); the victim search
    asks placement and Permit, and after the evictions that PreFilter and the ones after it
    (not run yet) must pass before the job is placed."""
    if status.code is not Code.UNSCHEDULABLE:
        return status, ()
    for plugin in profile.post_filters:
        victims = _fewest_victims(profile, state, job, plugin.post_filter(state, job), None,
                                  plugin)
        if not victims:
            continue
        again = next((s for p in profile.pre_filters[failed:]
                      if not (s := p.pre_filter(state, job)).ok), SUCCESS)
        placed = _place(profile, state, job) if again.ok else again
        if placed.ok:
            return placed, victims
        _restore(state, list(victims))
        return placed, ()
    return status, ()


def _futility_key(profile: Profile, state: CycleState, job: Job) -> tuple | None:
    """What a failed attempt depended on: the starts and stops on the job's nodes and, for a
    preemptive policy, the ranks that decide victims there. While it is unchanged (and nothing
    was evicted in this cycle) the attempt would fail again, so it is skipped. None: nothing
    to memoise, always retry (also when the policy's ``rank_epoch`` says None: its ranks or its
    victims' protection change with time alone)."""
    if state.evicted:
        return None
    ranks = profile.rank_epoch
    if profile.preemptive and ranks is None:
        return None  # ranks may change continuously (SRTF): always retry
    mask, status = filter_nodes(state, job, profile.filters)
    if not status.ok:
        return None
    if not profile.preemptive:
        return (_version_sum(state, mask), None)
    epoch = ranks.rank_epoch(state, job, mask)
    return None if epoch is None else (_version_sum(state, mask), epoch)


def _version_sum(state: CycleState, mask: np.ndarray) -> int:
    """Starts and stops so far on the nodes of ``mask``. Node versions are fixed for the
    cycle and masks are mostly the same cached arrays, so each mask's sum is kept."""
    sums = state.scratch.setdefault(_VERSION_SUMS, {})
    cached = sums.get(id(mask))
    if cached is None or cached[0] is not mask:
        cached = sums[id(mask)] = (mask, int(state.snapshot.node_version[mask].sum()))
    return cached[1]


def _attempt(profile: Profile, state: CycleState, job: Job, misses: dict[tuple, int],
             counted: bool = False) -> tuple[Status, tuple[Job, ...]]:
    # A preemptive policy tries jobs on a full cluster: most attempts fail by the free counts
    # (``counted``: they were asked already and did not rule the job out).
    status = (count_miss(state, job, profile.filters, profile.scores)
              if profile.post_filters and not counted else None)
    if status is None:
        status = _place(profile, state, job)
    if status.ok:
        return status, ()
    scope = _victim_scope(profile, state, job)
    if scope is not None and job.spec.num_gpus >= misses.get(scope, 1 << 62):
        # A job of its scope and shape asking no more GPUs, ranked before it (so with its
        # victims among that job's), found no victims since the last eviction: neither does
        # this one. Its own placement's status, as the search would have left it.
        return status, ()
    held: list[int] = []  # each failed search's candidate GPUs, when room was its failure
    for plugin in profile.post_filters:
        victims = _fewest_victims(profile, state, job, plugin.post_filter(state, job), held,
                                  plugin)
        if victims:
            return _place(profile, state, job), victims
    # A later job of this kind ranks lower and asks at least as much: it cannot fit either.
    need = job.spec.num_gpus
    shape = _shape(profile, state, job)
    if shape is not None:
        misses[shape] = min(misses.get(shape, need), need)
    if scope is not None:
        misses[scope] = min(misses.get(scope, need), need)
    if profile.victim_miss is not None:
        # With at most this many GPUs wholly free, no search can make room (while no job
        # starts among its candidates, they only shrink).
        short = need - 1 - max(held, default=0) if len(held) == len(profile.post_filters) else None
        profile.victim_miss.victims_short(state, job, short)
    return status, ()


def _victim_scope(profile: Profile, state: CycleState, job: Job) -> tuple | None:
    """The key of failed victim searches that tell about ``job``'s (the QueueSort's
    ``victim_miss_scope`` and the job's static shape), or None."""
    hook = profile.victim_miss
    if hook is None:
        return None
    scope = hook.victim_miss_scope(state, job)
    if scope is None:
        return None
    return ("victims", scope, static_shape(state, job, profile.filters))


def _place(profile: Profile, state: CycleState, job: Job) -> Status:
    gpus, status = place(state, job, profile.filters, profile.scores, profile.take_limit)
    if not status.ok:
        return status
    permitted = _permit(profile, state, job, gpus)
    if not permitted.ok:
        state.give_back(gpus, [job.spec.gpu_share] * len(gpus), job.spec)
        return permitted
    state.started[job.job_id] = gpus
    for plugin in profile.reserves:
        plugin.reserve(state, job, gpus)
    return SUCCESS


def _fits(profile: Profile, state: CycleState, job: Job) -> bool:
    """Would the job fit now, on nodes and by every Permit (gang, tenant quota)? Places it
    tentatively and gives the GPUs back. Told from the free counts when they settle it (the
    victim search asks after each eviction and for each victim it gives back) and no Permit
    but the gang's (which every whole placement passes) could refuse."""
    counted = count_fits(state, job, profile.filters, profile.take_limit)
    if counted is not None and (not counted or all(
            type(plugin) is GangPermit for plugin in profile.permits)):
        return counted
    gpus, status = place(state, job, profile.filters, profile.scores, profile.take_limit)
    if not status.ok:
        return False
    permitted = _permit(profile, state, job, gpus).ok
    state.give_back(gpus, [job.spec.gpu_share] * len(gpus), job.spec)
    return permitted


def _permit(profile: Profile, state: CycleState, job: Job, gpus: tuple[int, ...]) -> Status:
    """The first Permit that refuses the GPUs, or SUCCESS."""
    for plugin in profile.permits:
        permitted = plugin.permit(state, job, gpus)
        try:
            if not permitted.ok:
                return permitted
        except AttributeError:
            raise not_a_status("Permit", plugin, permitted) from None
    return SUCCESS


def _fewest_victims(profile: Profile, state: CycleState, job: Job,
                    candidates: Iterable[Job], held: list[int] | None = None,
                    plugin: Any = None) -> tuple[Job, ...]:
    """Evict candidates in order until the job fits, then give back every victim it does not
    need, the most important first (Kueue's "remove greedily, then give back"). Candidates are
    read lazily: only as many as could make room are pulled. ``held``: where a search that
    fails because even every candidate leaves too little room adds their GPUs (on usable
    nodes)."""
    if isinstance(candidates, tuple | list) and not candidates:
        if held is not None:
            held.append(0)
        return ()  # none given (the tenant layer's, for a job whose quota fits): no mask to make
    mask, status = filter_nodes(state, job, profile.filters)
    if not status.ok:
        return ()
    # Every node usable (one pool, no dynamic filter): the room is the wholly free count.
    everywhere = (not profile.dynamic_filters and job.spec.gpu_share >= 1.0
                  and unconstrained(state, job, profile.filters))
    try:
        pool = _enough_room(state, job, mask, iter(candidates), everywhere, held)
    except (AttributeError, TypeError) as error:
        raise not_jobs(plugin, candidates if isinstance(candidates, list | tuple) else None,
                       error) from error
    if pool is None:
        return ()
    evicted: list[Job] = []
    need = job.spec.num_gpus
    for victim in pool:
        try:
            state.evict(victim)
        except (AttributeError, TypeError) as error:
            raise not_jobs(plugin, (victim,), error) from error
        evicted.append(victim)
        room = state.free_whole if everywhere else _room(state, job, mask)
        if room >= need and _fits(profile, state, job):
            break
    else:
        _restore(state, evicted)
        return ()
    for victim in list(reversed(evicted[:-1])):
        _restore(state, [victim])
        if not _fits(profile, state, job):
            state.evict(victim)
        else:
            evicted.remove(victim)
    return tuple(evicted)


def _enough_room(state: CycleState, job: Job, mask: np.ndarray,
                 candidates: Iterator[Job], everywhere: bool = False,
                 held: list[int] | None = None) -> Iterable[Job] | None:
    """The candidates to try, or None when even evicting all of them cannot free enough GPUs
    on usable nodes (an upper bound that reads candidates only until it is reached; ``held``
    then gets how many GPUs on usable nodes they hold). ``everywhere``: every node is usable
    (whole GPUs)."""
    pulled: list[Job] = []
    if job.spec.gpu_share < 1.0:  # a freed GPU may host several fractional workers
        return candidates
    if everywhere:
        need = short = job.spec.num_gpus - state.free_whole
        for victim in candidates:
            if need <= 0:
                return itertools.chain(pulled, [victim], candidates)
            pulled.append(victim)
            need -= len(victim.allocation)
    else:
        need = short = job.spec.num_gpus - _room(state, job, mask)
        gpu_node, usable = gpu_nodes(state.cluster), mask.tolist()  # lists: faster to index
        for victim in candidates:
            if need <= 0:
                return itertools.chain(pulled, [victim], candidates)
            pulled.append(victim)
            for gpu in victim.allocation:
                if usable[gpu_node[gpu]]:
                    need -= 1
    if need <= 0:
        return pulled
    if held is not None:
        held.append(short - need)
    return None


def _room(state: CycleState, job: Job, mask: np.ndarray) -> int:
    return int(state.capacity(job.spec.gpu_share)[mask].sum())


def _restore(state: CycleState, victims: list[Job]) -> None:
    for victim in victims:
        state.take(victim.allocation, victim.spec.gpu_share, victim.spec)
        del state.evicted[victim.job_id]


def _shape(profile: Profile, state: CycleState, job: Job) -> tuple | None:
    """What, besides the GPU count, decides whether a job fits: its GPU share and the nodes
    its static filters allow. None when a dynamic filter may narrow them job by job."""
    if profile.dynamic_filters:
        return None
    return static_shape(state, job, profile.filters)


# Last: the lane reads this module's memo helpers.
from dlsched.scheduling import preempt_lane as _preempt_lane  # noqa: E402
