"""Running jobs by expected end, for EASY backfilling's reservation (issue 14).

The reservation reads running jobs in order of expected end (``now`` + oracle remaining time)
until enough GPUs are freed: usually a few. Sorting every running job in every cycle cost more
than the rest of the cycle. A running job's expected end never moves earlier while it runs at
most at its reference rate (the oracle's rate: the requested size on the best GPU type): the end
advances with the clock during a restart pause and stays put at the reference rate. So ends
computed in earlier cycles, less a rounding margin, are lower bounds of today's: a heap of them
gives the jobs in order, computing today's end only for the jobs the reservation reads (the
"lazy" order: the smallest bound's job is next once its end now is at most every other bound).
Jobs running faster than their reference rate (a throughput model that allows it) make the
bounds unsafe: then every end is computed, as before.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Collection, Iterator

from dlsched.scheduling.journal import RunningJournal
from dlsched.workload.job import Job, JobStatus

_RUNNING = JobStatus.RUNNING
_MISSING = object()
Entry = tuple[float, int, Job, float | None]  # (bound or end, filing number, job, attempt start)


class RunningEnds:
    def __init__(self) -> None:
        self._heap: list[Entry] = []
        self._ranked: list[tuple[float, int, Entry]] = []  # this cycle's (end, GPUs, entry)
        self._fresh: list[Entry] = []  # ends computed in this cycle, not ranked yet
        self._filed: dict[str, tuple[float | None, float]] = {}  # job -> (start, reference)
        self._filings = 0
        self._live = 0
        self._end_of: Callable[[Job], float] = _unset
        # the core's count of running-job changes at the last look at the running jobs
        # (``refresh``); what that look found stays as it left it until the next look:
        self._seen: int | None = None
        self._fast: set[str] = set()  # running jobs faster than their reference rate
        self._inexact: set[str] = set()  # running jobs not at their reference rate
        # the latest end of a pause among the jobs filed so far (a bound: they may have ended)
        self._paused = -math.inf

    def refresh(self, running: Collection[Job], end_of: Callable[[Job], float],
                reference_of: Callable[[Job], float], changes: int | None = None,
                journal: RunningJournal | None = None) -> bool:
        """A new cycle: file jobs started since. False when a job runs faster than its
        reference rate (the bounds do not hold: the caller computes every end). ``changes``:
        the snapshot's ``running_changes``; while it stays, no job started, stopped or changed
        its rate, so the running jobs are not looked at again; when it moved, the ``journal``
        names the jobs that moved it, and only they are looked at (every running job when it
        cannot tell)."""
        heap = self._heap
        for end, _, entry in self._ranked:
            heapq.heappush(heap, (_lower(end), entry[1], entry[2], entry[3]))
        for end, filing, job, started in self._fresh:
            heapq.heappush(heap, (_lower(end), filing, job, started))
        self._ranked, self._fresh = [], []
        self._end_of = end_of
        seen = self._seen
        if changes is not None and seen == changes:
            return not self._fast
        told = None if journal is None or seen is None else journal.since(seen)
        if told is None:
            self._fast.clear()
            self._inexact.clear()
            told = running
        for job in told:
            self._look(job, end_of, reference_of)
        if len(heap) > 2 * self._live + 64:
            self._compact()
        self._seen = changes
        return not self._fast

    def _look(self, job: Job, end_of: Callable[[Job], float],
              reference_of: Callable[[Job], float]) -> None:
        """File a job that started since it was last looked at; note whether it runs at,
        above or below its reference rate (a job that stopped: none of these)."""
        job_id = job.job_id
        if job.status is not _RUNNING or job.run_started is None:
            self._fast.discard(job_id)
            self._inexact.discard(job_id)
            return
        known = self._filed.get(job_id, _MISSING)
        if known is _MISSING or known[0] != job.run_started:  # type: ignore[index]
            reference = reference_of(job)
            self._filed[job_id] = (job.run_started, reference)
            self._filings += 1
            heapq.heappush(self._heap, (_lower(end_of(job)), self._filings, job,
                                        job.run_started))
            pause = max(job.progress_time, job.productive_from)
            if pause > self._paused:
                self._paused = pause
        else:
            reference = known[1]  # type: ignore[index]
        if job.rate == reference:
            self._inexact.discard(job_id)
            self._fast.discard(job_id)
            return
        self._inexact.add(job_id)
        if job.rate > reference:
            self._fast.add(job_id)
        else:
            self._fast.discard(job_id)

    def fixed(self, changes: int | None, since: float) -> bool:
        """Whether every running job's expected end has stayed put since ``since`` (an earlier
        time of the look ``refresh`` made at ``changes``): none started, stopped or changed
        its rate since that look, each runs at its reference rate, and no pause (a restart's)
        had yet to end at ``since``. An end ``now`` + remaining work / reference rate is then
        the same at any time: a reservation computed at ``since`` holds now."""
        return (changes is not None and self._seen == changes and not self._inexact
                and since >= self._paused)

    def ascending(self) -> Iterator[tuple[float, int]]:
        """(end now, GPUs) of the running jobs, in ascending order."""
        ranked, at = self._ranked, 0
        while True:
            if at == len(ranked) and not self._rank_next():
                return
            end = ranked[at][0]
            while ranked[-1][0] == end and self._rank_next():
                pass  # every job ending then is ranked: the pairs put fewer GPUs first
            tied = at + 1
            while tied < len(ranked) and ranked[tied][0] == end:
                tied += 1
            yield from sorted((e[0], e[1]) for e in ranked[at:tied])
            at = tied

    def _rank_next(self) -> bool:
        """Move the running job with the smallest end now to ``_ranked``: ends computed in
        this cycle wait in ``_fresh`` until the smallest is at most every bound left."""
        heap, fresh, filed, end_of = self._heap, self._fresh, self._filed, self._end_of
        while True:
            while heap:
                _, _, job, started = heap[0]
                known = filed.get(job.job_id)
                if (job.status is _RUNNING and job.run_started == started
                        and known is not None and known[0] == started):
                    break
                heapq.heappop(heap)  # stale: it stopped, or runs another attempt
            if fresh and (not heap or fresh[0][0] <= heap[0][0]):
                end, filing, job, started = heapq.heappop(fresh)
                self._ranked.append((end, len(job.allocation), (end, filing, job, started)))
                return True
            if not heap:
                return False
            _, filing, job, started = heapq.heappop(heap)
            heapq.heappush(fresh, (end_of(job), filing, job, started))

    def _compact(self) -> None:
        filed = self._filed
        live = [e for e in self._heap if e[2].status is _RUNNING and e[2].run_started == e[3]
                and (known := filed.get(e[2].job_id)) is not None and known[0] == e[3]]
        heapq.heapify(live)
        self._heap = live
        self._filed = {e[2].job_id: filed[e[2].job_id] for e in live}
        self._live = len(live)


def _lower(end: float) -> float:
    """A bound safely below ``end`` however the next computation of it rounds."""
    return end - 1e-9 * max(1.0, abs(end))


def _unset(job: Job) -> float:
    raise RuntimeError("RunningEnds.refresh must run before a search")
