"""The core's waiting queue: insertion-ordered, or kept sorted when the policy's order is static.

A static order (FIFO by submission) never changes while a job waits, so keeping the queue sorted
on insert spares every cycle a full sort: O(log n) per insert instead of O(n log n) per cycle.
With a ``bucket_of`` function it also keeps each bucket (jobs that fit or fail alike: same GPU
count and the same static shape) sorted, so a cycle can skip a whole bucket once one of its jobs
failed, instead of visiting every waiting job (see ``bucket_scan.py``).
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Hashable, Iterator
from typing import Any

from dlsched.workload.job import Job


class WaitingQueue:
    def __init__(self, static_key: Callable[[Job], Any] | None = None,
                 bucket_of: Callable[[Job], Hashable] | None = None) -> None:
        self._jobs: dict[str, Job] = {}
        self._static_key = static_key
        self._keys: list[Any] = []
        self._ordered: list[Job] = []
        self._queue_keys: dict[str, list[Any]] = {}
        self._by_queue: dict[str, list[Job]] = {}
        self._key_of: dict[str, Any] = {}  # each job's static key, as computed when it came
        self._bucket_of = bucket_of if static_key is not None else None
        self._buckets: dict[Hashable, tuple[list[Any], list[Job]]] = {}
        self._bucket_named: dict[str, Hashable] = {}  # each job's bucket, as filed

    def add(self, job: Job) -> None:
        self._jobs[job.job_id] = job
        if self._static_key is not None:
            key = self._key_of[job.job_id] = self._static_key(job)
            _insert(self._keys, self._ordered, key, job)
            queue = job.spec.queue
            keys = self._queue_keys.get(queue)
            if keys is None:
                keys = self._queue_keys[queue] = []
                self._by_queue[queue] = []
            _insert(keys, self._by_queue[queue], key, job)
            if self._bucket_of is not None:
                name = self._bucket_named[job.job_id] = self._bucket_of(job)
                bucket = self._buckets.setdefault(name, ([], []))
                _insert(bucket[0], bucket[1], key, job)

    def pop(self, job_id: str) -> Job:
        job = self._jobs.pop(job_id)
        if self._static_key is not None:
            key = self._key_of.pop(job_id)  # a static key does not change while a job waits
            _remove(self._keys, self._ordered, key, job)
            queue = job.spec.queue
            _remove(self._queue_keys[queue], self._by_queue[queue], key, job)
            if not self._by_queue[queue]:
                del self._queue_keys[queue], self._by_queue[queue]
            if self._bucket_of is not None:
                name = self._bucket_named.pop(job_id)  # a job's bucket does not change either
                bucket = self._buckets[name]
                _remove(bucket[0], bucket[1], key, job)
                if not bucket[1]:
                    del self._buckets[name]
        return job

    @property
    def is_static(self) -> bool:
        return self._static_key is not None

    def rekey(self, job: Job) -> None:
        """File a waiting job again under its static key as it is now (it changed)."""
        self.pop(job.job_id)
        self.add(job)

    def discard(self, job_id: str) -> None:
        if job_id in self._jobs:
            self.pop(job_id)

    def ordered(self) -> tuple[Job, ...]:
        """The jobs, in the static order when there is one, else in arrival order."""
        if self._static_key is not None:
            return tuple(self._ordered)
        return tuple(self._jobs.values())

    def in_order(self) -> Iterator[Job]:
        """``ordered`` without a copy: iterate it only while the queue does not change."""
        return iter(self._ordered if self._static_key is not None else self._jobs.values())

    def by_queue(self) -> dict[str, list[Job]]:
        """Each queue's jobs in the static order (live lists: read them, do not keep them)."""
        return self._by_queue

    def bucket_named(self, job_id: str) -> Hashable | None:
        """The bucket a waiting job is filed in (None: not waiting, or no buckets)."""
        return self._bucket_named.get(job_id)

    def buckets(self) -> dict[Hashable, tuple[list[Any], list[Job]]]:
        """Each bucket's (static keys, jobs) in the static order (live lists, as ``by_queue``);
        empty without a ``bucket_of`` function."""
        return self._buckets

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


def _insert(keys: list[Any], jobs: list[Job], key: Any, job: Job) -> None:
    if not keys or not key < keys[-1]:  # the common case: it goes last (one comparison)
        keys.append(key)
        jobs.append(job)
        return
    at = bisect.bisect_right(keys, key)
    keys.insert(at, key)
    jobs.insert(at, job)


def _remove(keys: list[Any], jobs: list[Job], key: Any, job: Job) -> None:
    if jobs[-1] is job:  # the common cases, a queue's last or first job: no search
        del keys[-1]
        del jobs[-1]
        return
    if jobs[0] is job:
        del keys[0]
        del jobs[0]
        return
    at = bisect.bisect_left(keys, key)
    while jobs[at] is not job:
        at += 1
    del keys[at]
    del jobs[at]
