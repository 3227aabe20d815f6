"""Priority preemption (PostFilter): a job that does not fit may evict running jobs that the
profile's queue order ranks strictly below it, the lowest-ranked first.

Ranking by the same key the queue uses keeps preemption consistent with the policy (Tiresias'
2D-LAS, SRTF's remaining time, priorities). ``min_runtime`` protects a job that has just
started, so that two jobs cannot evict each other back and forth within that window.
"""

from __future__ import annotations

from dlsched.scheduling.framework import QueueSortPlugin
from dlsched.scheduling.state import CycleState
from dlsched.workload.job import Job


class Preemption:
    name = "preemption"

    def __init__(self, queue_sort: QueueSortPlugin, min_runtime: float = 0.0) -> None:
        self.queue_sort = queue_sort
        self.min_runtime = min_runtime

    def post_filter(self, state: CycleState, job: Job) -> tuple[Job, ...]:
        key = self.queue_sort.sort_key(state, job)
        now = state.now
        ranked = []
        for other in state.snapshot.running:
            if other.job_id in state.evicted:
                continue
            if other.run_started is not None and now - other.run_started < self.min_runtime:
                continue
            other_key = self.queue_sort.sort_key(state, other)
            if other_key > key:
                ranked.append((other_key, other))
        ranked.sort(key=lambda pair: pair[0], reverse=True)
        return tuple(other for _, other in ranked)
