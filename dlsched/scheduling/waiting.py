"""The core's waiting queue: insertion-ordered, or kept sorted when the policy's order is static.

A static order (FIFO by submission) never changes while a job waits, so keeping the queue sorted
on insert spares every cycle a full sort: O(log n) per insert instead of O(n log n) per cycle.
With a ``bucket_of`` function it also keeps each bucket (jobs that fit or fail alike: same GPU
count and the same static shape) sorted, so a cycle can skip a whole bucket once one of its jobs
failed, instead of visiting every waiting job (see ``bucket_scan.py``).

Each tenant queue's jobs in the static order (``by_queue``) are kept only once something reads
them (strict FIFO and the fast lane do, every cycle; a bucket walk never does): until then a job
is filed in two sorted lists, not three (issue 14: a contended Tiresias run files ~10^6
preempted jobs). Built at the first read, they are the whole order's jobs of each queue in that
order: equal keys stay in the order they were filed, in the whole order and in each queue.

With buckets the whole order itself is kept only once read (a cycle that walks the buckets,
as the Tiresias lane does, never reads it: one sorted list a filing, not two, issue 14).
Until then the jobs are held in the order they were filed (``_jobs``, ``_filed``: a
re-keyed job goes last, as a new filing), and the whole order is that order sorted by key
(a stable sort: equal keys in the order they were filed, where each filing went after them).
A snapshot then holds the queue and its count of changes (``order_at``), sorted if read
during its cycle.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import (
    Callable,
    Hashable,
    ItemsView,
    Iterator,
    KeysView,
    Mapping,
    Sequence,
    ValuesView,
)
from typing import Any

from dlsched.workload.job import Job


class WaitingQueue:
    def __init__(self, static_key: Callable[[Job], Any] | None = None,
                 bucket_of: Callable[[Job], Hashable] | None = None) -> None:
        self._jobs: dict[str, Job] = {}
        # The waiting jobs' ids, a live view (``len`` of it in C: the core asks twice a cycle)
        self.ids: KeysView[str] = self._jobs.keys()
        self._static_key = static_key
        self._keys: list[Any] = []
        self._ordered: list[Job] = []
        self._queue_keys: dict[str, list[Any]] = {}
        self._by_queue: dict[str, list[Job]] = {}
        self._queues_kept = False  # ``_by_queue`` kept up to date (it was read)
        self._queues_view = _QueuesView(self)
        # ``_keys``/``_ordered`` kept up to date: always without buckets, else once read
        self.order_kept = bucket_of is None or static_key is None
        self._last_key: Any = None  # the key filed last, while the whole order is not kept
        self.changes = 0  # jobs added, taken out or re-keyed (``order_at``)
        # Each waiting job's static key, as computed when it was filed
        self._filed: dict[str, Any] = {}
        self._bucket_of = bucket_of if static_key is not None else None
        self._buckets: dict[Hashable, tuple[list[Any], list[Job]]] = {}
        # Each job's bucket, kept after it leaves the queue (a preempted job comes back to the
        # same bucket: its spec does not change) until ``forget``; a waiting job's is here.
        self._bucket_known: dict[str, Hashable] = {}

    def add(self, job: Job) -> None:
        job_id = job.job_id
        self.changes += 1
        if self._static_key is None:
            self._jobs[job_id] = job
            return
        key = self._static_key(job)  # (a key that fails leaves the job out: the run stops)
        self._jobs[job_id] = job
        self._file(job, job_id, key)

    def _file(self, job: Job, job_id: str, key: Any) -> None:
        """File a waiting job under ``key`` in each order (``_insert``, inlined for the whole
        order and the bucket: ~10^6 filings on a contended Tiresias run, issue 14)."""
        if self.order_kept:
            self._filed[job_id] = key
            keys, jobs = self._keys, self._ordered
            if not keys or not key < keys[-1]:  # the common case of a static order: last
                keys.append(key)
                jobs.append(job)
            else:
                at = bisect_right(keys, key)
                keys.insert(at, key)
                jobs.insert(at, job)
        else:
            # Keys that do not compare fail here, at their filing, as in the whole order
            if self._last_key is not None:
                key < self._last_key  # noqa: B015 (only whether it raises)
            self._last_key = self._filed[job_id] = key
        if self._queues_kept:
            self._file_in_queue(job, key)
        bucket_of = self._bucket_of
        if bucket_of is None:
            return
        name = self._bucket_known.get(job_id)
        if name is None:
            name = self._bucket_known[job_id] = bucket_of(job)
        bucket = self._buckets.get(name)
        if bucket is None:
            self._buckets[name] = ([key], [job])
            return
        keys, jobs = bucket
        if not key < keys[-1]:
            keys.append(key)
            jobs.append(job)
        else:
            at = bisect_right(keys, key)
            keys.insert(at, key)
            jobs.insert(at, job)

    def _file_in_queue(self, job: Job, key: Any) -> None:
        queue = job.spec.queue
        keys = self._queue_keys.get(queue)
        if keys is None:
            keys = self._queue_keys[queue] = []
            self._by_queue[queue] = []
        _insert(keys, self._by_queue[queue], key, job)

    def pop(self, job_id: str) -> Job:
        job = self._jobs.pop(job_id)
        self.changes += 1
        if self._static_key is not None:
            self._unfile(job, job_id)
        return job

    def _unfile(self, job: Job, job_id: str) -> None:
        """Take a waiting job out of each order: under the key it was filed with (a static
        key does not change while a job waits, nor does its bucket)."""
        key = self._filed.pop(job_id)
        if self.order_kept:
            _remove(self._keys, self._ordered, key, job)
        if self._queues_kept:
            queue = job.spec.queue
            _remove(self._queue_keys[queue], self._by_queue[queue], key, job)
            if not self._by_queue[queue]:
                del self._queue_keys[queue], self._by_queue[queue]
        if self._bucket_of is not None:
            name = self._bucket_known[job_id]
            keys, jobs = self._buckets[name]
            if len(jobs) == 1:  # its last job: the bucket goes
                del self._buckets[name]
            else:
                _remove(keys, jobs, key, job)

    def forget(self, job_id: str) -> None:
        """The job ended: its bucket need not be kept for a return."""
        self._bucket_known.pop(job_id, None)

    @property
    def is_static(self) -> bool:
        return self._static_key is not None

    def rekey(self, job: Job) -> None:
        """File a waiting job again under its static key as it is now (it changed): a new
        filing, after the jobs filed under an equal key."""
        if self._static_key is None:
            self.pop(job.job_id)
            self.add(job)
            return
        job_id = job.job_id
        jobs = self._jobs
        self.changes += 1
        del jobs[job_id]  # it goes last in arrival order too, as a new filing
        jobs[job_id] = job
        self._unfile(job, job_id)
        self._file(job, job_id, self._static_key(job))

    def discard(self, job_id: str) -> None:
        """Take the job out if it waits (it ended, or left the queue by another way than a
        start): its bucket is forgotten too."""
        if job_id in self._jobs:
            self.pop(job_id)
        self._bucket_known.pop(job_id, None)

    def ordered(self) -> tuple[Job, ...]:
        """The jobs, in the static order when there is one, else in arrival order."""
        if self._static_key is not None:
            return tuple(self._whole())
        return tuple(self._jobs.values())

    def order_at(self, changes: int) -> tuple[Job, ...]:
        """``ordered`` for a snapshot taken at ``changes`` (``ClusterSnapshot.waiting`` while
        the whole order is not kept: no copy a cycle), which from then on is kept (a policy
        that reads it once reads it every cycle). Like the snapshot's ``running``, it is the
        core's live state: read during the snapshot's cycle, before its decisions apply."""
        if changes != self.changes:
            raise RuntimeError("a snapshot's waiting jobs were first read after the core "
                               "changed its queue: read them during the snapshot's cycle")
        return self.ordered()

    def in_order(self) -> Iterator[Job]:
        """``ordered`` without a copy: iterate it only while the queue does not change."""
        return iter(self._whole() if self._static_key is not None else self._jobs.values())

    def _whole(self) -> list[Job]:
        """The whole static order, kept from now on (built from the filings at the first
        read: a stable sort by key of the jobs in the order they were filed)."""
        if not self.order_kept:
            self.order_kept = True
            jobs, filed = self._jobs, self._filed
            self._ordered, self._keys = _sorted_by_key([jobs[job_id] for job_id in filed],
                                                       list(filed.values()))
        return self._ordered

    def by_queue(self) -> Mapping[str, list[Job]]:
        """Each queue's jobs in the static order (live lists: read them, do not keep them);
        empty without a static order."""
        return self._queues_view if self._static_key is not None else self._by_queue

    def _queues(self) -> dict[str, list[Job]]:
        """``_by_queue``, built from the whole order at the first read and kept from then on."""
        if not self._queues_kept:
            self._whole()
            self._queues_kept = True
            for key, job in zip(self._keys, self._ordered, strict=True):
                self._file_in_queue(job, key)  # in order: each goes last
        return self._by_queue

    def bucket_named(self, job_id: str) -> Hashable | None:
        """The bucket a waiting job is filed in (None: not waiting, or no buckets)."""
        return self._bucket_known.get(job_id) if job_id in self._filed else None

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


class _QueuesView(Mapping[str, list[Job]]):
    """``WaitingQueue.by_queue`` of a static order: the per-queue lists, made and kept from the
    first read on. Its truth needs no lists: some queue has jobs exactly when the queue has."""

    def __init__(self, waiting: WaitingQueue) -> None:
        self._waiting = waiting

    def __getitem__(self, queue: str) -> list[Job]:
        return self._waiting._queues()[queue]

    def __iter__(self) -> Iterator[str]:
        return iter(self._waiting._queues())

    def __len__(self) -> int:
        return len(self._waiting._queues())

    def __bool__(self) -> bool:
        return bool(self._waiting._jobs)

    def __contains__(self, queue: object) -> bool:
        return queue in self._waiting._queues()

    # The dict's own views: no Python step an item
    def values(self) -> ValuesView[list[Job]]:
        return self._waiting._queues().values()

    def items(self) -> ItemsView[str, list[Job]]:
        return self._waiting._queues().items()

    def keys(self) -> KeysView[str]:
        return self._waiting._queues().keys()

    def get(self, queue: str, default: Any = None) -> Any:
        return self._waiting._queues().get(queue, default)


def _sorted_by_key(jobs: Sequence[Job], keys: Sequence[Any]) -> tuple[list[Job], list[Any]]:
    """Jobs and keys sorted by key; equal keys keep their order (``sorted`` is stable)."""
    order = sorted(range(len(keys)), key=keys.__getitem__)
    return [jobs[i] for i in order], [keys[i] for i in order]


def _insert(keys: list[Any], jobs: list[Job], key: Any, job: Job) -> None:
    if not keys or not key < keys[-1]:  # the common case: it goes last (one comparison)
        keys.append(key)
        jobs.append(job)
        return
    at = bisect_right(keys, key)
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
    at = bisect_left(keys, key)
    while jobs[at] is not job:
        at += 1
    del keys[at]
    del jobs[at]
