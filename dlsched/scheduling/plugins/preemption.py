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

A QueueSort that names its rank (``rank_rule``) and keys a job at any time (``key_now``) lets
the plugin say, in a waiting job's reason, which running jobs it may not preempt
(``wait_detail``, hooks.WaitDetail): SRTF's and EDF's.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from dlsched.scheduling.framework import QueueSortPlugin
from dlsched.scheduling.plugins.running_ranks import FallingRanks, RankedRunning
from dlsched.scheduling.state import CycleState
from dlsched.wording import count_of
from dlsched.workload.job import Job, JobStatus


@dataclass(frozen=True)
class RankRule:
    """How a QueueSort's rank reads in a waiting job's reason (``Preemption.wait_detail``):
    ``policy`` labels it, ``kept`` says what a running job it may not preempt has (ranks at or
    above it), ``evicted`` what one it may preempt has (ranks strictly below it)."""

    policy: str
    kept: str
    evicted: str


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
        # Per scope, the running jobs its index has not been given yet (``_starts``), and the
        # running table's last entry when they were last collected, with its epoch.
        self._unfiled: dict[Hashable, list[Job]] = {}
        self._anchor: tuple[str, Job, int] | None = None

    def victims_epoch(self, state: CycleState, scope: Hashable = None) -> Hashable | None:
        """What, besides starts and stops, may give a waiting job more victims (None: time
        alone may), in any victim scope. Nothing here when no protection window ends and the
        running keys are fixed (EDF) or falling (SRTF) while the preemptor's is fixed as it
        waits."""
        return () if not self.min_runtime and self._kind is not None else None

    def post_filter(self, state: CycleState, job: Job) -> tuple[Job, ...] | Iterator[Job]:
        if self._index is not None:
            return self._from_index(state, job)
        keys, jobs = self._ranked(state, job)
        first = bisect.bisect_right(keys, self.queue_sort.sort_key(state, job))
        return tuple(other for other in reversed(jobs[first:])
                     if other.job_id not in state.evicted)

    def no_victims(self, state: CycleState, job: Job) -> bool:
        """Whether ``post_filter`` would nominate no one for ``job``, exactly: its first
        candidate, read from the same ranks. With an index that is the running job of the
        largest key now (SRTF: the longest remaining time), ranked once per cycle and scope,
        so the answer costs about one comparison; a job that every running job of its scope
        outranks or ties has none. The tenant layer asks it before giving the policy its
        turn (``tenancy/plugins.py`` ``_policy_turn``), the cycle after an eviction."""
        if self._index is not None:
            return next(self._from_index(state, job), None) is None
        keys, jobs = self._ranked(state, job)
        first = bisect.bisect_right(keys, self.queue_sort.sort_key(state, job))
        evicted = state.evicted
        return all(other.job_id in evicted for other in jobs[first:])

    def next_wakeup(self, state: CycleState) -> float | None:
        return protection_ends(state, self.min_runtime)

    def wait_detail(self, job: Job, running: Mapping[str, Job], now: float) -> str | None:
        """Which running jobs this waiting job may not preempt, and the rule: those the
        queue's key ranks at or above it (SRTF: no more remaining time; EDF: no later
        deadline), and those in their first ``min_runtime`` seconds. None when none holds
        GPUs, when the order does not name its rank, or under the tenant layer (victims of a
        cluster queue only: its own reasons say so)."""
        rule = getattr(self.queue_sort, "rank_rule", None)
        key_now = getattr(self.queue_sort, "key_now", None)
        if rule is None or key_now is None or self.victim_scope is not None \
                or not job.status.is_waiting:
            return None
        own, protect = key_now(job, now), self.min_runtime
        ranked, fresh = [0, 0], [0, 0]  # running jobs, their GPUs
        for other in running.values():
            held = (ranked if key_now(other, now) <= own else fresh
                    if other.run_started is not None and now - other.run_started < protect
                    else None)
            if held is not None:
                held[0] += 1
                held[1] += len(other.allocation) or other.spec.num_gpus
        young = f"started less than min_runtime {protect:g} s ago"
        said = [f"{count_of(jobs, 'running job')} {what} ({count_of(gpus, 'GPU')})"
                for (jobs, gpus), what in ((ranked, f"with {rule.kept}"), (fresh, young))
                if jobs]
        if not said:
            return None
        after = f", once they ran min_runtime {protect:g} s" if protect else ""
        return (f"[{rule.policy}] not preempted: {' and '.join(said)}; it preempts only jobs "
                f"with {rule.evicted}{after}")

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
            fresh = state.scratch[self.name] = set()
            self._starts(state, scope)
        key = scope(job)
        index = self._scoped.get(key)
        if index is None:
            index = self._scoped[key] = self._kind()
        if key not in fresh:
            fresh.add(key)
            started = [j for j in self._unfiled.pop(key, ()) if j.status is JobStatus.RUNNING]
            index.refresh(started, lambda other: sort_key(state, other))
        return index

    def _starts(self, state: CycleState, scope: Callable[[Job], Hashable]) -> None:
        """Hand each scope the running jobs that started since this was last asked (its
        index files those it has not filed for their present attempt). The core's running
        table (a dict) keeps jobs in the order they started, so they are the entries after
        the one that was last then, if that one still runs the same attempt (``epoch``);
        otherwise, or without the table, every running job is handed again."""
        running = state.snapshot.running
        table = getattr(running, "mapping", None)
        if table is None:
            self._unfiled = _by_scope(running, scope)
            return
        anchor, new = self._anchor, []
        for job_id, job in reversed(table.items()):
            if anchor is not None and job_id == anchor[0]:
                if job is anchor[1] and job.epoch == anchor[2]:
                    break
                anchor = None  # it started again: every entry may be new
            new.append(job)
        else:  # every running job handed: forget what was waiting to be handed
            self._unfiled = {}
        unfiled = self._unfiled
        for job in reversed(new):
            unfiled.setdefault(scope(job), []).append(job)
        if table:
            last = next(reversed(table.values()))
            self._anchor = (last.job_id, last, last.epoch)
        for key in [k for k, jobs in unfiled.items() if len(jobs) > 4096]:
            unfiled[key] = [j for j in unfiled[key] if j.status is JobStatus.RUNNING]

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

