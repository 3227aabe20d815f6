"""Admission order across tenant queues (Kueue ``pkg/queue`` and the scheduler's
``entryOrdering``).

Within a cluster queue: higher priority first, then the wrapped policy's own QueueSort key
(FIFO for ``fifo``; Tiresias' 2D-LAS for ``tiresias``), so any policy runs inside the tenant
model unchanged. Across queues, Kueue admits the heads of all queues each cycle; a key whose
first term is the job's position in its queue reproduces that in one pass (all heads, then all
second jobs, ...). Among jobs of the same position: those that do not borrow before those that
borrow (with fair sharing: the lowest share value with the job admitted first), then the decayed
historic usage per weight (when a half-life is set), then priority, then the policy's key.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from dlsched.workload.job import Job


def queue_positions(jobs: Iterable[Job], queue_of: Callable[[Job], str],
                    within_key: Callable[[Job], Any]) -> dict[str, tuple[str, int]]:
    """Each job's cluster queue and 0-based position in it (priority, then ``within_key``)."""
    groups: dict[str, list[Job]] = {}
    for job in jobs:
        groups.setdefault(queue_of(job), []).append(job)
    out: dict[str, tuple[str, int]] = {}
    for queue, members in groups.items():
        members.sort(key=lambda j: (-j.spec.priority, within_key(j)))
        for position, job in enumerate(members):
            out[job.job_id] = (queue, position)
    return out


def admission_key(position: int, borrow_rank: tuple[float, ...], history: float, job: Job,
                  within: Any) -> tuple:
    """The cross-queue key; smaller is admitted first."""
    return (position, borrow_rank, history, -job.spec.priority, within, job.job_id)
