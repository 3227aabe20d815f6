"""Priority preemption (PostFilter): a job that does not fit may evict running jobs that the
profile's queue order ranks strictly below it, the lowest-ranked first.

Ranking by the same key the queue uses keeps preemption consistent with the policy (Tiresias'
2D-LAS, SRTF's remaining time, priorities). ``min_runtime`` protects a job that has just
started, so that two jobs cannot evict each other back and forth within that window.

A QueueSort whose key is fixed for a running job too (``running_static``: EDF's deadlines) lets
the plugin keep the running jobs sorted across cycles (``RankedRunning``); one whose running
keys only fall as jobs run (``running_keys_fall``: SRTF's remaining time) keeps them in a heap
of past keys, upper bounds of the present ones, and ranks lazily only as many as a victim
search reads (``FallingRanks``), instead of sorting every running job in every cycle that
looks for victims (issue 14). Other orders are sorted once per such cycle.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Hashable, Iterable, Iterator
from typing import Any

from dlsched.scheduling.framework import QueueSortPlugin
from dlsched.scheduling.plugins.running_ranks import FallingRanks, RankedRunning
from dlsched.scheduling.state import CycleState
from dlsched.workload.job import Job


class Preemption:
    name = "preemption"

    def __init__(self, queue_sort: QueueSortPlugin, min_runtime: float = 0.0) -> None:
        self.queue_sort = queue_sort
        self.min_runtime = min_runtime
        self._index: RankedRunning | FallingRanks | None = None
        self._kind: type[RankedRunning] | type[FallingRanks] | None = None
        if getattr(queue_sort, "running_static", False):
            self._kind = RankedRunning
        elif getattr(queue_sort, "running_keys_fall", False):
            self._kind = FallingRanks
        if self._kind is not None:
            self._index = self._kind()
        # Victims only among running jobs of the preemptor's own scope (the tenant layer sets
        # it to a job's cluster queue: ``tenancy/profile.py``): an index per scope, so that a
        # search reads only its scope's jobs. None: one index for all.
        self.victim_scope: Callable[[Job], Hashable] | None = None
        self._scoped: dict[Hashable, RankedRunning | FallingRanks] = {}

    def victims_epoch(self, state: CycleState) -> Hashable | None:
        """What, besides starts and stops, may give a waiting job more victims (None: time
        alone may). Nothing here when no protection window ends and the running keys are
        fixed (EDF) or falling (SRTF) while the preemptor's is fixed as it waits."""
        return () if not self.min_runtime and self._kind is not None else None

    def post_filter(self, state: CycleState, job: Job) -> tuple[Job, ...] | Iterator[Job]:
        if self._index is not None:
            return self._from_index(state, job)
        keys, jobs = self._ranked(state, job)
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
        if self.victim_scope is not None:
            index = self._scoped_index(state, job)
        elif state.scratch.get(self.name) is None:
            index.refresh(state.snapshot.running, lambda other: sort_key(state, other))
            state.scratch[self.name] = True
        now, protect, evicted = state.now, self.min_runtime, state.evicted
        return (other for other in index.above(sort_key(state, job))
                if other.job_id not in evicted
                and (other.run_started is None or now - other.run_started >= protect))

    def _scoped_index(self, state: CycleState, job: Job) -> RankedRunning | FallingRanks:
        """The index of ``job``'s scope, brought up to date once per cycle, when first read
        (an index read in no cycle since keeps bounds that are still bounds: keys only fall),
        with the running jobs of its scope."""
        scope, sort_key = self.victim_scope, self.queue_sort.sort_key
        assert scope is not None and self._kind is not None
        fresh = state.scratch.get(self.name)
        if fresh is None:
            fresh = state.scratch[self.name] = (_by_scope(state.snapshot.running, scope), set())
        key = scope(job)
        index = self._scoped.get(key)
        if index is None:
            index = self._scoped[key] = self._kind()
        if key not in fresh[1]:
            fresh[1].add(key)
            index.refresh(fresh[0].get(key, ()), lambda other: sort_key(state, other))
        return index

    def _ranked(self, state: CycleState, job: Job) -> tuple[list[Any], list[Job]]:
        """Running jobs that may be evicted (of ``job``'s scope), by rank; computed once per
        cycle (keys of running jobs do not change within a cycle)."""
        scope = self.victim_scope
        name = self.name if scope is None else (self.name, scope(job))
        cached = state.scratch.get(name)
        if cached is None:
            now, running = state.now, state.snapshot.running
            if scope is not None:
                running = [other for other in running if scope(other) == name[1]]
            pairs = sorted(
                ((self.queue_sort.sort_key(state, other), other) for other in running
                 if other.run_started is None or now - other.run_started >= self.min_runtime),
                key=lambda pair: pair[0])
            cached = ([k for k, _ in pairs], [j for _, j in pairs])
            state.scratch[name] = cached
        return cached


def _by_scope(running: Iterable[Job], scope: Callable[[Job], Hashable]
              ) -> dict[Hashable, list[Job]]:
    grouped: dict[Hashable, list[Job]] = {}
    for job in running:
        grouped.setdefault(scope(job), []).append(job)
    return grouped


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

