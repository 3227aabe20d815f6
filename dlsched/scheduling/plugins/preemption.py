"""Priority preemption (PostFilter): a job that does not fit may evict running jobs that the
profile's queue order ranks strictly below it, the lowest-ranked first.

Ranking by the same key the queue uses keeps preemption consistent with the policy (Tiresias'
2D-LAS, SRTF's remaining time, priorities). ``min_runtime`` protects a job that has just
started, so that two jobs cannot evict each other back and forth within that window.

A QueueSort whose key is fixed for a running job too (``running_static``: EDF's deadlines) lets
the plugin keep the running jobs sorted across cycles (``RankedRunning``) instead of sorting
them all in every cycle that looks for victims (issue 14); other orders (SRTF's remaining time
shrinks as a job runs) are sorted once per such cycle.
"""

from __future__ import annotations

import bisect
from collections.abc import Collection, Iterator
from typing import Any

from dlsched.scheduling.framework import QueueSortPlugin
from dlsched.scheduling.state import CycleState
from dlsched.workload.job import Job, JobStatus


class Preemption:
    name = "preemption"

    def __init__(self, queue_sort: QueueSortPlugin, min_runtime: float = 0.0) -> None:
        self.queue_sort = queue_sort
        self.min_runtime = min_runtime
        self._index = RankedRunning() if getattr(queue_sort, "running_static", False) else None

    def post_filter(self, state: CycleState, job: Job) -> tuple[Job, ...] | Iterator[Job]:
        if self._index is not None:
            return self._from_index(state, job)
        keys, jobs = self._ranked(state)
        first = bisect.bisect_right(keys, self.queue_sort.sort_key(state, job))
        return tuple(other for other in reversed(jobs[first:])
                     if other.job_id not in state.evicted)

    def next_wakeup(self, state: CycleState) -> float | None:
        return protection_ends(state, self.min_runtime)

    def _from_index(self, state: CycleState, job: Job) -> Iterator[Job]:
        """What ``_ranked`` gives, read lazily from the running jobs kept sorted (brought up
        to date once per cycle)."""
        index, sort_key = self._index, self.queue_sort.sort_key
        assert index is not None
        if state.scratch.get(self.name) is None:
            index.refresh(state.snapshot.running, lambda other: sort_key(state, other))
            state.scratch[self.name] = True
        now, protect, evicted = state.now, self.min_runtime, state.evicted
        return (other for other in index.above(sort_key(state, job))
                if other.job_id not in evicted
                and (other.run_started is None or now - other.run_started >= protect))

    def _ranked(self, state: CycleState) -> tuple[list[Any], list[Job]]:
        """Running jobs that may be evicted, by rank; computed once per cycle (keys of running
        jobs do not change within a cycle)."""
        cached = state.scratch.get(self.name)
        if cached is None:
            now = state.now
            pairs = sorted(
                ((self.queue_sort.sort_key(state, other), other)
                 for other in state.snapshot.running
                 if other.run_started is None or now - other.run_started >= self.min_runtime),
                key=lambda pair: pair[0])
            cached = ([k for k, _ in pairs], [j for _, j in pairs])
            state.scratch[self.name] = cached
        return cached


def protection_ends(state: CycleState, min_runtime: float) -> float | None:
    """When a protected job's ``min_runtime`` ends while jobs wait: run a cycle then, so the
    waiting job can evict it as soon as that is allowed."""
    if not min_runtime or not state.snapshot.waiting:
        return None
    now = state.now
    ends = [job.run_started + min_runtime for job in state.snapshot.running
            if job.run_started is not None and job.run_started + min_runtime > now]
    if state.started:
        ends.append(now + min_runtime)
    return min(ends) if ends else None


class RankedRunning:
    """Running jobs sorted by a key fixed for each job, kept across cycles. An entry holds the
    job and the start of the attempt it was filed for; it is valid while the job still runs
    that attempt. ``refresh`` files the jobs that started since; stale entries (finished or
    preempted jobs) are skipped when met and compacted away once they are a third of all."""

    def __init__(self) -> None:
        self._keys: list[Any] = []
        self._entries: list[tuple[Job, float | None]] = []
        self._filed: dict[str, float | None] = {}
        self._live_at_compaction = 0

    def refresh(self, running: Collection[Job], key_of: Any) -> None:
        filed, missing = self._filed, _MISSING
        for job in running:
            if filed.get(job.job_id, missing) != job.run_started:
                self._file(job, key_of(job))
        size = len(self._entries)
        if size > self._live_at_compaction + self._live_at_compaction // 2 + 16:
            self._compact()

    def above(self, key: Any) -> Iterator[Job]:
        """Running jobs whose key is greater than ``key``, the greatest first."""
        entries, filed, running = self._entries, self._filed, JobStatus.RUNNING
        for at in range(len(entries) - 1, bisect.bisect_right(self._keys, key) - 1, -1):
            job, started = entries[at]
            if job.status is running and job.run_started == started \
                    and filed.get(job.job_id, _MISSING) == started:
                yield job

    def _file(self, job: Job, key: Any) -> None:
        at = bisect.bisect_right(self._keys, key)
        self._keys.insert(at, key)
        self._entries.insert(at, (job, job.run_started))
        self._filed[job.job_id] = job.run_started

    def _compact(self) -> None:
        filed, running = self._filed, JobStatus.RUNNING
        keep = [at for at, (job, started) in enumerate(self._entries)
                if job.status is running and job.run_started == started
                and filed.get(job.job_id, _MISSING) == started]
        self._keys = [self._keys[at] for at in keep]
        self._entries = [self._entries[at] for at in keep]
        self._filed = {job.job_id: started for job, started in self._entries}
        self._live_at_compaction = len(keep)


_MISSING = object()
