"""The tenant layer's walk over waiting jobs by groups of alike jobs (issue 14).

On a contended pool every waiting job of a BestEffortFIFO queue is tried every cycle, and
nearly every try ends "quota reserved but no node fits the gang": the cycle's cost grew with the
waiting jobs. Here, per cluster queue, the waiting jobs are grouped by what decides alike
whether they fit (GPU count, the spec fields the static filters read, the request: one flavor
assignment), each group sorted like its line. The cycle merges the groups' next jobs by the
admission key (``ordering.admission_key``: the order of ``TenantAdmission.ordered``) and drops
a group at its next job once that job is a known miss, as the core's ``bucket_scan`` does:

- known miss: the group asks for more GPUs than are wholly free in the cluster (what
  ``placement.count_miss`` tells a preemptive profile's try from the counts), or a job of the
  same shape and flavor asking no more GPUs failed placement in this cycle since the last
  eviction (free GPUs only shrink between evictions; an eviction clears the misses but those
  that failed for room while no more GPUs are wholly free than they could bear); and the
  group's request still fits its queue's quota in its one flavor (so its jobs would pass
  PreFilter and fail placement);
- under a policy that preempts inside each queue (SRTF, EDF, Tiresias: ``preemptive``), more
  GPUs than are free is no miss (victims may make room): a miss is a job of the same queue,
  priority, shape and flavor asking no more GPUs that failed placement *and* its victim search
  since the last eviction. A later member ranks no higher by the policy's key, so its victims
  are among that job's (``TenantAdmission.victim_miss_scope``; groups are split by priority,
  since a queue orders by priority first and the policy's victims by its key alone); such a
  miss is carried to later cycles (``TenantAdmission.carried_miss``): for the whole group
  while no job stopped, and after stops, when the search failed for room, from the failed
  job on while no more GPUs are free than it could bear (checked at the group's turn when
  more are free as the walk starts: ``Carried.lazy``); one miss is kept per GPU count;
- once backfill's reservation refuses (``walk_refusal``: more GPUs than its extra ones and an
  end past its shadow time, for the rest of the cycle), a group is dropped at a steady job so
  refused, its quota fitting, up to its next steady job that the reservation passes;
- what a skipped try would have done: record "quota reserved but no node fits the gang", or
  for a job that the refusal in force refuses (a PreFilter: met before placement) "the
  scheduling policy holds it back" (the pending book answers those jobs lazily:
  ``PendingBook.bulk``, ``_told``; a group dropped by a miss comes back when the refusal
  shrinks below its size, ``_refusal_shrank``) and log the job's reasons in the audit when
  they changed (the two are one kind there: ``reasons.NOT_PLACED``). A job whose last
  logged reasons are that kind ("steady") logs nothing, so only steady jobs are skipped;
  the others (new arrivals, jobs whose reasons changed, jobs that may be backing off) are
  still visited one by one at their turn;
- a dropped group comes back from the walk's position (its jobs visited again) when its quota
  no longer fits after a start, after an eviction, or when any PreFilter fails (a quota
  failure may close queues or hold quota: the walk is then job by job for the rest of the
  cycle).

Not skipped: queues of several flavors, StrictFIFO queues, jobs asking for shares, MIG slices,
tensor-parallel groups, elastic sizes or more than GPUs. The walk is used only where nothing
else decides per job (``with_tenants`` sets ``TenantAdmission.by_groups``: a static inner order,
the tenant layer the only PreFilter and failure plugin besides those that gate the walk
(``walk_ready``: backfill's reservation, after which it only refuses), no PostFilter but
its own and the wrapped policy's kept per cluster queue, static filters besides its own,
Kueue's admission order). The core's own reason text of a skipped job stays the one of its
last try.
"""

from __future__ import annotations

import bisect
import heapq
import itertools
from collections.abc import Callable, Hashable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from dlsched.scheduling.placement import no_room_text
from dlsched.workload.job import Job, JobSpec

# Heap entry modes: a group's next job with a partial key (its position only), with its full
# key, and a dropped group's next job that is not steady.
_PARTIAL, _FULL, _FRESH = 0, 1, 2


def groupable(spec: JobSpec) -> bool:
    """Whether a job's placement is monotone in its GPU count among jobs of its shape."""
    return (spec.gpu_share >= 1.0 and spec.mig_profile is None and spec.tensor_parallel == 1
            and not spec.asks_beyond_gpus and spec.min_gpus is None and spec.max_gpus is None)


def shape_of(spec: JobSpec) -> Hashable:
    """The spec fields, besides the GPU count, that the static filters read."""
    return (spec.gpu_share, spec.gpu_types, spec.pool, spec.model, spec.batch_size)


class Refusal(NamedTuple):
    """What a PreFilter refuses for the rest of a cycle (backfill's reservation,
    ``walk_refusal``): a job asking more than ``gpus`` GPUs that does not ``pass_``.
    ``order`` (optional): a value of a waiting job, fixed while it waits, by which ``pass_``
    is monotone (a job whose value is at least that of a job refused is refused too: backfill's
    oracle remaining seconds)."""

    gpus: int
    pass_: Callable[[Job], bool]
    text: str
    order: Callable[[Job], float] | None = None


class KeptMiss(NamedTuple):
    """A failed placement and victim search kept for later cycles (``Groups.carry``), with
    the ledger's counts at the start of the cycle it was made in."""

    gpus: int  # the failed job's GPUs
    detail: str
    stops: int  # jobs stopped anywhere
    starts: int  # jobs started in its queue
    epoch: tuple  # the wrapped policies' victims epoch
    most: int | None  # the most GPUs that may be wholly free for it to fail again
    entry: Any  # the failed job's line entry


class Carried(NamedTuple):
    """A failed placement and victim search of an earlier cycle that tells about a group now
    (``TenantAdmission.carried_miss``)."""

    detail: str
    whole: bool  # it tells about every job of the group (no job stopped since)
    most: int | None  # with at most this many GPUs wholly free it tells from ``entry`` on
    entry: Any  # the failed job's line entry
    # more GPUs than ``most`` are wholly free as the walk starts: it tells from ``entry`` on
    # only if the starts before the group's turn leave no more than ``most`` (``_miss``)
    lazy: bool = False


@dataclass(eq=False)
class Group:
    cq: str
    num_gpus: int
    shape: Hashable
    gpu_types: tuple[str, ...]
    request: Mapping[str, float]
    priority: int | None = None  # the members' priority, when groups split by it
    key: Hashable = None  # its key in ``Groups.groups``
    carry_key: Hashable = None  # its key in ``Groups.carry`` (set when first asked)
    entries: list[Any] = field(default_factory=list)  # members' line entries, sorted
    jobs: list[Job] = field(default_factory=list)
    fresh: list[Any] = field(default_factory=list)  # entries of the members not steady
    fresh_jobs: list[Job] = field(default_factory=list)
    gen: int = 0  # bumped when the group is dropped or comes back: older heap entries lapse
    # The steady member of least ``Refusal.order`` (``Groups.least``): valid while ``low_ok``;
    # members marked steady since it was found wait in ``low_new``.
    low: tuple[float, Job] | None = None
    low_ok: bool = False
    low_new: list[Job] = field(default_factory=list)


class Groups:
    """Per cluster queue, the waiting jobs by group (``WaitingLines.on_join/on_leave``), and
    which members are steady (marked from each try's record, applied before the next walk).
    Per queue, the groups by GPU count (``sizes`` sorted), those with members not steady, and
    the most any group asks of each resource."""

    def __init__(self, request: Callable[[Job], Mapping[str, float]]) -> None:
        self.request = request
        # Groups split by priority too (a preemptive walk: a failed victim search tells only
        # about later jobs of its priority, ``TenantAdmission.victim_miss_scope``).
        self.by_priority = False
        # miss key -> per GPU count, a failed victim search kept across cycles
        # (``TenantAdmission.carried_miss``): a miss of more GPUs does not replace one of
        # fewer, which still tells about the groups between
        self.carry: dict[Hashable, dict[int, KeptMiss]] = {}
        self.groups: dict[Hashable, Group] = {}
        self.group_of: dict[str, Group] = {}
        self.steady: set[str] = set()
        self.sizes: dict[str, list[int]] = {}
        self.by_size: dict[str, dict[int, list[Group]]] = {}
        self.with_fresh: dict[str, dict[Group, None]] = {}
        self.typed: dict[str, int] = {}  # queue -> its groups that name GPU types
        self._most: dict[str, dict[str, float]] = {}
        self._marks: dict[str, bool] = {}

    def join(self, job: Job, cq: str, entry: Any) -> None:
        spec = job.spec
        asked = self.request(job)
        priority = spec.priority if self.by_priority else None
        key = (cq, spec.num_gpus, shape_of(spec), tuple(asked.items()), priority)
        group = self.groups.get(key)
        if group is None:
            group = self.groups[key] = Group(cq, spec.num_gpus, shape_of(spec), spec.gpu_types,
                                             asked, priority, key)
            self._file(group)
        _insert(group.entries, group.jobs, entry, job)
        _insert(group.fresh, group.fresh_jobs, entry, job)
        self.with_fresh.setdefault(cq, {})[group] = None
        self.group_of[job.job_id] = group

    def leave(self, job: Job, cq: str, entry: Any) -> None:
        group = self.group_of.pop(job.job_id)
        _remove(group.entries, group.jobs, entry, job)
        if job.job_id in self.steady:
            self.steady.discard(job.job_id)
            _unsteady(group, job)
        else:
            _remove(group.fresh, group.fresh_jobs, entry, job)
            self._fresh_left(group)
        if not group.jobs:
            del self.groups[group.key]
            self._unfile(group)

    def _file(self, group: Group) -> None:
        cq, size = group.cq, group.num_gpus
        by_size = self.by_size.setdefault(cq, {})
        if size not in by_size:
            bisect.insort(self.sizes.setdefault(cq, []), size)
        by_size.setdefault(size, []).append(group)
        if group.gpu_types:
            self.typed[cq] = self.typed.get(cq, 0) + 1
        self._most.pop(cq, None)

    def _unfile(self, group: Group) -> None:
        cq, size = group.cq, group.num_gpus
        by_size = self.by_size[cq]
        by_size[size].remove(group)
        if not by_size[size]:
            del by_size[size]
            sizes = self.sizes[cq]
            del sizes[bisect.bisect_left(sizes, size)]
            if not sizes:
                del self.sizes[cq], self.by_size[cq]
        if group.gpu_types:
            self.typed[cq] -= 1
        self._most.pop(cq, None)

    def _fresh_left(self, group: Group) -> None:
        if not group.fresh:
            fresh = self.with_fresh.get(group.cq)
            if fresh is not None:
                fresh.pop(group, None)

    def most(self, cq: str) -> Mapping[str, float]:
        """The most any group of ``cq`` asks of each resource."""
        found = self._most.get(cq)
        if found is None:
            found = {}
            for groups in self.by_size.get(cq, {}).values():
                for group in groups:
                    for resource, amount in group.request.items():
                        found[resource] = max(found.get(resource, 0.0), amount)
            self._most[cq] = found
        return found

    def of_queue(self, cq: str, above: int = -1) -> Iterator[Group]:
        """The groups of ``cq`` asking more than ``above`` GPUs, by size."""
        sizes = self.sizes.get(cq, ())
        for size in sizes[bisect.bisect_right(sizes, above):]:
            yield from self.by_size[cq][size]

    def mark(self, job_id: str, steady: bool) -> None:
        """``job_id``'s try left it steady or not (applied by ``settle``)."""
        self._marks[job_id] = steady

    def settle(self, entries: Mapping[str, Any]) -> None:
        """Apply the marks of the last cycle's tries (between walks: indexes stay valid)."""
        marks, self._marks = self._marks, {}
        for job_id, steady in marks.items():
            group = self.group_of.get(job_id)
            if group is None or steady == (job_id in self.steady):
                continue
            entry = entries[job_id]
            at = bisect.bisect_left(group.entries, entry)
            job = group.jobs[at]
            if steady:
                self.steady.add(job_id)
                _remove(group.fresh, group.fresh_jobs, entry, job)
                self._fresh_left(group)
                if group.low_ok:
                    group.low_new.append(job)
            else:
                self.steady.discard(job_id)
                _unsteady(group, job)
                _insert(group.fresh, group.fresh_jobs, entry, job)
                self.with_fresh.setdefault(group.cq, {})[group] = None


    def least(self, group: Group, order: Callable[[Job], float]) -> Job | None:
        """The steady member of ``group`` of least ``order`` (None: no steady member), kept
        across cycles: found again only after that member leaves or stops being steady."""
        if not group.low_ok:
            steady, low = self.steady, None
            for job in group.jobs:
                if job.job_id in steady:
                    value = order(job)
                    if low is None or value < low[0]:
                        low = (value, job)
            group.low, group.low_ok, group.low_new = low, True, []
        elif group.low_new:
            low = group.low
            for job in group.low_new:
                value = order(job)
                if low is None or value < low[0]:
                    low = (value, job)
            group.low, group.low_new = low, []
        return None if group.low is None else group.low[1]


def _unsteady(group: Group, job: Job) -> None:
    """A steady member left or is no longer steady: the least one is found again if it was."""
    if group.low_ok and (group.low is None or group.low[1] is job
                         or any(new is job for new in group.low_new)):
        group.low_ok, group.low, group.low_new = False, None, []


def _insert(keys: list[Any], jobs: list[Job], entry: Any, job: Job) -> None:
    at = bisect.bisect_right(keys, entry)
    keys.insert(at, entry)
    jobs.insert(at, job)


def _remove(keys: list[Any], jobs: list[Job], entry: Any, job: Job) -> None:
    at = bisect.bisect_left(keys, entry)
    while jobs[at] is not job:
        at += 1
    del keys[at], jobs[at]


class GroupWalk:
    """One cycle's walk (module docstring). ``key(group, entry, job)``: a member's admission
    key; ``droppable(group)``: whether the group may be skipped now (its queue takes part,
    its quota fits); ``fits_queue(cq)``: the same for every group of queue ``cq`` at once
    (its one flavor has room for the most any group asks); ``closed(cq)``: the cycle closed
    the queue; ``status()``: (bulk still on, how many jobs were evicted, the quota version)
    after each try; ``free()``: the GPUs wholly free now; ``misses``: the known misses, which
    hold until the next eviction (it clears them); ``carried(group)``: the detail of a miss
    from an earlier cycle that still tells about the group's jobs (preemptive), or None.

    At the start every group of a queue that fits and asks for more GPUs than are wholly free
    is cold: dropped from its first job without a heap entry (on a full cluster, nearly all);
    so is, under a preemptive policy, a group with a carried miss (``cold_start`` False: no
    group starts cold by the free count: a preemptive policy, or a plugin whose ``walk_ready``
    the walk waits for); only the groups that may
    fit and the cold groups' jobs that are not steady are merged. Cold groups come back as
    dropped ones do (an eviction, a failed PreFilter, quota that no longer fits)."""

    def __init__(self, groups: Groups, key: Callable[[Group, Any, Job], tuple],
                 position: Callable[[Group, Any], int],
                 droppable: Callable[[Group], bool], fits_queue: Callable[[str], bool],
                 closed: Callable[[str], bool],
                 status: Callable[[], tuple[bool, int, int]],
                 misses: dict[Hashable, tuple[int, str, int | None]],
                 flavor_of: Callable[[Group], str | None], free: Callable[[], int],
                 preemptive: bool = False,
                 carried: Callable[[Group], Carried | None] | None = None,
                 cold_start: bool = True,
                 refusal: Callable[[], Refusal | None] | None = None) -> None:
        self.groups, self.key, self.position, self.free = groups, key, position, free
        self.preemptive = preemptive
        self.cold_start = cold_start and not preemptive
        self.droppable, self.fits_queue = droppable, fits_queue
        self.closed, self.status = closed, status
        self.misses, self.flavor_of = misses, flavor_of
        # group -> [first skipped index, first index after the skipped ones or None, detail,
        # the refusal in force when a miss dropped it (``_told``) or None]
        self.skipped: dict[Group, list[list[Any]]] = {}
        self.dropped: dict[Group, None] = {}
        self.cold: dict[str, int] = {}  # queue -> its groups above this many GPUs are cold
        self.warmed: set[Group] = set()  # cold groups brought back
        self.carried = carried
        self.refusal = refusal
        self._run_end: dict[Group, int] = {}  # a group dropped for refusals -> where they end
        self.carried_cold: dict[Group, Carried] = {}  # cold by a carried miss -> the miss
        # a carried miss that tells from a member on -> (its index, the detail, the most GPUs
        # that may be wholly free for it to tell: at the member's turn, ``_miss``)
        self.carried_from: dict[Group, tuple[int, str, int]] = {}
        self._heap: list[tuple] = []
        self._count = itertools.count()
        self._frontier: tuple = ()
        self._version = -1
        self._evictions = 0
        # groups a miss dropped while the refusal passed their size -> None, and the quota
        # version they were last checked at (``_refusal_shrank``)
        self._passing: dict[Group, None] = {}
        self._passing_version = -1
        self._version_seen = -1  # the quota version after the last try
        self._refusal_at: tuple[int, Refusal | None] | None = None  # (version, refusal)

    def release(self) -> None:
        """Forget what reads the cycle (its state): only ``skipped_at`` is asked after it."""
        self.key = self.position = self.droppable = self.closed = None  # type: ignore[assignment]
        self.status = self.free = self.fits_queue = None  # type: ignore[assignment]
        self.carried = self.refusal = None
        self._heap = []
        self.dropped, self._passing = {}, {}

    def _is_cold(self, group: Group) -> bool:
        free = self.cold.get(group.cq)
        return free is not None and group.num_gpus > free and group not in self.warmed

    def skipped_at(self, job_id: str, entry: Any) -> str | None:
        """The detail of the miss that skipped ``job_id`` in this cycle, or None."""
        group = self.groups.group_of.get(job_id)
        if group is None or job_id not in self.groups.steady:
            return None
        carried = self.carried_cold.get(group)
        if carried is not None:
            return carried.detail
        if self._is_cold(group):
            return _no_room(group, self.cold[group.cq])
        ranges = self.skipped.get(group)
        if not ranges:
            return None
        at = bisect.bisect_left(group.entries, entry)
        for low, high, detail, refusal in ranges:
            if low <= at and (high is None or at < high):
                return _told(group, group.jobs[at], detail, refusal)
        return None

    def _start(self) -> None:
        heap, count, groups = self._heap, self._count, self.groups
        free = self.free()
        for cq, sizes in groups.sizes.items():
            by_size = groups.by_size[cq]
            if not self.cold_start or groups.typed.get(cq) or not self.fits_queue(cq):
                warm = sizes
            else:
                self.cold[cq] = free
                warm = sizes[:bisect.bisect_right(sizes, free)]
                for group in groups.with_fresh.get(cq, ()):
                    if group.num_gpus > free:
                        self._push_fresh(group, 0)
            carried = self.carried if self.preemptive else None
            for size in warm:
                for group in by_size[size]:
                    if carried is not None and (found := carried(group)) is not None:
                        at = 0 if found.whole else bisect.bisect_left(group.entries,
                                                                      found.entry)
                        if at or found.lazy:  # from the failed job on, by the room bound
                            assert found.most is not None
                            self.carried_from[group] = (at, found.detail, found.most)
                        else:
                            self.carried_cold[group] = found
                            if group.fresh:
                                self._push_fresh(group, 0)
                            continue
                    heap.append(((self.position(group, group.entries[0]),), next(count),
                                 _PARTIAL, 0, group.gen, group))
        heapq.heapify(heap)

    def __iter__(self) -> Iterator[Job]:
        self._start()
        heap, count = self._heap, self._count
        while heap:
            key, _, mode, index, gen, group = heapq.heappop(heap)
            if gen != group.gen:
                continue
            if mode == _FRESH:
                job = group.fresh_jobs[index]
            else:
                if self._run_end.get(group) == index:  # the end of a run of refusals
                    gen = self._end_run(group, index)
                if self.closed(group.cq):
                    group.gen += 1
                    continue
                entry = group.entries[index]
                miss = self._miss(group, index)
                if miss is not None and self.droppable(group):
                    self._drop(group, index, miss)
                    if self.refusal is not None:  # what a try would meet first (``_told``)
                        known = self._refusal_at  # ``_refusal_now``, its call saved
                        refusal = self.skipped[group][-1][3] = (
                            known[1] if known is not None and known[0] == self._version_seen
                            else self._refusal_now())
                        if refusal is not None and group.num_gpus <= refusal.gpus:
                            self._passing[group] = None
                    continue
                job = group.jobs[index]
                if mode == _PARTIAL:
                    heapq.heappush(heap, (self.key(group, entry, job), next(count), _FULL,
                                          index, gen, group))
                    continue
                if self._refuse(group, index, job):
                    self._frontier = key
                    continue
            yield job
            self._frontier = key
            self._catch_up()
            if gen == group.gen:
                if mode == _FRESH:
                    if index + 1 < len(group.fresh):
                        self._push_fresh(group, index + 1)
                elif index + 1 < len(group.entries):
                    heapq.heappush(heap, ((self.position(group, group.entries[index + 1]),),
                                          next(count), _PARTIAL, index + 1, gen, group))

    def _refuse(self, group: Group, index: int, job: Job) -> bool:
        """Pass over a steady job that a PreFilter refuses at its turn (``refusal``), its
        quota fitting (so only that PreFilter fails: the try would log nothing new), and the
        steady jobs after it in the group that it refuses too: the group is dropped up to the
        next steady job it would pass (its jobs that are not steady are visited meanwhile, as
        in any dropped group). A refusal holds for the rest of the cycle; the drop ends early,
        as any does, when the quota may no longer fit (``_catch_up``)."""
        if self.refusal is None or job.job_id not in self.groups.steady:
            return False
        refusal = self.refusal()
        if (refusal is None or group.num_gpus <= refusal.gpus or refusal.pass_(job)
                or not self.droppable(group)):
            return False
        steady, jobs, passes = self.groups.steady, group.jobs, refusal.pass_
        end = index + 1
        if refusal.order is not None:  # the least steady member refused: every one is
            least = self.groups.least(group, refusal.order)
            if least is None or not passes(least):
                end = len(jobs)
        while end < len(jobs) and (jobs[end].job_id not in steady or not passes(jobs[end])):
            end += 1
        self._drop(group, index, refusal.text)
        if end < len(jobs):
            self._run_end[group] = end
            heapq.heappush(self._heap, ((self.position(group, group.entries[end]),),
                                        next(self._count), _PARTIAL, end, group.gen, group))
        return True

    def _end_run(self, group: Group, index: int) -> int:
        """The walk reached the job that ends a run of refusals: the group is visited again
        from it, every later job on its own entries (the drop's entries for the jobs that are
        not steady lapse)."""
        del self._run_end[group], self.dropped[group]
        self.skipped[group][-1][1] = index
        group.gen += 1
        return group.gen

    def _push_fresh(self, group: Group, at: int) -> None:
        heapq.heappush(self._heap, (self.key(group, group.fresh[at], group.fresh_jobs[at]),
                                    next(self._count), _FRESH, at, group.gen, group))

    def _miss(self, group: Group, index: int) -> str | None:
        """Why the group's job at ``index`` would fail placement now (None: it might not)."""
        flavor = self.flavor_of(group)
        if flavor is None:
            return None
        if not self.preemptive:
            free = self.free()
            if group.num_gpus > free:
                return _no_room(group, free)
        known = self.misses.get(miss_key(group.shape, flavor, group.cq, group.priority,
                                         self.preemptive))
        if known is not None and group.num_gpus >= known[0]:
            return known[1]
        carried = self.carried_from.get(group)
        if carried is None or index < carried[0] or self.free() > carried[2]:
            return None
        return carried[1]

    def _drop(self, group: Group, index: int, detail: str) -> None:
        self.skipped.setdefault(group, []).append([index, None, detail, None])
        self.dropped[group] = None
        group.gen += 1
        at = bisect.bisect_left(group.fresh, group.entries[index])
        if at < len(group.fresh):
            self._push_fresh(group, at)

    def _cold_groups(self, cq: str) -> list[Group]:
        return [g for g in self.groups.of_queue(cq, above=self.cold[cq])
                if g not in self.warmed]

    def _catch_up(self) -> None:
        """After a try: bring back dropped groups that a start, an eviction or a failed
        PreFilter may have changed. An eviction may free GPUs: a miss known before it still
        tells only by its room bound (``_after_eviction``); the other groups come back."""
        bulk, evictions, version = self.status()
        self._version_seen = version
        if self._passing and version != self._passing_version:  # a start may shrink it
            self._passing_version = version
            self._refusal_shrank()
        evicted = evictions != self._evictions
        if evicted:
            self._evictions = evictions
            self._after_eviction()
        elif not self.dropped and not self.cold and not self.carried_cold:
            return
        if not bulk or evicted:
            for group in list(self.dropped):
                self._resume(group)
            for cq in list(self.cold):
                for group in self._cold_groups(cq):
                    self._warm(group, _no_room(group, self.cold[cq]))
                del self.cold[cq]
            free = self.free()
            for group, carried in list(self.carried_cold.items()):
                if (bulk and carried.most is not None and free <= carried.most
                        and self.droppable(group)):
                    # it still tells from the failed job on (``_after_eviction``)
                    at = bisect.bisect_left(group.entries, carried.entry)
                    if not at:
                        continue
                    self.carried_from[group] = (at, carried.detail, carried.most)
                self._warm(group, carried.detail)
            return
        if version != self._version:
            self._version = version
            for group in [g for g in self.dropped
                          if not self.fits_queue(g.cq) and not self.droppable(g)]:
                self._resume(group)
            for cq in [q for q in self.cold if not self.fits_queue(q)]:
                for group in self._cold_groups(cq):
                    if not self.droppable(group):
                        self._warm(group, _no_room(group, self.cold[cq]))
            for group, carried in [(g, c) for g, c in self.carried_cold.items()
                                   if not self.fits_queue(g.cq) and not self.droppable(g)]:
                self._warm(group, carried.detail)

    def _refusal_shrank(self) -> None:
        """A start shrank the refusal's GPUs (backfill's extra GPUs): a group a miss dropped
        while the refusal passed its size comes back if it no longer does, so that each
        skipped job's try would have met the refusal that ``_told`` tells (from here on, a
        try of its jobs is refused first, unless they end in time)."""
        refusal = self._refusal_now()
        if refusal is None:
            return
        for group in [g for g in self._passing if g.num_gpus > refusal.gpus]:
            self._resume(group)

    def _refusal_now(self) -> Refusal | None:
        """The refusal in force, asked again only once the quota version changed since: a
        start, the only thing that shrinks it, changes the version too."""
        known = self._refusal_at
        if known is None or known[0] != self._version_seen:
            known = self._refusal_at = (self._version_seen,
                                        self.refusal() if self.refusal is not None else None)
        return known[1]

    def _after_eviction(self) -> None:
        """An eviction may free GPUs: a miss known before it still tells only when it failed
        for room and no more GPUs are wholly free now than it could bear (its candidates only
        shrank: a job started in this cycle is no candidate in it)."""
        free, misses, carried = self.free(), self.misses, self.carried_from
        for key in [k for k, known in misses.items() if known[2] is None or free > known[2]]:
            del misses[key]
        for group in [g for g, known in carried.items() if free > known[2]]:
            del carried[group]

    def _warm(self, group: Group, detail: str) -> None:
        """A cold group comes back: skipped from its first job up to the frontier."""
        self.warmed.add(group)
        self.carried_cold.pop(group, None)
        self.skipped.setdefault(group, []).append([0, None, detail, None])
        self.dropped[group] = None
        self._resume(group)

    def _resume(self, group: Group) -> None:
        """Visit the group again from its first job after the walk's frontier."""
        del self.dropped[group]
        self._passing.pop(group, None)
        self._run_end.pop(group, None)
        span = self.skipped[group][-1]
        low, high = span[0], len(group.entries)
        while low < high:  # the first member whose key is past the frontier
            mid = (low + high) // 2
            if self.key(group, group.entries[mid], group.jobs[mid]) > self._frontier:
                high = mid
            else:
                low = mid + 1
        span[1] = low
        group.gen += 1
        if low < len(group.entries):
            heapq.heappush(self._heap, (self.key(group, group.entries[low], group.jobs[low]),
                                        next(self._count), _FULL, low, group.gen, group))


def miss_key(shape: Hashable, flavor: str, cq: str, priority: int | None,
             preemptive: bool) -> tuple:
    """What a failed placement tells about: later jobs of its shape and flavor asking no fewer
    GPUs; under a preemptive policy (whose victim search failed too) only those of its cluster
    queue and priority, whose victims are among its own (``victim_miss_scope``)."""
    return (shape, flavor, cq, priority) if preemptive else (shape, flavor)


def _told(group: Group, job: Job, detail: str, refusal: Refusal | None) -> str:
    """What a try of ``job``, skipped for the miss ``detail``, would have met first: the
    refusal in force when the miss dropped its group (a PreFilter: before placement) if it
    refuses the job, else the miss. The refusal's GPUs only shrink in a cycle, and the group
    comes back when they shrink below its size (``_refusal_shrank``): one refusal tells the
    whole span."""
    if refusal is not None and group.num_gpus > refusal.gpus and not refusal.pass_(job):
        return refusal.text
    return detail


def _no_room(group: Group, free: int) -> str:
    """What ``place`` writes for a group asking more than ``free`` (placement.py)."""
    return f"[placement] {no_room_text(group.num_gpus, free)}"
