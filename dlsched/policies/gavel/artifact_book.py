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

from dlsched.workload.job import Job


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

    def __init__(self, n_types: int) -> None:
        self.worker_time = np.zeros(n_types)  # per type: all jobs' seconds since the reset
        self._since: dict[str, float] = {}  # each running job's last credited time
        self._row: dict[str, int] = {}  # a row of ``_on`` per job ever running
        self._on = np.zeros((64, n_types))

    def credit(self, now: float, running: Collection[Job], gpu_kind: np.ndarray,
               book: Book) -> None:
        """What ``ArtifactGavelRounds`` credits at each cycle (class docstring); the type
        totals are summed job by job in the running order (``np.add.at``: the same sums)."""
        if not running:
            return
        ids = [job.job_id for job in running]
        since_of, rows = self._since, self._row
        started = np.array([now if job.run_started is None else job.run_started
                            for job in running])
        since = np.array([since_of.get(job_id, -np.inf) for job_id in ids])
        seconds = now - np.maximum(since, started)
        kinds = gpu_kind[[job.allocation[0] for job in running]]
        on_rows = np.array([rows.setdefault(job_id, len(rows)) for job_id in ids])
        if len(rows) > len(self._on):
            self._on = np.concatenate([self._on, np.zeros((len(rows) + len(self._on),
                                                           self._on.shape[1]))])
        ran = seconds > 0.0
        if ran.all():
            self._on[on_rows, kinds] += seconds
        else:
            self._on[on_rows[ran], kinds[ran]] += seconds[ran]
        slot_of = book.slot
        slots = np.array([slot_of.get(job_id, -1) for job_id in ids])
        tracked = ran & (slots >= 0)  # not on its first cycle
        if tracked.any():  # one (slot, type) cell per job
            book.time[slots[tracked], kinds[tracked]] += seconds[tracked]
            np.add.at(self.worker_time, kinds[tracked], seconds[tracked])
        since_of.update(dict.fromkeys(ids, now))

    def forget(self, job_id: str) -> None:
        """A job left: no credit start kept (its report row stays)."""
        self._since.pop(job_id, None)

    def seconds_on(self, job_id: str) -> np.ndarray:
        """Seconds the job has run on each GPU type (cluster type order); empty before it
        first ran."""
        row = self._row.get(job_id)
        return np.zeros(0) if row is None else self._on[row].copy()
