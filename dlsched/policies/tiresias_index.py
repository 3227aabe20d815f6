"""Running jobs by Tiresias queue, for finding preemption victims without ranking every job.

Each queue keeps its running jobs sorted by (submit time, job id), Tiresias' order within a
queue. An entry is valid while its job is still running the same attempt in that queue; stale
entries (finished, preempted, demoted) are skipped when met and compacted away now and then.
Jobs are filed into the sorted lists only when a victim search asks (``ranked_below``): on a
cluster where every job fits, most finish or are demoted before any search, and their entries
are dropped unsorted. Queue 0's filings are not sorted in at all until a search reads queue 0
(only one ranking a queue by submission, ``same_queue_preemption``: searches read the queues
below the preemptor's): kept by job id (``_top``), each leaves at its stop or demotion by a
dict deletion, where a sorted entry was found by bisection (the Philly table under contention:
~0.9 queue-0 filings a cycle, nearly all later demoted or stopped).

Each queue also keeps the GPUs of the attempts filed in it (``held_below``): at least what its
valid entries hold, so a search that needs more victims' GPUs than that fails without reading
an entry (the Philly table under contention: most searches fail, each read every running job
of the queues below).
"""

from __future__ import annotations

import bisect
from collections.abc import Container, Iterator, Mapping
from itertools import compress

from dlsched.workload.job import Job, JobStatus

Entry = tuple[Job, float]  # the job and the start time of the attempt it was filed for
# ``JobStatus.is_waiting`` and ``is_terminal`` as tuples read in place (a property call less
# per entry: compactions and sorts read every entry)
WAITING = (JobStatus.PENDING, JobStatus.PREEMPTED)
TERMINAL = (JobStatus.FINISHED, JobStatus.FAILED, JobStatus.CANCELLED)


class RunningByQueue:
    def __init__(self, queues: int) -> None:
        self._keys: list[list[tuple[float, str]]] = [[] for _ in range(queues)]
        self._entries: list[list[Entry]] = [[] for _ in range(queues)]
        self._filed: dict[str, tuple[int, float]] = {}
        self._pending: list[tuple[Job, int, float]] = []  # filed, not in the lists yet
        self._size = 0  # entries, valid or not, pending ones and ``_top``'s included
        # Queue 0's filings by job id while no search has read queue 0 (None from then on:
        # they are sorted in as the other queues' are); each one's start is in ``_filed``
        self._top: dict[str, Job] | None = {}
        # GPUs of each filed attempt, and their sums per queue: the GPUs an attempt holds when
        # it is valid, so each sum bounds what its queue's valid entries hold. Kept past queue
        # 0 only: ``held_below`` sums the queues below one (most filings are starts in 0).
        self._gpus: dict[str, int] = {}
        self._held = [0] * queues
        self._compact_above = 16  # ``_size`` past which ``file`` compacts

    def file(self, job: Job, queue: int, started: float, now: float | None = None,
             gpus: int | None = None) -> None:
        """Record that ``job``'s attempt begun at ``started`` is now in ``queue``; ``now`` is
        the cycle's time (default ``started``: a job filed as it starts). ``gpus``: the GPUs
        the attempt holds (default its allocation's: a job filed as it starts passes those
        it is given, as its allocation is still its last attempt's)."""
        job_id, filed, held = job.job_id, self._filed, self._held
        before = filed.get(job_id)
        if before is not None:  # a demotion: its entry in the queue it leaves goes now
            if before[0]:
                held[before[0]] -= self._gpus.pop(job_id)
            self._unlist(job, before)
        if queue:
            if gpus is None:
                gpus = len(job.allocation) or job.spec.num_gpus
            self._gpus[job_id] = gpus
            held[queue] += gpus
        top = self._top
        if queue or top is None:
            self._pending.append((job, queue, started))
        else:
            top[job_id] = job
        filed[job_id] = (queue, started)
        self._size += 1
        # Finished, preempted and demoted jobs leave stale entries, mostly at the tail where
        # scans start: compact once they reach half the live ones (a compaction reads every
        # entry; scans skip stale ones cheaply, and few scans happen between compactions).
        if self._size > self._compact_above:  # live + live // 2 + 16
            self._sort_pending()
            self._compact(started if now is None else now)

    def drop(self, job: Job) -> None:
        """The core stopped ``job`` (it waits again): its entry goes now. Left in place it
        would sit at the tail of its queue, where victim searches start, until a compaction
        (the Philly table under contention: ~5 stale entries read per victim found)."""
        job_id = job.job_id
        filed = self._filed.pop(job_id, None)
        if filed is None:
            return
        if filed[0]:
            self._held[filed[0]] -= self._gpus.pop(job_id)
        elif self._top is not None:
            if self._top.pop(job_id, None) is not None:
                self._size -= 1
            return
        if job.status is JobStatus.RUNNING:
            return
        # ``_unlist(job, filed)``, inlined (every stop under contention)
        keys, entries = self._keys[filed[0]], self._entries[filed[0]]
        if entries and entries[-1][0] is job and entries[-1][1] == filed[1]:
            # its list's last (3 stops in 4 on the contended Philly table: victims are read
            # from the tail), where the search would find it, or an equal entry
            del keys[-1], entries[-1]
            self._size -= 1
            return
        key = (job.spec.submit_time, job_id)
        at = bisect.bisect_left(keys, key)
        while at < len(keys) and keys[at] == key:
            if entries[at][1] == filed[1]:
                del keys[at], entries[at]
                self._size -= 1
                return
            at += 1

    def _forget(self, job_id: str, queue: int) -> None:
        """The job's attempt filed in ``queue`` ended: it is filed no more."""
        del self._filed[job_id]
        if queue:
            self._held[queue] -= self._gpus.pop(job_id)

    def _purge(self, queue: int, index: int) -> None:
        """Remove the entry at ``index`` of ``queue``'s lists, of a job that ended (read by a
        search: it would be read by every later one until a compaction, and its GPUs would
        stay in ``held_below``)."""
        job, started = self._entries[queue][index]
        del self._keys[queue][index], self._entries[queue][index]
        self._size -= 1
        if self._filed.get(job.job_id) == (queue, started):
            self._forget(job.job_id, queue)

    def _unlist(self, job: Job, filed: tuple[int, float]) -> None:
        """Remove ``job``'s entry for ``filed`` (queue, start) from its sorted list; one still
        pending is dropped by ``_sort_pending`` instead (``_filed`` no longer names it)."""
        queue, started = filed
        if not queue and self._top is not None:  # queue 0 unsorted: its entry by id
            if self._top.pop(job.job_id, None) is not None:
                self._size -= 1
            return
        keys, entries = self._keys[queue], self._entries[queue]
        if entries and entries[-1][0] is job and entries[-1][1] == started:  # (as ``drop``)
            del keys[-1], entries[-1]
            self._size -= 1
            return
        key = (job.spec.submit_time, job.job_id)
        at = bisect.bisect_left(keys, key)
        while at < len(keys) and keys[at] == key:  # stale entries of older attempts share it
            if entries[at][1] == started:
                del keys[at], entries[at]
                self._size -= 1
                return
            at += 1

    def _sort_pending(self) -> None:
        """Put the pending entries into the sorted lists, in the order they were filed, less
        those already stale for good: filed again since, or of a job that ended or runs
        another attempt (a stale entry would only be skipped by every search)."""
        pending, filed, running = self._pending, self._filed, JobStatus.RUNNING
        if not pending:
            return
        self._pending = []
        all_keys, all_entries, position, dropped = self._keys, self._entries, bisect.bisect_right, 0
        for job, queue, started in pending:
            status, job_id = job.status, job.job_id
            if (filed.get(job_id) != (queue, started)
                    or (status is running and job.run_started != started)
                    or status in TERMINAL):
                dropped += 1
                if status in TERMINAL and filed.get(job_id) == (queue, started):
                    self._forget(job_id, queue)
                continue
            key, keys = (job.spec.submit_time, job_id), all_keys[queue]
            if not keys or not key < keys[-1]:  # after all (~44% on the contended Philly
                keys.append(key)  # table): where ``bisect_right`` puts it, one comparison
                all_entries[queue].append((job, started))
                continue
            at = position(keys, key)
            keys.insert(at, key)
            all_entries[queue].insert(at, (job, started))
        self._size -= dropped

    def restart_at(self, job: Job, was: float, now: float) -> int | None:
        """The job's attempt filed as begun at ``was`` begins at ``job.run_started`` instead
        (its workers launched late: ``RuntimeScheduler.launched``): filed again under the
        same queue with the new start, as ``_valid`` reads starts; that queue, or None when
        the job was not filed with ``was``."""
        filed = self._filed.get(job.job_id)
        if filed is None or filed[1] != was or job.run_started is None:
            return None
        self.file(job, filed[0], job.run_started, now)
        return filed[0]

    def queue_of(self, job: Job) -> int | None:
        filed = self._filed.get(job.job_id)
        return filed[0] if filed is not None and self._valid(job, filed) else None

    def held_below(self, queue: int, evicted: Mapping[str, Job]) -> int:
        """At least the GPUs the jobs of ``ranked_below(queue, None, evicted)`` hold: those of
        the attempts filed in the queues below, less the evicted ones'. Exact but for
        attempts filed that have not started yet, or ended unread (finished; restarted
        without a filing): each valid entry's attempt holds the GPUs it was filed with."""
        held = sum(self._held[queue + 1:])
        if evicted:
            filed, gpus = self._filed, self._gpus
            for job_id in evicted:
                where = filed.get(job_id)
                if where is not None and where[0] > queue:
                    held -= gpus[job_id]
        return held

    def ranked_below(self, queue: int, key: tuple[float, str] | None,
                     evicted: Container[str] = ()) -> Iterator[Job]:
        """Running jobs ranked after (queue, key), the lowest-ranked first, less those whose
        id is in ``evicted`` when met (read as the search goes: it marks its victims); with
        ``key`` None, those of the queues below ``queue`` only. An entry of a job that ended
        goes when read (``_purge``): the lists are read from the tail, so a deletion moves
        none of the entries still to read."""
        if key is not None and not queue and self._top is not None:
            self._sort_top()
        self._sort_pending()
        running = JobStatus.RUNNING
        for lower in range(len(self._entries) - 1, queue, -1):
            # ``_valid_in(lower, 0, evicted)``, inlined: one generator fewer per victim read
            entries, filed = self._entries[lower], self._filed
            for index in range(len(entries) - 1, -1, -1):
                job, started = entries[index]
                if job.status is running and job.run_started == started:
                    where = filed.get(job.job_id)
                    if (where is not None and where[0] == lower and where[1] == started
                            and job.job_id not in evicted):
                        yield job
                elif job.status in TERMINAL:
                    self._purge(lower, index)
        if key is not None:
            yield from self._valid_in(queue, bisect.bisect_right(self._keys[queue], key),
                                      evicted)

    def _sort_top(self) -> None:
        """A search reads queue 0: its filings are sorted in from now on (the live one of
        each job: ``_top`` keeps a job's latest filing, an older one of it was stale)."""
        top, self._top, filed = self._top, None, self._filed
        assert top is not None
        self._pending.extend([(job, 0, filed[job_id][1]) for job_id, job in top.items()])

    def _valid_in(self, queue: int, first: int, evicted: Container[str]) -> Iterator[Job]:
        entries, filed, running = self._entries[queue], self._filed, JobStatus.RUNNING
        for index in range(len(entries) - 1, first - 1, -1):
            job, started = entries[index]
            # ``_valid``, inlined: victim searches read many entries, stale ones included.
            if job.status is running and job.run_started == started:
                where = filed.get(job.job_id)
                if (where is not None and where[0] == queue and where[1] == started
                        and job.job_id not in evicted):
                    yield job
            elif job.status in TERMINAL:
                self._purge(queue, index)

    def _valid(self, job: Job, filed: tuple[int, float]) -> bool:
        return (job.status is JobStatus.RUNNING and job.run_started == filed[1]
                and self._filed.get(job.job_id) == filed)

    def _compact(self, now: float) -> None:
        """Keep the valid entries and those filed at ``now`` (in this very cycle) for jobs the
        core has not started yet; a preempted job's old entry goes (it used to stay while the
        job waited, and under contention such entries outnumbered the running jobs)."""
        filed, running = self._filed, JobStatus.RUNNING
        for queue, entries in enumerate(self._entries):
            # one pass telling each entry kept or not; both lists taken by it in C
            keep = [(where := filed.get(job.job_id)) is not None and where[0] == queue
                    and where[1] == started
                    and ((job.run_started == started and job.status is running)
                         or (started == now and job.status in WAITING))
                    for job, started in entries]
            self._entries[queue] = list(compress(entries, keep))
            self._keys[queue] = list(compress(self._keys[queue], keep))
        kept = {job.job_id: (q, started) for q, entries in enumerate(self._entries)
                for job, started in entries}
        if self._top is not None:  # the same test for queue 0's unsorted filings
            top, self._top = self._top, {}
            for job_id, job in top.items():
                started = filed[job_id][1]
                if ((job.run_started == started and job.status is running)
                        or (started == now and job.status in WAITING)):
                    self._top[job_id] = job
                    kept[job_id] = (0, started)
        self._filed = kept
        gpus, held = self._gpus, [0] * len(self._held)
        self._gpus = {job_id: gpus[job_id] for job_id, (queue, _) in self._filed.items()
                      if queue}
        for job_id, count in self._gpus.items():
            held[self._filed[job_id][0]] += count
        self._held = held
        live = self._size = len(self._filed)
        self._compact_above = live + live // 2 + 16
