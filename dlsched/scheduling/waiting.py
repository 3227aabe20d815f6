"""The core's waiting queue: insertion-ordered, or kept sorted when the policy's order is static.

A static order (FIFO by submission) never changes while a job waits, so keeping the queue sorted
on insert spares every cycle a full sort: O(log n) per insert instead of O(n log n) per cycle.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterator
from typing import Any

from dlsched.workload.job import Job


class WaitingQueue:
    def __init__(self, static_key: Callable[[Job], Any] | None = None) -> None:
        self._jobs: dict[str, Job] = {}
        self._static_key = static_key
        self._keys: list[Any] = []
        self._ordered: list[Job] = []

    def add(self, job: Job) -> None:
        self._jobs[job.job_id] = job
        if self._static_key is not None:
            key = self._static_key(job)
            at = bisect.bisect_right(self._keys, key)
            self._keys.insert(at, key)
            self._ordered.insert(at, job)

    def pop(self, job_id: str) -> Job:
        job = self._jobs.pop(job_id)
        if self._static_key is not None:
            key = self._static_key(job)
            at = bisect.bisect_left(self._keys, key)
            while self._ordered[at] is not job:
                at += 1
            del self._keys[at]
            del self._ordered[at]
        return job

    def discard(self, job_id: str) -> None:
        if job_id in self._jobs:
            self.pop(job_id)

    def ordered(self) -> tuple[Job, ...]:
        """The jobs, in the static order when there is one, else in arrival order."""
        if self._static_key is not None:
            return tuple(self._ordered)
        return tuple(self._jobs.values())

    def __contains__(self, job_id: object) -> bool:
        return job_id in self._jobs

    def __getitem__(self, job_id: str) -> Job:
        return self._jobs[job_id]

    def __len__(self) -> int:
        return len(self._jobs)

    def __iter__(self) -> Iterator[str]:
        return iter(self._jobs)

    def values(self) -> Iterator[Job]:
        return iter(self._jobs.values())
