"""EASY backfilling's walk over waiting jobs without visiting each one (issue 14).

The job-by-job walk tries every waiting job in every cycle: once the head has its reservation,
most jobs fail the reservation's PreFilter ("would delay the head") or are too large for what
is free, and under contention thousands wait. Here the jobs wait in groups of alike specs (the
core's ``bucket_of``), each in FIFO order with a min-tree over the jobs' oracle remaining times,
so the cycle asks each group for its next job that could pass:

- before the reservation exists (no job has failed yet in this cycle): the next job, whatever
  its duration;
- after it: none if the group's jobs ask more whole GPUs than are free, or a job of the group's
  shape as large or smaller failed (a known miss); else the next job if the group asks no more
  than the reservation's spare GPUs; else the next job that ends before the shadow time.

Within a cycle the free GPUs and the spare GPUs only shrink and the known misses only grow
(backfilling never evicts), so a job skipped once would fail whenever the job-by-job walk met
it, and it fails without side effects (the PreFilter, a known miss and the "needs N GPUs"
check all come before the futility memo). Candidates are re-checked when taken, since the rules
may have tightened since they were found. The jobs tried, and so the decisions, are those of
the job-by-job walk.

Reasons: skipped jobs are reported by bucket (``CycleResult.bulk_reasons``, resolved lazily by
the core): a bucket whose jobs ask more than the spare GPUs reads the reservation's reason, a
bucket given up on reads "needs N GPUs, F free" or the known-miss reason. The job-by-job walk
wrote each job's own; the texts can differ for jobs of one bucket that would have failed for
different reasons (e.g. a short job of a large bucket once the cluster is full).
"""

from __future__ import annotations

import bisect
import heapq
import math
from collections.abc import Hashable
from typing import TYPE_CHECKING, Any

from dlsched.scheduling.bucket_scan import bucket_of
from dlsched.scheduling.placement import static_shape
from dlsched.scheduling.state import EPS
from dlsched.workload.job import Job, JobStatus

if TYPE_CHECKING:
    from dlsched.scheduling.cycle import _CycleRun

_GONE = math.inf  # a tree leaf whose job no longer waits (or was never filed)
_ANY = 1e308  # a threshold every waiting job passes (durations are clipped below it)
_CAP = 1e300
_WAITING = (JobStatus.PENDING, JobStatus.PREEMPTED)


class _Group:
    """Waiting jobs of one spec kind in FIFO order, with a min-tree of their durations."""

    __slots__ = ("keys", "jobs", "filings", "latest", "durations", "tree", "size", "dirty",
                 "live")

    def __init__(self, latest: dict[str, int]) -> None:
        self.keys: list[Any] = []
        self.jobs: list[Job] = []
        self.filings: list[int] = []  # which filing of the job each entry is
        self.latest = latest  # job id -> its latest filing (shared by the groups)
        self.durations: list[float] = []
        self.tree: list[float] = [_GONE, _GONE]
        self.size = 1
        self.dirty = False  # filed out of order: rebuild before the next walk
        self.live = 0

    def add(self, key: Any, job: Job, duration: float, filing: int) -> None:
        if self.keys and key < self.keys[-1]:
            at = bisect.bisect_right(self.keys, key)
            self.keys.insert(at, key)
            self.jobs.insert(at, job)
            self.filings.insert(at, filing)
            self.durations.insert(at, duration)
            self.dirty = True
        else:
            self.keys.append(key)
            self.jobs.append(job)
            self.filings.append(filing)
            self.durations.append(duration)
            if len(self.keys) > self.size:
                self.dirty = True
            elif not self.dirty:
                self._set(len(self.keys) - 1, min(duration, _CAP))
        self.live += 1

    def waiting(self, index: int) -> bool:
        job = self.jobs[index]
        return (job.status in _WAITING
                and self.latest.get(job.job_id) == self.filings[index])

    def drop(self, index: int) -> None:
        """The job at ``index`` no longer waits (it started, or waits again filed anew)."""
        if self.tree[index + self.size] != _GONE:
            self._set(index, _GONE)
            self.live -= 1

    def rebuild(self) -> None:
        """Compact away jobs that no longer wait and rebuild the tree (after out-of-order
        filings, growth, or once most entries are stale)."""
        keep = [i for i in range(len(self.jobs)) if self.waiting(i)]
        self.keys = [self.keys[i] for i in keep]
        self.jobs = [self.jobs[i] for i in keep]
        self.filings = [self.filings[i] for i in keep]
        self.durations = [self.durations[i] for i in keep]
        size = 1
        while size < len(keep) + 1:
            size *= 2
        tree = [_GONE] * (2 * size)
        for i, duration in enumerate(self.durations):
            tree[size + i] = min(duration, _CAP)
        for node in range(size - 1, 0, -1):
            tree[node] = min(tree[2 * node], tree[2 * node + 1])
        self.tree, self.size, self.dirty, self.live = tree, size, False, len(keep)

    def first_at_most(self, start: int, limit: float) -> int | None:
        """The first index >= ``start`` whose duration is at most ``limit``."""
        tree, size = self.tree, self.size
        if start >= size:
            return None
        node = start + size
        if tree[node] <= limit:
            return start
        while True:
            if not node & 1 and tree[node + 1] <= limit:
                node += 1
                break
            node >>= 1
            if node <= 1:
                return None
        while node < size:
            node = 2 * node if tree[2 * node] <= limit else 2 * node + 1
        return node - size

    def _set(self, index: int, value: float) -> None:
        tree = self.tree
        node = index + self.size
        tree[node] = value
        node >>= 1
        while node:
            best = min(tree[2 * node], tree[2 * node + 1])
            if tree[node] == best:
                break
            tree[node] = best
            node >>= 1


class WaitingByKind:
    """The waiting jobs of a backfilling run in groups (see the module's docstring)."""

    def __init__(self) -> None:
        self.groups: dict[Hashable, _Group] = {}
        self._latest: dict[str, int] = {}
        self._filings = 0

    def add(self, key: Any, job: Job, duration: float) -> None:
        """File a job that starts waiting (again: its earlier entry no longer counts)."""
        group = self.groups.get(spec := bucket_of(job))
        if group is None:
            group = self.groups[spec] = _Group(self._latest)
        self._filings += 1
        self._latest[job.job_id] = self._filings
        group.add(key, job, duration, self._filings)

    def walk(self, run: _CycleRun, reservation_key: str, texts: Any) -> list[tuple]:
        """Try, in FIFO order, the jobs the job-by-job walk would try; returns the buckets
        skipped with their reasons (``texts(state, group_gpus, reservation)``)."""
        state, profile = run.state, run.profile
        for spec, group in list(self.groups.items()):
            if group.dirty or len(group.jobs) > 2 * group.live + 64:
                group.rebuild()
            if not group.jobs:
                del self.groups[spec]
        if len(self._latest) > 2 * sum(len(g.jobs) for g in self.groups.values()) + 1024:
            self._latest = {job.job_id: self._latest[job.job_id]
                            for g in self.groups.values() for job in g.jobs}
            for group in self.groups.values():
                group.latest = self._latest
        groups = list(self.groups.values())
        names: list[Hashable | None] = [None] * len(groups)
        shapes: list[tuple | None] = [None] * len(groups)
        reasons: dict[Hashable, str] = {}
        heap: list[tuple[Any, int, int]] = []

        def name_of(n: int) -> Hashable:
            if names[n] is None:
                job = groups[n].jobs[0]
                shapes[n] = static_shape(state, job, profile.filters)
                names[n] = (job.spec.num_gpus, shapes[n])
            return names[n]

        def push(n: int, start: int) -> None:
            """File group ``n``'s next candidate at or after ``start``, if it has one."""
            group = groups[n]
            while True:
                reservation = state.scratch.get(reservation_key)
                limit, why = _ANY, None
                if reservation is not None:
                    limit, why = self._rule(run, group, n, name_of, shapes, reservation)
                    if why is not None and limit is None:
                        reasons[name_of(n)] = texts(state, group.jobs[0], reservation, why)
                        return
                at = group.first_at_most(start, limit)
                if at is None:
                    if why is not None:
                        reasons[name_of(n)] = texts(state, group.jobs[0], reservation, why)
                    return
                if not group.waiting(at):
                    group.drop(at)
                    start = at
                    continue
                if why is not None and not _ends_before(state, group, at, reservation):
                    start = at + 1  # within the slack of the tree's threshold, yet not before
                    continue
                heapq.heappush(heap, (group.keys[at], n, at))
                return

        for n in range(len(groups)):
            push(n, 0)
        blocked = run.blocked
        while heap:
            _, n, at = heapq.heappop(heap)
            group = groups[n]
            reservation = state.scratch.get(reservation_key)
            if reservation is not None:  # the rules may have tightened since it was filed
                limit, why = self._rule(run, group, n, name_of, shapes, reservation)
                if limit is None or (why is not None
                                     and not _ends_before(state, group, at, reservation)):
                    push(n, at + 1 if limit is not None else at)
                    continue
            job = group.jobs[at]
            if blocked and job.spec.queue in blocked:
                push(n, at + 1)
                continue
            started = run.consider(job)
            if not started and run.placement_failed and run._nothing_else_fits(job):
                break
            if started:
                group.drop(at)
                if _full(run):
                    break  # every later job would fail placement (nothing is evicted)
            if reservation is None and state.scratch.get(reservation_key) is not None:
                # The head failed: from now on the rules apply to every group's candidate.
                pending = [(n2, at2) for _, n2, at2 in heap]
                heap.clear()
                for n2, at2 in pending:
                    push(n2, at2)
            push(n, at + 1)
        return list(reasons.items())

    @staticmethod
    def _rule(run: _CycleRun, group: _Group, n: int, name_of: Any, shapes: list,
              reservation: Any) -> tuple[float | None, str | None]:
        """(duration limit or None to give the group up, why jobs are skipped or None)."""
        state = run.state
        job = group.jobs[0]
        gpus = job.spec.num_gpus
        over = gpus > reservation.extra_gpus and reservation.shadow_time != math.inf
        why = "reservation" if over else None
        if job.spec.gpu_share >= 1.0 and gpus > state.free_whole:
            return None, why or "free"
        if run.misses:
            name_of(n)
            if gpus >= run.misses.get(shapes[n], 1 << 62):
                return None, why or "miss"
        if not over:
            return _ANY, None
        room = reservation.shadow_time - state.now
        return room + 1e-9 * max(1.0, abs(reservation.shadow_time)), why


def _ends_before(state: Any, group: _Group, at: int, reservation: Any) -> bool:
    """EasyReservation's test, on the duration filed with the job (a waiting job's oracle
    remaining time does not change while it waits)."""
    return state.now + group.durations[at] <= reservation.shadow_time


def _full(run: _CycleRun) -> bool:
    state = run.state
    return state.free_whole == 0 and float(state.free.max()) <= EPS
