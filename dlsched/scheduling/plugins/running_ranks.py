"""Running jobs ranked by a QueueSort's key across cycles, for victim searches (issue 14).

``RankedRunning``: keys fixed for each job (EDF's deadlines): one sorted list. ``FallingRanks``:
keys that only fall while a job runs (SRTF's remaining time): a heap of keys computed in earlier
cycles, each an upper bound of the job's key now; a search pops the largest, computes its key
now, and ranks it once that key is at least every other bound (so at least every other key),
so a cycle computes keys only for the jobs a search reads, not for every running job.

Entries hold the job and the start of the attempt they were filed for; an entry counts while
the job runs that attempt (``filed``: one entry per job and attempt). ``refresh`` (once per
cycle, before any search) files the jobs that started since; stale entries are skipped when met
and compacted away once they outnumber the live ones.
"""

from __future__ import annotations

import bisect
import heapq
from collections.abc import Callable, Collection, Iterator
from typing import Any

from dlsched.workload.job import Job, JobStatus

_MISSING = object()
_RUNNING = JobStatus.RUNNING


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

    def refresh(self, running: Collection[Job], key_of: Callable[[Job], Any]) -> None:
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


class _Descending:
    """A key ordered the other way round (heapq keeps the smallest first)."""

    __slots__ = ("key",)

    def __init__(self, key: Any) -> None:
        self.key = key

    def __lt__(self, other: _Descending) -> bool:
        return other.key < self.key


class FallingRanks:
    """Running jobs by a key that only falls while they run, the largest first (see the
    module's docstring)."""

    def __init__(self) -> None:
        # (bound, filing number, job, attempt start): the bound is the key when computed
        self._heap: list[tuple[_Descending, int, Job, float | None]] = []
        self._ranked: list[tuple[Any, int, Job, float | None]] = []  # this cycle's, by rank
        self._filed: dict[str, float | None] = {}
        self._filings = 0
        self._live_at_compaction = 0
        self._key_of: Callable[[Job], Any] = _unset

    def refresh(self, running: Collection[Job], key_of: Callable[[Job], Any]) -> None:
        """A new cycle (a later time): this cycle's ranked entries go back to the heap with
        their keys, bounds from now on; jobs started since are filed."""
        heap = self._heap
        for key, filing, job, started in self._ranked:
            heapq.heappush(heap, (_Descending(key), filing, job, started))
        self._ranked = []
        filed, missing = self._filed, _MISSING
        for job in running:
            if filed.get(job.job_id, missing) != job.run_started:
                self._filings += 1
                filed[job.job_id] = job.run_started
                heapq.heappush(heap, (_Descending(key_of(job)), self._filings, job,
                                      job.run_started))
        if len(heap) > 2 * self._live_at_compaction + 64:
            self._compact()
        self._key_of = key_of

    def above(self, key: Any) -> Iterator[Job]:
        """Running jobs whose key now is greater than ``key``, the greatest first."""
        ranked = self._ranked
        for entry in ranked:
            if not entry[0] > key:
                return
            yield entry[2]
        while True:
            entry = self._rank_next()
            if entry is None or not entry[0] > key:
                return
            yield entry[2]

    def _rank_next(self) -> tuple[Any, int, Job, float | None] | None:
        """Move the running job with the largest key now from the heap to ``_ranked``."""
        heap, filed, key_of = self._heap, self._filed, self._key_of
        while heap:
            bound, filing, job, started = heap[0]
            if not (job.status is _RUNNING and job.run_started == started
                    and filed.get(job.job_id, _MISSING) == started):
                heapq.heappop(heap)
                continue
            key = key_of(job)
            if len(heap) > 1 and key < min(heap[1:3], key=_bound_order)[0].key:
                # Another entry's bound is larger: this one's key fell below it; refile.
                heapq.heapreplace(heap, (_Descending(key), filing, job, started))
                continue
            heapq.heappop(heap)
            entry = (key, filing, job, started)
            self._ranked.append(entry)
            return entry
        return None

    def _compact(self) -> None:
        filed = self._filed
        live = [entry for entry in self._heap
                if entry[2].status is _RUNNING and entry[2].run_started == entry[3]
                and filed.get(entry[2].job_id, _MISSING) == entry[3]]
        heapq.heapify(live)
        self._heap = live
        self._filed = {entry[2].job_id: entry[3] for entry in live}
        self._live_at_compaction = len(live)


def _bound_order(entry: tuple[_Descending, int, Job, float | None]) -> _Descending:
    return entry[0]


def _unset(job: Job) -> Any:
    raise RuntimeError("FallingRanks.refresh must run before a search")
