"""The per-job rows of Gavel's simulator as ``ArtifactGavelRounds`` keeps them
(stanford-futuredata/gavel ``scheduler/scheduler.py``: ``_job_time_so_far``,
``_deficits``, ``_allocation``, ``_worker_time_so_far``), in numpy arrays by slot.

A round reads and credits all of its jobs at once: one list comprehension per job attribute,
then whole-array arithmetic (the same float operations, element by element, as a loop over
the jobs makes: a round of ~70 jobs then costs a few numpy calls, not ~70 Python bodies).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

import numpy as np

from dlsched.scheduling.journal import RunningJournal
from dlsched.workload.job import Job, JobStatus


class Book:
    """The artifact's per-job rows, one slot (row) per tracked job in arrays: seconds on each
    type since the last reset, deficit per type, X (zeros: no X yet), and the job's speed on
    each type with that speed relative to its fastest type (both fixed while it is tracked).
    A round reads its jobs' rows with one index instead of stacking a small array per job."""

    def __init__(self, n_types: int) -> None:
        self.slot: dict[str, int] = {}
        self._free: list[int] = []
        self.time = np.zeros((64, n_types))
        self.deficit = np.zeros((64, n_types))
        self.x = np.zeros((64, n_types))
        self.speed = np.zeros((64, n_types))
        self.relative = np.zeros((64, n_types))

    def add(self, job_id: str, half: float) -> int:
        """Gavel's ``add_job``: half a round on every type, no deficit, no X (the caller
        fills the speed rows)."""
        return self.add_all([job_id], half)[0]

    def add_all(self, job_ids: Sequence[str], half: float) -> list[int]:
        """``add`` of each job, their rows written at once."""
        slots = [self._slot_for(job_id) for job_id in job_ids]
        self.time[slots] = half
        self.deficit[slots] = 0.0
        self.x[slots] = 0.0
        return slots

    def _slot_for(self, job_id: str) -> int:
        """A free slot for a new job (the arrays doubled when full)."""
        if self._free:
            slot = self._free.pop()
        else:
            slot = len(self.slot)
            if slot == len(self.time):
                self.time, self.deficit, self.x, self.speed, self.relative = (
                    np.concatenate([a, np.zeros_like(a)]) for a in (
                        self.time, self.deficit, self.x, self.speed, self.relative))
        self.slot[job_id] = slot
        return slot

    def remove(self, job_id: str) -> None:
        self._free.append(self.slot.pop(job_id))

    def slots(self, job_ids: Sequence[str]) -> list[int]:
        slot = self.slot
        return [slot[job_id] for job_id in job_ids]


class Credits:
    """Each running job's time since the last cycle, once per job (not per GPU), on its type:
    to the job's book row and to the type's total, as Gavel's ``_done_callback`` adds it;
    and to the job's seconds per type for reports (``seconds_on``: every job ever seen, a row
    each, kept after it leaves)."""

    def __init__(self, n_types: int, keep_columns: bool = True) -> None:
        self.keep_columns = keep_columns  # try ``_Running.after`` (else read jobs each time)
        self.worker_time = np.zeros(n_types)  # per type: all jobs' seconds since the reset
        self._since: dict[str, float] = {}  # each running job's last credited time
        self._row: dict[str, int] = {}  # a row of ``_on`` per job ever running
        self._on = np.zeros((64, n_types))
        self._kept: _Running | None = None  # the running jobs' columns of the last credit
        self.reused = 0  # credits that reused them (counted for tests)

    def credit(self, now: float, running: Collection[Job], gpu_kind: np.ndarray,
               book: Book, journal: RunningJournal | None = None) -> None:
        """What ``ArtifactGavelRounds`` credits at each cycle (class docstring); the type
        totals are summed job by job in the running order (``np.add.at``: the same sums).
        The running jobs' columns are kept from the last credit while the core's ``journal``
        tells that only jobs that stopped running changed (``_Running.after``)."""
        if not running:
            self._kept = None
            return
        kept = self._kept.after(journal, len(running)) if self._kept is not None else None
        if kept is None:
            kept = self._columns(now, running, gpu_kind, book, journal)
            since = np.array([self._since.get(job_id, -np.inf) for job_id in kept.ids])
        else:  # every job was credited at the last credit, ``kept.when``
            since = kept.when
            self.reused += 1
        self._kept, kept.when = kept, now
        ids, kinds, slots = kept.ids, kept.kinds, kept.slots
        seconds = now - np.maximum(since, kept.started)
        on_rows = kept.on_rows
        ran = seconds > 0.0
        if ran.all():
            self._on[on_rows, kinds] += seconds
        else:
            self._on[on_rows[ran], kinds[ran]] += seconds[ran]
        tracked = ran & (slots >= 0)  # not on its first cycle
        if tracked.any():  # one (slot, type) cell per job
            book.time[slots[tracked], kinds[tracked]] += seconds[tracked]
            np.add.at(self.worker_time, kinds[tracked], seconds[tracked])
        self._since.update(dict.fromkeys(ids, now))

    def _columns(self, now: float, running: Collection[Job], gpu_kind: np.ndarray,
                 book: Book, journal: RunningJournal | None) -> _Running:
        """The running jobs' columns, read job by job."""
        ids = [job.job_id for job in running]
        rows, slot_of = self._row, book.slot
        started = np.array([now if job.run_started is None else job.run_started
                            for job in running])
        kinds = gpu_kind[[job.allocation[0] for job in running]]
        on_rows = np.array([rows.setdefault(job_id, len(rows)) for job_id in ids])
        if len(rows) > len(self._on):
            self._on = np.concatenate([self._on, np.zeros((len(rows) + len(self._on),
                                                           self._on.shape[1]))])
        slots = np.array([slot_of.get(job_id, -1) for job_id in ids])
        # a job's slot may come later (tracked after its first credit): read again then
        reuse = self.keep_columns and bool((slots >= 0).all()) and not any(
            j.run_started is None for j in running)
        count = journal.count if journal is not None and reuse else None
        return _Running(ids, started, kinds, on_rows, slots, count)

    def forget(self, job_id: str) -> None:
        """A job left: no credit start kept (its report row stays)."""
        self._since.pop(job_id, None)

    def seconds_on(self, job_id: str) -> np.ndarray:
        """Seconds the job has run on each GPU type (cluster type order); empty before it
        first ran."""
        row = self._row.get(job_id)
        return np.zeros(0) if row is None else self._on[row].copy()


class _Running:
    """The running jobs' columns of a credit, in the running order: ids, run starts, GPU
    types, report rows, book slots; ``count``: the journal's count they were read at (None:
    never reused). ``when``: the time of the credit that last used them."""

    def __init__(self, ids: list[str], started: np.ndarray, kinds: np.ndarray,
                 on_rows: np.ndarray, slots: np.ndarray, count: int | None) -> None:
        self.ids, self.started, self.kinds = ids, started, kinds
        self.on_rows, self.slots, self.count = on_rows, slots, count
        self.when = 0.0

    def after(self, journal: RunningJournal | None, running: int) -> _Running | None:
        """These columns for the running jobs now, when every change since ``count`` was of
        a job that no longer runs (a completion, a preemption: its column is dropped, the
        others keep their order, as the core's running jobs do); else None."""
        if journal is None or self.count is None:
            return None
        changed = journal.since(self.count)
        if changed is None:
            return None
        if changed:
            if any(job.status is JobStatus.RUNNING for job in changed):
                return None
            gone = {job.job_id for job in changed}
            keep = np.array([job_id not in gone for job_id in self.ids])
            kept = _Running([job_id for job_id in self.ids if job_id not in gone],
                            self.started[keep], self.kinds[keep], self.on_rows[keep],
                            self.slots[keep], journal.count)
            kept.when = self.when
        else:
            kept = self
        return kept if len(kept.ids) == running else None
