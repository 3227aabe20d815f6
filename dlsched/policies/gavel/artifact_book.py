"""The per-job rows of Gavel's simulator as ``ArtifactGavelRounds`` keeps them
(stanford-futuredata/gavel ``scheduler/scheduler.py``: ``_job_time_so_far``,
``_deficits``, ``_allocation``, ``_worker_time_so_far``), in numpy arrays by slot.

A round reads and credits all of its jobs at once: one list comprehension per job attribute,
then whole-array arithmetic (the same float operations, element by element, as a loop over
the jobs makes: a round of ~70 jobs then costs a few numpy calls, not ~70 Python bodies).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

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
        # the five rows of a slot in one block (``time``, ``deficit``, ``x``, ``speed``,
        # ``relative`` are its views): a new job's rows written by one assignment
        self._block = np.zeros((5, 64, n_types))
        self._views()
        self._new_rows: dict[tuple[int, int, float], tuple[np.ndarray, ...]] = {}

    def _views(self) -> None:
        self.time, self.deficit, self.x, self.speed, self.relative = self._block

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

    def add_row(self, job_id: str, half: float, speed: np.ndarray,
                relative: np.ndarray) -> int:
        """``add`` with the job's speed rows written."""
        slot = self._slot_for(job_id)
        key = (id(speed), id(relative), half)
        known = self._new_rows.get(key)
        if known is None or known[0] is not speed or known[1] is not relative:
            rows = np.zeros((5, len(speed)))
            rows[0], rows[3], rows[4] = half, speed, relative
            known = self._new_rows[key] = (speed, relative, rows)
        self._block[:, slot] = known[2]  # (one write for the five rows, ~1k instructions each)
        return slot

    def _slot_for(self, job_id: str) -> int:
        """A free slot for a new job (the arrays doubled when full)."""
        if self._free:
            slot = self._free.pop()
        else:
            slot = len(self.slot)
            if slot == len(self.time):
                self._block = np.concatenate([self._block, np.zeros_like(self._block)],
                                             axis=1)
                self._views()
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

    def __init__(self, n_types: int, keep_columns: bool = True,
                 keep_moves: bool = False) -> None:
        self.keep_columns = keep_columns  # try ``_Running.after`` (else read jobs each time)
        # ``after`` also patches the columns of jobs that started or moved, instead of
        # reading every job again (also where a round moves most jobs, agnostic max-min)
        self.keep_moves = keep_columns and keep_moves
        self._kind_list: tuple[np.ndarray, _MovedCells] | None = None  # ``_moved_cells``
        self._worker_time = np.zeros(n_types)  # per type: all jobs' seconds since the reset
        # ``_credit_all``'s additions not yet made, in order (``_flush``): (cells, seconds)
        # to the report rows and (types, seconds) to the type totals, made when read
        self._on_due: list[tuple[np.ndarray, float]] = []
        self._types_due: list[tuple[np.ndarray, float]] = []
        self._since: dict[str, float] = {}  # each running job's last credited time
        self._row: dict[str, int] = {}  # a row of ``_on`` per job ever running
        self._on = np.zeros((64, n_types))
        self._kept: _Running | None = None  # the running jobs' columns of the last credit
        self.reused = 0  # credits that reused them (counted for tests)

    def credit(self, now: float, running: Collection[Job], gpu_kind: np.ndarray,
               book: Book, journal: RunningJournal | None = None) -> None:
        """What ``ArtifactGavelRounds`` credits at each cycle (class docstring); the type
        totals are summed job by job in the running order (``np.add.at``: the same sums).
        The running jobs' cells are kept from the last credit while the core's ``journal``
        tells that only jobs that stopped running changed (``_Running.after``): each job
        then ran the same seconds since that credit, one number for all (``_credit_all``).
        Each job's last credit time is the kept cells' ``when`` while they are kept."""
        last = self._kept
        kept = (last.after(journal, running, self._since, self._moved_cells(gpu_kind, book))
                if last is not None and running else None)
        if kept is not None:
            self.reused += 1
            if now > kept.when:
                self._credit_all(now - kept.when, kept, book)
            self._kept, kept.when = kept, now
            return
        if last is not None:  # its jobs were all credited at ``last.when``
            self._since.update(dict.fromkeys(last.ids, last.when))
        self._kept = None
        if running:
            self._kept = self._credit_each(now, running, gpu_kind, book, journal)

    @property
    def worker_time(self) -> np.ndarray:
        """Each type's seconds since the reset (the additions due made first)."""
        if self._types_due:
            _flush(self._worker_time, self._types_due)
        return self._worker_time

    def restart_worker_time(self, total: float) -> None:
        """Every type's total set to ``total`` (a reset: the additions due are dropped)."""
        self._types_due.clear()
        self._worker_time[:] = total

    def _report_rows(self) -> np.ndarray:
        """``_on`` with the additions due made."""
        if self._on_due:
            _flush(self._on.reshape(-1), self._on_due)
        return self._on

    def _credit_each(self, now: float, running: Collection[Job], gpu_kind: np.ndarray,
                     book: Book, journal: RunningJournal | None) -> _Running:
        """Each running job's seconds since its last credit or its start, whichever is
        later, read job by job; the cells to keep for the next credit."""
        ids = [job.job_id for job in running]
        rows, slot_of = self._row, book.slot
        started = np.array([now if job.run_started is None else job.run_started
                            for job in running])
        kinds = gpu_kind[[job.allocation[0] for job in running]]
        on_rows = np.array([rows.setdefault(job_id, len(rows)) for job_id in ids])
        self._report_rows()
        if len(rows) > len(self._on):
            self._on = np.concatenate([self._on, np.zeros((len(rows) + len(self._on),
                                                           self._on.shape[1]))])
        slots = np.array([slot_of.get(job_id, -1) for job_id in ids])
        since = np.array([self._since.get(job_id, -np.inf) for job_id in ids])
        seconds = now - np.maximum(since, started)
        ran = seconds > 0.0
        if ran.all():
            self._on[on_rows, kinds] += seconds
        else:
            self._on[on_rows[ran], kinds[ran]] += seconds[ran]
        tracked = ran & (slots >= 0)  # not on its first cycle
        if tracked.any():  # one (slot, type) cell per job
            book.time[slots[tracked], kinds[tracked]] += seconds[tracked]
            np.add.at(self.worker_time, kinds[tracked], seconds[tracked])
        # a job's slot may come later (tracked after its first credit): read again then
        reuse = self.keep_columns and journal is not None and bool((slots >= 0).all()) and \
            not any(j.run_started is None for j in running)
        n_types = self._on.shape[1]
        return _Running(ids, kinds.tolist(), on_rows * n_types + kinds,
                        slots * n_types + kinds, journal.count if reuse else None, now)

    def _moved_cells(self, gpu_kind: np.ndarray, book: Book) -> _MovedCells | None:
        """How ``_Running.after`` reads a job that started or moved since the kept credit
        (None: it does not; the caller reads every job then): ``_MovedCells``."""
        if not self.keep_moves:
            return None
        # each GPU's type as a Python list, once per array: a numpy scalar read and ``int``
        # cost ~1.5k instructions a moved job, ~25,000 moves in agnostic max-min's run
        # (kept while the GPU types and the book stay: built once, not at each credit)
        kinds = self._kind_list
        if kinds is None or kinds[0] is not gpu_kind or kinds[1].slot_of is not book.slot:
            kinds = self._kind_list = (gpu_kind, _MovedCells(self, book.slot,
                                                             gpu_kind.tolist()))
        return kinds[1]

    def grow(self, row: int) -> None:
        """Room in the report rows for ``row``."""
        while row >= len(self._on):
            self._on = np.concatenate([self._on, np.zeros_like(self._on)])

    def _credit_all(self, seconds: float, kept: _Running, book: Book) -> None:
        """``_credit_each`` where every job ran ``seconds`` since ``kept.when`` and has a
        book slot: the same cells get the same sums, the type totals ``seconds`` once per
        job of the type. The report rows and the type totals get theirs when next read
        (``_flush``: the same additions in the same order; most credits' totals are never
        read, a reset sets them again, and the report rows are read only for reports)."""
        book.time.reshape(-1)[kept.time_cells] += seconds
        on_due, types_due = self._on_due, self._types_due
        on_due.append((kept.on_cells, seconds))
        types_due.append((kept.kind_array(len(self._worker_time)), seconds))
        if len(on_due) >= _DUE_MOST:
            self._report_rows()
        if len(types_due) >= _DUE_MOST:
            _flush(self._worker_time, types_due)

    def forget(self, job_id: str) -> None:
        """A job left: no credit start kept (its report row stays)."""
        self._since.pop(job_id, None)

    def seconds_on(self, job_id: str) -> np.ndarray:
        """Seconds the job has run on each GPU type (cluster type order); empty before it
        first ran."""
        row = self._row.get(job_id)
        return np.zeros(0) if row is None else self._report_rows()[row].copy()


_DUE_MOST = 256  # additions kept due at most (each holds a credit's cells)


def _flush(target: np.ndarray, due: list[tuple[np.ndarray, float]]) -> None:
    """The additions ``due`` to ``target`` (cells or types, and seconds each) made in their
    order and emptied: ``np.add.at`` adds element by element, unbuffered, in index order,
    so each element gets the same floats added in the same order as one addition per
    credit made them (each credit's cells are distinct)."""
    if len(due) == 1:
        cells, seconds = due[0]
        np.add.at(target, cells, seconds)
    else:
        np.add.at(target, np.concatenate([cells for cells, _ in due]),
                  np.repeat([seconds for _, seconds in due], [len(c) for c, _ in due]))
    due.clear()


class _MovedCells:
    """What ``_Running._patched`` reads a moved or started job's cells from (the job's type
    and its report and book cells): the credits (report rows, last credit times), the
    book's slots, each GPU's type. A job cannot share the kept credit when it has no book
    slot yet or did not start at that credit's time. Read in ``_patched``'s loop itself (a
    function call per moved job cost ~2k instructions, ~25,000 moves in agnostic max-min's
    run)."""

    __slots__ = ("credits", "slot_of", "kind_of")

    def __init__(self, credits: Credits, slot_of: dict[str, int], kind_of: list[int]) -> None:
        self.credits, self.slot_of, self.kind_of = credits, slot_of, kind_of


class _Running:
    """The running jobs of a credit (in the running order when read; ``_without`` fills
    gaps from the end: no sum depends on the order): ids, GPU types, and their cells in
    the flattened report rows (``Credits._on``) and book times (one per job: distinct);
    ``count``: the journal's count they were read at (None: never reused); ``when``: the
    time of the credit that last used them (every job's last credit)."""

    def __init__(self, ids: list[str], kinds: list[int], on_cells: np.ndarray,
                 time_cells: np.ndarray, count: int | None, when: float) -> None:
        self.ids, self.kinds, self.count, self.when = ids, kinds, count, when
        self.on_cells, self.time_cells = on_cells, time_cells
        self._kind_array: np.ndarray | None = None

    def kind_array(self, n_types: int) -> np.ndarray:
        """``kinds`` as an index array, made once: each book cell's column (``slot *
        n_types + kind``; one numpy operation, not a list read element by element)."""
        if self._kind_array is None:
            self._kind_array = self.time_cells % n_types
        return self._kind_array

    def after(self, journal: RunningJournal | None, running: Collection[Job],
              since: dict[str, float],
              moved: _MovedCells | None = None) -> _Running | None:
        """These cells for the running jobs now, when every change since ``count`` was of
        a job that no longer runs (a completion, a preemption: its cells are dropped, its
        last credit written to ``since``, ``_without``); with ``moved``
        (``Credits._moved_cells``), also when jobs started or moved at this credit's time
        (``_patched``); else None."""
        if journal is None or self.count is None:
            return None
        changed = journal.since(self.count)
        if changed is None:
            return None
        if not changed:
            return self if len(self.ids) == len(running) else None
        if any(job.status is JobStatus.RUNNING for job in changed):
            named = {job.job_id for job in changed}  # a move is noted twice: stop, start
            if moved is None:
                return None
            # also when most jobs moved (agnostic max-min: ~74% a round): patching them
            # costs less than ``_credit_each``'s reading of every job (session 32)
            table = getattr(running, "mapping", None)  # the core's running table
            if table is not None and 3 * len(named) < len(self.ids):
                return _changed_cells(self, {job.job_id: job for job in changed}, table,
                                      since, moved, journal.count)
            return self._patched(named, running, since, moved, journal.count)
        positions = self._positions({job.job_id for job in changed})
        if len(self.ids) - len(positions) != len(running):
            return None
        return self._without(positions, since, journal.count)

    def _without(self, positions: list[int], since: dict[str, float], count: int
                 ) -> _Running:
        """These cells less those at ``positions`` (jobs that stopped: their last credit
        written to ``since``), each gap filled by the last cells: the cells' order changes
        no sum (each cell is one job's, and a type's total adds the same number once per
        job of the type). Copies and a few element writes, where a mask per array cost
        ~25k instructions (a completion in ~280 of FIFO's ~390 credits)."""
        ids, kinds = self.ids.copy(), self.kinds.copy()
        since.update(dict.fromkeys([ids[p] for p in positions], self.when))
        on, time = self.on_cells.copy(), self.time_cells.copy()
        types = self._kind_array.copy() if self._kind_array is not None else None
        for position in sorted(positions, reverse=True):  # a gap's last cells are kept
            last = len(ids) - 1
            if position != last:
                ids[position], kinds[position] = ids[last], kinds[last]
                on[position], time[position] = on[last], time[last]
                if types is not None:
                    types[position] = types[last]
            ids.pop()
            kinds.pop()
        n = len(ids)
        answer = _Running(ids, kinds, on[:n], time[:n], count, self.when)
        if types is not None:
            answer._kind_array = types[:n]
        return answer

    def _patched(self, named: set[str], running: Collection[Job],
                 since: dict[str, float], moved: _MovedCells, count: int
                 ) -> _Running | None:
        """The cells in the running order now: a job the journal does not name (``named``)
        keeps its cells, one that runs now and is named (started, or moved to other GPUs)
        gets them read again (``moved``, inlined: None when it cannot share this credit,
        then so does the answer), and the jobs that left are dropped, their last credit
        written to ``since`` as ``_credit_each`` would have read it."""
        position = dict(zip(self.ids, range(len(self.ids)), strict=True))
        old_on, old_time, old_kinds = self.on_cells.tolist(), self.time_cells.tolist(), \
            self.kinds
        ids, kinds, on_cells, time_cells = [], [], [], []
        when, credits, slot_of, kind_of = self.when, moved.credits, moved.slot_of, \
            moved.kind_of
        rows, n_types, grown = credits._row, credits._on.shape[1], len(credits._on)
        for job in running:
            job_id = job.job_id
            at = position.pop(job_id, None)
            if at is None or job_id in named:  # ``moved(job, when)``, inlined
                slot = slot_of.get(job_id)
                if slot is None or job.run_started != when or since.get(job_id, when) > when:
                    return None
                kind = kind_of[job.allocation[0]]
                row = rows.setdefault(job_id, len(rows))
                if row >= grown:
                    credits.grow(row)
                    grown = len(credits._on)
                on_cell, time_cell = row * n_types + kind, slot * n_types + kind
            else:
                kind, on_cell, time_cell = old_kinds[at], old_on[at], old_time[at]
            ids.append(job_id)
            kinds.append(kind)
            on_cells.append(on_cell)
            time_cells.append(time_cell)
        since.update(dict.fromkeys(position, when))  # the jobs that left
        return _Running(ids, kinds, np.array(on_cells, dtype=np.intp),
                        np.array(time_cells, dtype=np.intp), count, when)

    def _positions(self, gone: set[str]) -> list[int]:
        """Where the jobs of ``gone`` are in ``ids`` (a job may have started and stopped
        since: it is in none)."""
        found = []
        for job_id in gone:
            try:
                found.append(self.ids.index(job_id))
            except ValueError:
                continue
        return found


def _changed_cells(kept: _Running, named: dict[str, Job], table: Mapping[str, Job],
                   since: dict[str, float], moved: _MovedCells, count: int
                   ) -> _Running | None:
    """``_Running._patched`` told by the jobs the journal names alone, where they are few
    (max-min and LAS rounds move ~15 of ~70 jobs): a named job still in the core's running
    ``table`` gets its cells read again where it was (moved) or at the end (started), one
    no longer there is dropped, its gap filled by the last cells (``_without``; the cells'
    order changes no sum). Every other kept job still runs: a job leaves the table only
    through a change the journal names. None as ``_patched`` answers it (a named job that
    cannot share this credit), or where the counts do not add up."""
    ids, kinds = kept.ids.copy(), kept.kinds.copy()
    on, time = kept.on_cells.copy(), kept.time_cells.copy()
    position = dict(zip(ids, range(len(ids)), strict=True))
    when, credits, slot_of, kind_of = kept.when, moved.credits, moved.slot_of, moved.kind_of
    rows, n_types, grown = credits._row, credits._on.shape[1], len(credits._on)
    gone, started = [], []
    for job_id, job in named.items():
        at = position.get(job_id)
        if table.get(job_id) is not job:
            if at is not None:
                gone.append(at)
            continue
        slot = slot_of.get(job_id)  # ``moved(job, when)``, as ``_patched`` reads it
        if slot is None or job.run_started != when or since.get(job_id, when) > when:
            return None
        kind = kind_of[job.allocation[0]]
        row = rows.setdefault(job_id, len(rows))
        if row >= grown:
            credits.grow(row)
            grown = len(credits._on)
        if at is None:
            started.append((job_id, kind, row * n_types + kind, slot * n_types + kind))
        else:
            kinds[at], on[at], time[at] = kind, row * n_types + kind, slot * n_types + kind
    if len(ids) - len(gone) + len(started) != len(table):
        return None
    since.update(dict.fromkeys([ids[at] for at in gone], when))  # the jobs that left
    for at in sorted(gone, reverse=True):  # a gap's last cells are kept (``_without``)
        last = len(ids) - 1
        if at != last:
            ids[at], kinds[at], on[at], time[at] = ids[last], kinds[last], on[last], time[last]
        ids.pop()
        kinds.pop()
    n = len(ids)
    on, time = on[:n], time[:n]
    if started:
        new_ids, new_kinds, new_on, new_time = zip(*started, strict=True)
        ids.extend(new_ids)
        kinds.extend(new_kinds)
        on = np.concatenate([on, np.array(new_on, dtype=np.intp)])
        time = np.concatenate([time, np.array(new_time, dtype=np.intp)])
    return _Running(ids, kinds, on, time, count, when)
