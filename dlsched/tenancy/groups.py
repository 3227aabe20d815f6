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
  same shape and flavor asking no more GPUs failed placement in this cycle (free GPUs only
  shrink while nothing is evicted); and the group's request still fits its queue's quota in
  its one flavor (so its jobs would pass PreFilter and fail placement);
- what a skipped try would have done: record "quota reserved but no node fits the gang" (the
  pending book answers those jobs lazily: ``PendingBook.bulk``) and log the job's reasons in
  the audit when they changed. A job whose last logged reasons are exactly that ("steady")
  logs nothing, so only steady jobs are skipped; the others (new arrivals, jobs whose reasons
  changed, jobs that may be backing off) are still visited one by one at their turn;
- a dropped group comes back from the walk's position (its jobs visited again) when its quota
  no longer fits after a start, when anything is evicted, or when any PreFilter fails (a quota
  failure may close queues or hold quota: the walk is then job by job for the rest of the
  cycle).

Not skipped: queues of several flavors, StrictFIFO queues, jobs asking for shares, MIG slices,
tensor-parallel groups, elastic sizes or more than GPUs. The walk is used only where nothing
else decides per job (``with_tenants`` sets ``TenantAdmission.by_groups``: a static inner order,
the tenant layer the only PreFilter, PostFilter and failure plugin, static filters besides its
own, Kueue's admission order). The core's own reason text of a skipped job stays the one of its
last try.
"""

from __future__ import annotations

import bisect
import heapq
import itertools
from collections.abc import Callable, Hashable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

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


@dataclass(eq=False)
class Group:
    cq: str
    num_gpus: int
    shape: Hashable
    gpu_types: tuple[str, ...]
    request: Mapping[str, float]
    entries: list[Any] = field(default_factory=list)  # members' line entries, sorted
    jobs: list[Job] = field(default_factory=list)
    fresh: list[Any] = field(default_factory=list)  # entries of the members not steady
    fresh_jobs: list[Job] = field(default_factory=list)
    gen: int = 0  # bumped when the group is dropped or comes back: older heap entries lapse


class Groups:
    """Per cluster queue, the waiting jobs by group (``WaitingLines.on_join/on_leave``), and
    which members are steady (marked from each try's record, applied before the next walk)."""

    def __init__(self, request: Callable[[Job], Mapping[str, float]]) -> None:
        self.request = request
        self.groups: dict[Hashable, Group] = {}
        self.group_of: dict[str, Group] = {}
        self.steady: set[str] = set()
        self._marks: dict[str, bool] = {}

    def join(self, job: Job, cq: str, entry: Any) -> None:
        spec = job.spec
        asked = self.request(job)
        key = (cq, spec.num_gpus, shape_of(spec), tuple(asked.items()))
        group = self.groups.get(key)
        if group is None:
            group = self.groups[key] = Group(cq, spec.num_gpus, shape_of(spec), spec.gpu_types,
                                             asked)
        _insert(group.entries, group.jobs, entry, job)
        _insert(group.fresh, group.fresh_jobs, entry, job)
        self.group_of[job.job_id] = group

    def leave(self, job: Job, cq: str, entry: Any) -> None:
        group = self.group_of.pop(job.job_id)
        _remove(group.entries, group.jobs, entry, job)
        if job.job_id in self.steady:
            self.steady.discard(job.job_id)
        else:
            _remove(group.fresh, group.fresh_jobs, entry, job)
        if not group.jobs:
            del self.groups[(cq, group.num_gpus, group.shape, tuple(group.request.items()))]

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
            else:
                self.steady.discard(job_id)
                _insert(group.fresh, group.fresh_jobs, entry, job)


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
    its quota fits); ``closed(cq)``: the cycle closed the queue; ``status()``: (bulk still on,
    anything evicted, the quota version) after each try."""

    def __init__(self, groups: Groups, key: Callable[[Group, Any, Job], tuple],
                 position: Callable[[Group, Any], int],
                 droppable: Callable[[Group], bool], closed: Callable[[str], bool],
                 status: Callable[[], tuple[bool, bool, int]],
                 misses: Mapping[Hashable, tuple[int, str]],
                 flavor_of: Callable[[Group], str | None], free: Callable[[], int]) -> None:
        self.groups, self.key, self.position, self.free = groups, key, position, free
        self.droppable, self.closed, self.status = droppable, closed, status
        self.misses, self.flavor_of = misses, flavor_of
        # group -> [first skipped index, first index after the skipped ones or None, detail]
        self.skipped: dict[Group, list[list[Any]]] = {}
        self.dropped: dict[Group, None] = {}
        self._heap: list[tuple] = []
        self._count = itertools.count()
        self._frontier: tuple = ()
        self._version = -1

    def release(self) -> None:
        """Forget what reads the cycle (its state): only ``skipped_at`` is asked after it."""
        self.key = self.position = self.droppable = self.closed = None  # type: ignore[assignment]
        self.status = self.free = None  # type: ignore[assignment]
        self._heap = []
        self.dropped = {}

    def skipped_at(self, job_id: str, entry: Any) -> str | None:
        """The detail of the miss that skipped ``job_id`` in this cycle, or None."""
        group = self.groups.group_of.get(job_id)
        ranges = self.skipped.get(group) if group is not None else None
        if not ranges or job_id not in self.groups.steady:
            return None
        at = bisect.bisect_left(group.entries, entry)
        for low, high, detail in ranges:
            if low <= at and (high is None or at < high):
                return detail
        return None

    def __iter__(self) -> Iterator[Job]:
        heap, count = self._heap, self._count
        for group in self.groups.groups.values():
            heap.append(((self.position(group, group.entries[0]),), next(count), _PARTIAL, 0,
                         group.gen, group))
        heapq.heapify(heap)
        while heap:
            key, _, mode, index, gen, group = heapq.heappop(heap)
            if gen != group.gen:
                continue
            if mode == _FRESH:
                job = group.fresh_jobs[index]
            else:
                if self.closed(group.cq):
                    group.gen += 1
                    continue
                entry = group.entries[index]
                miss = self._miss(group)
                if miss is not None and self.droppable(group):
                    self._drop(group, index, miss)
                    continue
                job = group.jobs[index]
                if mode == _PARTIAL:
                    heapq.heappush(heap, (self.key(group, entry, job), next(count), _FULL,
                                          index, gen, group))
                    continue
            yield job
            self._frontier = key
            self._catch_up()
            if gen == group.gen:
                if mode == _FRESH:
                    if index + 1 < len(group.fresh):
                        entry = group.fresh[index + 1]
                        heapq.heappush(heap, (self.key(group, entry, group.fresh_jobs[index + 1]),
                                              next(count), _FRESH, index + 1, gen, group))
                elif index + 1 < len(group.entries):
                    heapq.heappush(heap, ((self.position(group, group.entries[index + 1]),),
                                          next(count), _PARTIAL, index + 1, gen, group))

    def _miss(self, group: Group) -> str | None:
        """Why the group's next job would fail placement now (None: it might not)."""
        flavor = self.flavor_of(group)
        if flavor is None:
            return None
        free = self.free()
        if group.num_gpus > free:
            return f"[placement] needs {group.num_gpus} GPUs, {free} free on fitting nodes"
        known = self.misses.get((group.shape, flavor))
        return known[1] if known is not None and group.num_gpus >= known[0] else None

    def _drop(self, group: Group, index: int, detail: str) -> None:
        self.skipped.setdefault(group, []).append([index, None, detail])
        self.dropped[group] = None
        group.gen += 1
        at = bisect.bisect_left(group.fresh, group.entries[index])
        if at < len(group.fresh):
            heapq.heappush(self._heap, (self.key(group, group.fresh[at], group.fresh_jobs[at]),
                                        next(self._count), _FRESH, at, group.gen, group))

    def _catch_up(self) -> None:
        """After a try: bring back dropped groups that a start, an eviction or a failed
        PreFilter may have changed."""
        if not self.dropped:
            return
        bulk, evicted, version = self.status()
        if not bulk or evicted:
            for group in list(self.dropped):
                self._resume(group)
            return
        if version != self._version:
            self._version = version
            for group in [g for g in self.dropped if not self.droppable(g)]:
                self._resume(group)

    def _resume(self, group: Group) -> None:
        """Visit the group again from its first job after the walk's frontier."""
        del self.dropped[group]
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
