"""Gavel's rounds as its own simulator runs them (stanford-futuredata/gavel ``scheduler/
scheduler.py``): the ``mechanism=artifact`` option of the round-based Gavel policies.

``GavelRounds`` follows the paper (§5): priority ``X / (fraction of time since arrival)``, ``X``
re-solved at each round whose set of jobs changed. Gavel's simulator differs, and this class
does what it does, so that dlsched can be checked against it side by side (setting
``gavel-osdi20``):

- **Allocation resets** (``_update_priorities``, ``_reset_time_run_so_far``): ``X`` is
  re-solved only when jobs arrived or left *and* at least ``reset_seconds`` (1,920 s) passed
  since the last reset (or no reset has happened at a time > 0 yet). A reset adds to each
  job's *deficit* on each type the time it should have had (``X * elapsed``) minus the time it
  had, and restarts each job's time on each type at half a round.
- **Priority** on type ``t``: ``X[j, t] / (job's time on t / all jobs' time on t, since the
  reset)``; ``X * 1e9`` before the type has run anything; 0 where ``X = 0``, where the job
  cannot run, and for a job that arrived after the last solve (it has no ``X``).
- **Order**: one list per GPU type, sorted by (priority, deficit, ``X``), highest first, ties
  in arrival order; the lists are walked one type after another, fastest type first
  (heterogeneity-aware policies) or in a random order drawn each round (agnostic ones). A
  job takes the first entry with room; FIFO skips entries of priority 0.
- **Jobs without X** may be picked (they hold the GPUs in that round's count) but are given no
  workers: a job waits for the first reset after its arrival, and those GPUs stay idle.
- Nothing starts between rounds (run it with ``--rounds-only``).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from operator import attrgetter

import numpy as np

from dlsched.cluster.cluster import Cluster
from dlsched.perf.gavel_table import GavelThroughputs, worker_type
from dlsched.policies.gavel.artifact_book import Book, Credits
from dlsched.policies.gavel.artifact_settled import held_type, single_types
from dlsched.policies.gavel.assign import Entry, place_round, room_by_type
from dlsched.policies.gavel.efficiency import fifo_hetero
from dlsched.policies.gavel.pool_budget import PoolBudget
from dlsched.policies.gavel.problem import Allocation, AllocationProblem
from dlsched.policies.gavel_round import GavelRounds, _Round
from dlsched.scheduling.allocation import Assignment, Targets
from dlsched.scheduling.plugins.filters import pooled_nodes
from dlsched.scheduling.state import ClusterSnapshot, CycleState
from dlsched.slots import slot_builder
from dlsched.workload.job import Job, JobStatus

_ARRIVAL = attrgetter("spec.submit_time", "job_id")  # Gavel's job order: arrival, then id
RESET_SECONDS = 1920.0  # Gavel's minimum_time_between_allocation_resets
_UPDATED = "gavel-artifact-updated"  # the cycle's scratch: ``_update`` ran (is it a round)
UNRUN_PRIORITY = 1e9  # Gavel: "Don't use inf so 2*new_priority > new_priority"
_ENDED = (JobStatus.FINISHED, JobStatus.FAILED, JobStatus.CANCELLED)  # by identity, no hash
# ``Assignment(nodes)`` without ``__post_init__``: ``place_round``'s node tuples are sorted
# (a round moves ~17 jobs in max-min, ~60 in the agnostic one)
_assignment = slot_builder(Assignment, ("nodes",))


class _Rows:
    """The cycle's jobs (arrival order) and what their book rows hold while the jobs and X
    stay the same (between arrivals, departures and solves): slots, speeds, X and the walk's
    fixed sort keys. Each cycle reads only their seconds."""

    def __init__(self, ids: list[str], book: Book) -> None:
        self.ids = ids
        self.row = dict(zip(ids, range(len(ids)), strict=True))
        # (``fromiter``: a list's elements read without ``np.array``'s type discovery)
        self.slots = np.fromiter(book.slots(ids), np.intp, len(ids))
        self.speed = book.speed[self.slots]
        self.x = book.x[self.slots]
        self.allocated = self.x > 0
        self.runnable = self.speed > 0
        self.allowed = self.allocated & self.runnable
        self.neg_x = -self.x
        self.neg_deficit = -book.deficit[self.slots]
        self._needs: list[int] | None = None
        self.one_worker = False  # every row's gang is one GPU (``needs``)
        self.type_order: list[int] | None = None  # ``_type_order``'s, types not shuffled

    def needs(self, workers: dict[str, int]) -> list[int]:
        """Each row's gang (GPUs), read once while the rows stay."""
        if self._needs is None:
            self._needs = [workers[job_id] for job_id in self.ids]
            self.one_worker = self._needs.count(1) == len(self._needs)
        return self._needs


class ArtifactGavelRounds(GavelRounds):
    """``GavelRounds`` with the bookkeeping of Gavel's simulator (module docstring)."""

    def __init__(self, policy: str, objective: object, *, shuffle_types: bool = False,
                 fifo: bool = False, reset_seconds: float = RESET_SECONDS, seed: int = 0,
                 **kwargs: object) -> None:
        super().__init__(policy, objective, **kwargs)  # type: ignore[arg-type]
        self.shuffle_types, self.fifo, self.reset_seconds = shuffle_types, fifo, reset_seconds
        # FIFO in a fixed type order: its rounds may be told settled (``artifact_settled``)
        self._tells_settled = fifo and not shuffle_types
        self._rng = np.random.default_rng(seed)
        self._book: Book | None = None  # per-job seconds, deficits and X (``Book``)
        self._credits: Credits | None = None  # per-type totals, seconds per job (``Credits``)
        self._last_reset = 0.0
        self._changed = False
        self._known: frozenset[str] = frozenset()
        self._rows: _Rows | None = None  # the cycle's jobs' rows, while jobs and X stay
        self._workers: dict[str, int] = {}  # each tracked job's gang (its spec's GPUs)
        self._relatives: dict[int, tuple[np.ndarray, np.ndarray]] = {}  # ``_relative``
        self._room: tuple[object, np.ndarray, np.ndarray] | None = None  # see ``_free_room``
        self._budget: PoolBudget | None = None  # the round's room per pool (``pool_budget``)
        self._kind_of_gpu: tuple[object, np.ndarray] | None = None  # each GPU's type
        self._current: dict[str, tuple[int, ...]] | None = None  # ``_current_nodes``
        self._held: dict[str, int] = {}  # each running job's ``held_type`` (the same jobs)
        self._solved: frozenset[str] = frozenset()  # the jobs of the last solve
        # FIFO: each solved job's one type (``artifact_settled``), while it is tracked
        self._single: dict[str, int] | None = None
        self._ids: list[str] | None = None  # the jobs in arrival order, sorted at a solve
        self._order: list[Job] | None = None  # the last ``_arrival_order``'s jobs
        self._node_kind: tuple[object, list[int]] | None = None  # each node's type
        self._by_nodes: dict[tuple[int, ...], Assignment] = {}  # a move's target (``allocate``)
        self.settled_rounds = 0  # rounds told by ``artifact_settled`` (counted for tests)
        self._journal_count = -1
        self._seen = -1  # the journal's count at the last ``_arrivals``
        # FIFO: resets solved by ``_fifo_solve`` (no problem built), each job's row kept
        self._greedy = objective is fifo_hetero and self.pop_k == 1 and \
            self.refine is None and not self.colocation and not self._reads_isolated
        self._fifo_rows: dict[object, object] = {}
        self._fifo_kinds: dict[tuple[object, ...], object] = {}  # ``_fifo_row`` by kind

    @property
    def _cycle_ids(self) -> list[str]:
        """This cycle's job ids in arrival order (the rows of its view)."""
        return self._rows.ids if self._rows is not None else []

    @property
    def _cycle_slots(self) -> np.ndarray:
        """This cycle's book slots (the same order)."""
        return self._rows.slots if self._rows is not None else np.zeros(0, dtype=np.intp)

    # -- bookkeeping --------------------------------------------------------------------
    def view(self, state: CycleState) -> _Round:
        cached = state.scratch.get(self.name)
        if cached is None:
            cached = state.scratch[self.name] = self._ranked(state, self._is_round(state))
        return cached

    def _is_round(self, state: CycleState) -> bool:
        """``_update``, once per cycle (``allocate`` may answer without the view)."""
        is_round = state.scratch.get(_UPDATED)
        if is_round is None:
            is_round = state.scratch[_UPDATED] = self._update(state)
        return is_round

    def _refresh(self, state: CycleState) -> _Round:
        return self.view(state)

    def _update(self, state: CycleState) -> bool:
        """The cycle's bookkeeping: credits, arrivals and departures, a reset with its solve
        when due. Whether the cycle is a round."""
        now, cluster, snapshot = state.now, state.cluster, state.snapshot
        n_types = len(cluster.type_names)
        is_round = self._round_start is None or (
            now >= self._round_start + self.round_seconds - 1e-6)
        if is_round:
            self._round_start = now
        if self._book is None or self._credits is None:
            # the running jobs' credit columns kept from cycle to cycle, those of the jobs
            # that start or move read again (``Credits``)
            self._book = Book(n_types)
            self._credits = Credits(n_types, keep_columns=True, keep_moves=True)
        book, running, waiting = self._book, snapshot.running, snapshot.waiting
        self._credits.credit(now, running, self._gpu_kinds(cluster), book, snapshot.journal)
        jobs: list[Job] | None = None
        arrivals, known = self._arrivals(snapshot), self._known
        if arrivals is None:
            active = frozenset([*[j.job_id for j in running], *[j.job_id for j in waiting]])
            arrived, departed = active - known, known - active
        else:  # the change alone (a round sees a few arrivals and departures)
            arrivals, departed = arrivals
            arrived = {job.job_id for job in arrivals}
            active = (known - departed) | arrived if arrived or departed else known
        if arrived or departed or self._rows is None:
            if self._single is None:  # no round told settled: its walk needs them all
                jobs = self._arrival_order(running, waiting, active)
            self._track(state, active, jobs, arrivals, (arrived, departed))
            self._rows = None
            self._ids = [j.job_id for j in jobs] if jobs is not None else None
        elapsed = now - self._last_reset
        if is_round and self._changed and (elapsed >= self.reset_seconds
                                           or self._last_reset == 0):
            if jobs is None:
                jobs = self._arrival_order(running, waiting, active)
            self._reset(now, elapsed)
            self._solve(state, jobs)
            self._changed = False
            self._rows, self._ids = None, [j.job_id for j in jobs]
        return is_round

    def _arrival_order(self, running: Collection[Job], waiting: Sequence[Job],
                       active: frozenset[str]) -> list[Job]:
        """The active jobs (``active``: their ids) in arrival order (``_ARRIVAL``), before
        ``_track`` of this cycle: the last order's jobs still active, then the waiting jobs
        not tracked (arrivals; sorted), when those come after the last kept one and the two
        make every active job (a job object is the core's for the job's life); else every
        job sorted. Gavel's agnostic rounds see an arrival or a departure in nearly every
        round: ~100-300 jobs sorted by a two-attribute key each time, where this reads each
        once."""
        known, last = self._known, self._order
        order = None
        if last is not None:
            fresh = sorted([job for job in waiting if job.job_id not in known], key=_ARRIVAL)
            order = [job for job in last if job.job_id in active]
            if len(order) + len(fresh) != len(running) + len(waiting) or (
                    order and fresh and _ARRIVAL(fresh[0]) < _ARRIVAL(order[-1])):
                order = None
            else:
                order += fresh
        if order is None:
            order = sorted((*running, *waiting), key=_ARRIVAL)
        self._order = order
        return order

    def _arrivals(self, snapshot: ClusterSnapshot) -> tuple[list[Job], set[str]] | None:
        """The jobs that arrived since the last cycle and the ids of those that left, told
        without reading every job: arrivals are the waiting jobs not tracked; the jobs that
        left, the tracked jobs the core's journal names that ended. None when that may not
        be all (no journal, a job running now that is not tracked, or counts that do not
        add up: e.g. a waiting job cancelled), or when the journal names more changes than
        half the running jobs: the caller reads every job then."""
        journal, known = snapshot.journal, self._known
        if journal is None:
            return None
        count, self._seen = self._seen, journal.count
        if count < 0 or journal.count - count > len(snapshot.running) // 2:
            return None  # rounds that move many jobs: reading every job costs less
        changed = journal.since(count)
        if changed is None:
            return None
        arrivals = [job for job in snapshot.waiting if job.job_id not in known]
        departed = set()
        for job in changed:
            if job.job_id not in known:
                if job.status is JobStatus.RUNNING:
                    return None
            elif job.status in _ENDED:
                departed.add(job.job_id)
        jobs = len(snapshot.running) + len(snapshot.waiting)
        if len(known) - len(departed) + len(arrivals) != jobs:
            return None
        return arrivals, departed

    def _ranked(self, state: CycleState, is_round: bool) -> _Round:
        """The cycle's view: its jobs' rows (in arrival order: sorted only when the rows
        were dropped, and not again after a solve sorted them) and their priorities."""
        book, rows = self._book, self._rows
        assert book is not None
        if rows is None:
            ids = self._ids
            if ids is None:
                snapshot = state.snapshot
                ids = [j.job_id for j in sorted((*snapshot.running, *snapshot.waiting),
                                                key=_ARRIVAL)]
            rows = self._rows = _Rows(ids, book)
        priority = self._priorities(rows, book.time[rows.slots])
        # No per-job type preferences: the walk (``_walk``) orders the entries itself.
        return _Round(rows.row, priority, [], rows.allocated, rows.speed, is_round)

    def _gpu_kinds(self, cluster: Cluster) -> np.ndarray:
        """Each GPU's type code (an array, built once per cluster)."""
        cached = self._kind_of_gpu
        if cached is None or cached[0] is not cluster:
            cached = self._kind_of_gpu = (cluster, np.array(self._gpu_lookup(cluster)[1],
                                                            dtype=np.intp))
        return cached[1]

    def _store(self, problem: AllocationProblem, allocation: Allocation) -> None:
        """X in the book's rows: the solved jobs' rows, zeros for every other tracked job
        (``_solved``: the jobs that may be given GPUs)."""
        book = self._book
        assert book is not None
        self._solved = frozenset(problem.job_ids)
        slot_of = book.slot
        solved = [(i, slot_of[job_id]) for i, job_id in enumerate(problem.job_ids)
                  if job_id in slot_of]
        if len(solved) != len(slot_of):  # (else every row is written below)
            book.x[list(slot_of.values())] = 0.0
        self._single = None
        if solved:
            rows, slots = zip(*solved, strict=True)
            at = np.array(slots, dtype=np.intp)  # (one index for the three reads and writes)
            x = allocation.x if len(rows) == len(allocation.x) else allocation.x[list(rows)]
            book.x[at] = x  # (every solved job in order: X's rows as they are)
            if self._tells_settled:
                self._single = single_types([problem.job_ids[i] for i in rows],
                                            book.x[at], book.speed[at])

    def _solve(self, state: CycleState, jobs: Sequence[Job]) -> None:
        self._solved = frozenset()
        if self._greedy and jobs and self._fifo_solve(state, jobs):
            self.solves += 1
            return
        super()._solve(state, jobs)

    def _fifo_solve(self, state: CycleState, jobs: Sequence[Job]) -> bool:
        """Gavel's FIFO reset (``fifo_hetero``) from each job's throughput row, kept while
        it is tracked, with no ``AllocationProblem`` built: the same greedy over the same
        floats (jobs in arrival order, each on the fastest type with room for its scale,
        the first that fits nowhere stops the queue) and the same book rows as ``_store``
        writes. False (nothing done; the caller builds the problem) where the problem
        would differ or refuse: node pools, pins, another throughput model, a job type or
        GPU type the table does not know, a job that can run nowhere. FIFO at 1,000 jobs:
        67 resets of ~78 jobs, each ~110 us of problem build before."""
        cluster = state.cluster
        model = state.snapshot.throughput
        if cluster.pools or type(model) is not GavelThroughputs:
            return False
        rows = self._fifo_rows
        if rows.get(None) is not model:  # rows are the model's: another one, read again
            rows.clear()
            self._fifo_kinds.clear()
            rows[None] = model
        by_type = cluster.gpus_by_type()
        free = []
        for name in cluster.type_names:
            count = by_type.get(name)
            if count is None:
                return False
            free.append(float(count))
        # ``fifo_hetero``'s loop over the same floats, each job's row read as it comes
        book = self._book
        assert book is not None
        slot_of, placed_at, placed_kind, placed_ids = book.slot, [], [], []
        ids = [job.job_id for job in jobs]
        for job, job_id in zip(jobs, ids, strict=True):
            row = rows.get(job_id)
            if row is None:
                row = rows[job_id] = self._fifo_row(job, model, cluster.type_names)
                if row is None:
                    del rows[job_id]
                    return False  # (nothing is written until every row is known)
            order, need = row
            for best in order:  # the fastest type with room (of equal speeds, the first)
                if free[best] >= need:
                    break
            else:
                break
            free[best] -= need
            slot = slot_of.get(job_id)
            if slot is not None:
                placed_at.append(slot)
                placed_kind.append(best)
                placed_ids.append(job_id)
        else:
            self._store_choices(ids, placed_ids, placed_at, placed_kind)
            return True
        # stopped: the jobs after the one that fits nowhere get no X, but their rows must
        # still be ones the problem takes (else it refuses: the caller builds it to say why)
        for job, job_id in zip(jobs, ids, strict=True):
            if job_id not in rows:
                row = self._fifo_row(job, model, cluster.type_names)
                if row is None:
                    return False
                rows[job_id] = row
        self._store_choices(ids, placed_ids, placed_at, placed_kind)
        return True

    def _fifo_row(self, job: Job, model: GavelThroughputs, type_names: Sequence[str]
                  ) -> tuple[list[int], float] | None:
        """A job's ``from_gavel`` throughput row (``scaled`` per worker type) as the types it
        runs on, fastest first (of equal speeds, the first type: ``fifo_hetero`` takes a
        type only when strictly faster than the best so far), and its scale; None where
        the problem would not take it (pins, an unknown type, no type to run on: the
        problem build says why). Once per kind of job (model, batch size, GPUs)."""
        spec = job.spec
        if spec.gpu_types:
            return None
        key = (spec.model, spec.batch_size, spec.num_gpus, type_names)
        known = self._fifo_kinds.get(key, False)
        if known is False:
            known = self._fifo_kinds[key] = self._fifo_kind_row(job, model, type_names)
        return known

    @staticmethod
    def _fifo_kind_row(job: Job, model: GavelThroughputs, type_names: Sequence[str]
                       ) -> tuple[list[int], float] | None:
        """``_fifo_row`` of a job's kind, read from the table."""
        spec = job.spec
        try:
            kinds = [worker_type(name) for name in type_names]
            scale = max(spec.num_gpus, 1)
            kind = model.job_type(spec)
            speeds = np.array([model.scaled(kind, name, scale) for name in kinds],
                              dtype=float).tolist()
        except KeyError:
            return None
        if not speeds or min(speeds) < 0 or max(speeds) <= 0:
            return None
        order = sorted((kind for kind, speed in enumerate(speeds) if speed > 0),
                       key=lambda kind: (-speeds[kind], kind))
        return order, float(scale)

    def _store_choices(self, job_ids: list[str], placed: list[str], slots: list[int],
                       kinds: list[int]) -> None:
        """``_store`` of a FIFO allocation over ``job_ids``: the ``placed`` jobs (those with
        a book slot, ``slots``) all of their time on their type (``kinds``), every other
        row zeros; each placed job's single type (``single_types``) where it can run."""
        book = self._book
        assert book is not None
        self._solved = frozenset(job_ids)
        # every row zeros (a free slot's row is written again when a job takes it)
        book.x.fill(0.0)
        self._single = None
        if placed:
            # one flat index array for the write and the read (two index lists cost ~70k
            # instructions a use: each element's type found again)
            width = book.x.shape[1]
            cells = np.fromiter([slot * width + kind for slot, kind in
                                 zip(slots, kinds, strict=True)], np.intp, len(slots))
            book.x.reshape(-1)[cells] = 1.0
            if self._tells_settled:
                runs = (book.speed.reshape(-1)[cells] > 0).tolist()
                self._single = {job_id: kind for job_id, kind, ok in
                                zip(placed, kinds, runs, strict=True) if ok}
        elif self._tells_settled and any(job_id in book.slot for job_id in job_ids):
            self._single = {}  # (``single_types`` of rows that hold no X > 0)

    def _track(self, state: CycleState, active: frozenset[str],
               jobs: Sequence[Job] | None, arrivals: list[Job] | None = None,
               change: tuple[Collection[str], Collection[str]] | None = None) -> None:
        """Add the jobs that arrived (Gavel's ``add_job``, in arrival order: half a round on
        every type; their speed rows from ``_speed``, once) and drop those that left.
        ``jobs``: the cycle's jobs in arrival order, when sorted already; ``arrivals``: the
        jobs that arrived, when known (``_arrivals``); ``change``: the ids that arrived and
        those that left, when known (else told from ``active``)."""
        book, credits = self._book, self._credits
        assert book is not None and credits is not None
        half = self.round_seconds / 2.0
        arrived, departed = (change if change is not None else
                             (active - self._known, self._known - active))
        if arrived:
            snapshot = state.snapshot
            if jobs is not None:
                new = [job for job in jobs if job.job_id in arrived]
            elif arrivals is not None:
                new = sorted(arrivals, key=_ARRIVAL)
            else:
                new = sorted((job for job in (*snapshot.running, *snapshot.waiting)
                              if job.job_id in arrived), key=_ARRIVAL)
            workers = self._workers
            for job, speed in zip(new, self._speed_rows(state, new), strict=True):
                book.add_row(job.job_id, half, speed, self._relative(speed))
                workers[job.job_id] = job.spec.num_gpus
        for job_id in departed:  # (any order: a slot is a row, read by id)
            self._assignments.pop(job_id, None)
            self._nodes.pop(job_id, None)
            self._workers.pop(job_id, None)
            book.remove(job_id)
            credits.forget(job_id)
            if self._single is not None:
                self._single.pop(job_id, None)
            self._fifo_rows.pop(job_id, None)
        if arrived or departed:
            self._changed = True
        self._known = active

    def _relative(self, speed: np.ndarray) -> np.ndarray:
        """A job's speeds relative to its fastest type (0 where it cannot run), once per
        speed row (``_speed_rows``: one array per kind; kept, so an id is never reused)."""
        known = self._relatives.get(id(speed))
        if known is None:
            top = speed.max()
            known = self._relatives[id(speed)] = (speed, np.divide(
                speed, top, out=np.zeros_like(speed), where=top > 0))
        return known[1]

    def _reset(self, now: float, elapsed: float) -> None:
        """Gavel's ``_reset_time_run_so_far``: deficits += should-have-had - had (X is
        zero for a job without one), and every job's time back to half a round."""
        book, credits = self._book, self._credits
        assert book is not None and credits is not None
        half = self.round_seconds / 2.0
        slots = list(book.slot.values())
        at = np.fromiter(slots, np.intp, len(slots))  # (one index for the four reads, writes)
        had = book.time[at]
        book.deficit[at] += book.x[at] * elapsed - (had - half)
        book.time[at] = half
        total = 0.0
        for _ in slots:  # the type totals as Gavel adds them: half a round per job
            total += half
        credits.restart_worker_time(total)
        self._last_reset = now

    def _priorities(self, rows: _Rows, seconds: np.ndarray) -> np.ndarray:
        """(jobs, types) priorities from X, each job's seconds per type since the reset and
        its speeds: element by element what Gavel's ``_update_priorities`` computes (the
        ``where`` branches taken only where some element needs them)."""
        assert self._credits is not None
        total = self._credits.worker_time
        x = rows.x
        if (total > 0).all():
            fraction = seconds / total
        else:
            with np.errstate(divide="ignore", invalid="ignore"):
                fraction = np.where(total > 0, seconds / total, 0.0)
        if (fraction > 0).all():
            row = x / fraction
        else:
            with np.errstate(divide="ignore", invalid="ignore"):
                row = np.where(fraction > 0, x / fraction, x * UNRUN_PRIORITY)
        return np.where(rows.allowed, row, 0.0)

    def seconds_on(self, job_id: str) -> np.ndarray:
        """Seconds the job has run on each GPU type (cluster type order) so far."""
        return self._credits.seconds_on(job_id) if self._credits is not None else np.zeros(0)

    # -- allocation ---------------------------------------------------------------------
    def allocate(self, state: CycleState) -> Targets:
        """The round's targets as a change (``Targets``): jobs that stay on their nodes are
        kept, the others get an ``Assignment``; nothing changes between rounds, nor in a
        FIFO round that ``artifact_settled`` tells keeps every running job."""
        snapshot, cluster = state.snapshot, state.cluster
        view = state.scratch.get(self.name)
        is_round = self._is_round(state)
        current = self._current_nodes(snapshot, cluster)
        if not is_round:  # Gavel's simulator decides only at round boundaries
            return Targets({}, frozenset(current))
        if view is None:
            if self._settled(current, snapshot.down_nodes, cluster):
                self.settled_rounds += 1
                return Targets({}, frozenset(current))
            view = state.scratch[self.name] = self._ranked(state, is_round)
        room, free = self._free_room(cluster, snapshot.down_nodes)
        candidates = [*snapshot.running, *snapshot.waiting]
        workers = self._workers  # every tracked job: the round's candidates
        self._budget = PoolBudget.of(cluster, candidates, room)  # read by ``_walk``
        types = self._walk(view, candidates, workers, free)
        placed = place_round(types, workers, current, cluster.node_type, room,
                             pooled_nodes(state, candidates))
        # ``place_round`` hands a job that stays its very ``current`` tuple; a job that
        # moves gets the one ``Assignment`` of its nodes (frozen: shared by every job sent
        # there, not built per move; most moves are of one worker, onto one of few nodes)
        targets, kept, by_nodes, has_x = {}, [], self._by_nodes, self._solved
        if len(by_nodes) > 4096:
            by_nodes.clear()
        for job_id, nodes in placed.items():
            if job_id in has_x:
                if nodes is current.get(job_id):
                    kept.append(job_id)
                    continue
                target = by_nodes.get(nodes)
                if target is None:
                    target = by_nodes[nodes] = _assignment(nodes)
                targets[job_id] = target
        # placed: each job's own gang (``_workers``) on existing nodes of a type its speed
        # row rates above 0 (``_speed_rows``: the model's rate at its size, its pins; what
        # the ``runnable`` and ``gpu-type`` filters read), inside its pool (``pooled_nodes``),
        # and a running job here does not keep its nodes (``place_round`` hands a job that
        # stays its very ``current`` tuple, kept above)
        return Targets(targets, frozenset(kept), placed=True)

    def _settled(self, current: dict[str, tuple[int, ...]], down: frozenset[int],
                 cluster: Cluster) -> bool:
        """Whether this round keeps every running job as it is (``artifact_settled``):
        each running job holds its gang on nodes of its single type, and no other job has
        one (``keeps_all`` as ``single == held types``)."""
        single = self._single
        return single is not None and not down and single == self._held

    def _node_kinds(self, cluster: Cluster) -> list[int]:
        """Each node's GPU type (a list, built once per cluster)."""
        cached = self._node_kind
        if cached is None or cached[0] is not cluster:
            cached = self._node_kind = (cluster, cluster.node_type.tolist())
        return cached[1]

    def _current_nodes(self, snapshot: ClusterSnapshot, cluster: Cluster
                       ) -> dict[str, tuple[int, ...]]:
        """Each running job's nodes (sorted, ``Assignment.of``) and their ``held_type``,
        kept across cycles: only the jobs in the core's journal of running-job changes
        since the last cycle are looked at again (all of them when the journal cannot
        tell)."""
        gpu_node, node_kind = self._gpu_lookup(cluster)[0], self._node_kinds(cluster)
        journal, current, held, workers = snapshot.journal, self._current, self._held, \
            self._workers
        changed = (journal.since(self._journal_count)
                   if journal is not None and current is not None else None)
        if changed is None or current is None:
            current = self._current = {
                job.job_id: tuple(sorted([gpu_node[g] for g in job.allocation]))
                for job in snapshot.running}
            held.clear()
            if self._tells_settled:
                held.update((job_id, held_type(nodes, workers.get(job_id), node_kind))
                            for job_id, nodes in current.items())
            changed = ()
        settled = self._tells_settled
        for job in {id(job): job for job in changed}.values():  # once per job
            job_id = job.job_id
            if job.run_started is None or job.status is not JobStatus.RUNNING:
                current.pop(job_id, None)
                held.pop(job_id, None)
            else:
                gpus = job.allocation  # one worker (most jobs): no list to sort
                if len(gpus) == 1:  # (``held_type`` of one node, inlined)
                    node = gpu_node[gpus[0]]
                    current[job_id] = (node,)
                    if settled:
                        held[job_id] = node_kind[node] if workers.get(job_id) == 1 else -1
                    continue
                nodes = current[job_id] = tuple(sorted([gpu_node[g] for g in gpus]))
                if settled:
                    held[job_id] = held_type(nodes, workers.get(job_id), node_kind)
        self._journal_count = journal.count if journal is not None else -1
        return current

    def _free_room(self, cluster: Cluster, down: frozenset[int]) -> tuple[np.ndarray,
                                                                            np.ndarray]:
        """Each node's GPUs (0 on a down node; a fresh copy: ``place_round`` consumes it)
        and the GPUs per type, computed once while no node is down."""
        if down:
            room = cluster.node_gpus.astype(np.int64)
            room[list(down)] = 0
            return room, room_by_type(cluster.node_type, room, len(cluster.type_names))
        cached = self._room
        if cached is None or cached[0] is not cluster:
            room = cluster.node_gpus.astype(np.int64)
            cached = self._room = (cluster, room,
                                   room_by_type(cluster.node_type, room,
                                                len(cluster.type_names)))
        return cached[1].copy(), cached[2]

    def _walk(self, view: _Round, jobs: Sequence[Job], workers: dict[str, int],
              free: np.ndarray) -> dict[str, int]:
        """Each job's GPU type: the per-type lists walked one after another, a job on the
        first entry with room for its gang (``assign_types`` over ``_entries``, whose
        priorities are the walk's positions, without building and sorting the entries).
        The lists as ``_lists`` orders them, walked by row number: a type's list is read
        only while the type has room for the smallest gang, and no id list is built. A pooled
        job takes a type only with room for its gang in its pool (the round's ``_budget``)."""
        assert len(jobs) == len(self._cycle_ids)
        rows = self._rows
        assert rows is not None
        ids, need = rows.ids, rows.needs(workers)
        budget = self._budget
        ranked, keep = self._ranked_rows(view, rows)
        left = free.astype(np.int64).tolist()
        smallest = min(workers.values(), default=1)
        taken = bytearray(len(ids))
        chosen: dict[str, int] = {}
        if rows.one_worker and budget is None and smallest == 1:
            _walk_one_worker(self._type_order(view), ranked, keep, ids, left, taken, chosen)
            return chosen
        for kind in self._type_order(view):
            room = left[kind]
            if room < smallest:
                continue
            column = ranked[:, kind]
            for row in column[keep[column, kind]].tolist():
                if room < smallest:
                    break
                gang = need[row]
                if taken[row] or room < gang or (
                        budget is not None and not budget.take((ids[row],), kind, gang)):
                    continue
                taken[row] = 1
                chosen[ids[row]] = kind
                room -= gang
            left[kind] = room
        return chosen

    def _ranked_rows(self, view: _Round, rows: _Rows) -> tuple[np.ndarray, np.ndarray]:
        """Every type's rows in walk order (highest priority first, then deficit, then X;
        ties in arrival order) and which entries the lists hold (runnable; FIFO: priority
        above 0). One lexsort gives every column the order a one-column lexsort gives; it is
        stable, so rows equal in all three keys stay in row order, the arrival order (the
        rows' number as a fourth key cost a quarter of the sort: ~28k instructions a round)."""
        priority = view.priority
        keep = rows.runnable & (priority > 0) if self.fifo else rows.runnable
        ranked = np.lexsort((rows.neg_x, rows.neg_deficit, -priority), axis=0)
        return ranked, keep

    def _lists(self, view: _Round, jobs: Sequence[Job]) -> list[tuple[int, list[str]]]:
        """One list of job ids per GPU type, in walk order (``_type_order``): highest
        priority first, then deficit, then X; ties in arrival order; FIFO drops entries of
        priority 0."""
        order = self._type_order(view)
        # ``jobs`` are the view's jobs (running and waiting): ranked in the view's row order
        # (arrival order), which is also the last tie-break
        assert len(jobs) == len(self._cycle_ids)
        rows = self._rows
        assert rows is not None
        ids = rows.ids
        ranked, keep = self._ranked_rows(view, rows)
        lists = []
        for kind in order:
            column = ranked[:, kind]
            lists.append((kind, [ids[i] for i in column[keep[column, kind]].tolist()]))
        return lists

    def _entries(self, view: _Round, jobs: Sequence[Job]) -> list[Entry]:
        """Per-type lists walked one after another: the entries' priorities are their
        positions in that walk (``assign_types`` takes them highest first)."""
        walk = [(job_id, kind) for kind, job_ids in self._lists(view, jobs)
                for job_id in job_ids]
        count = len(walk)
        return [Entry(float(count - position), (0.0, job_id), job_id, kind)
                for position, (job_id, kind) in enumerate(walk)]

    def _type_order(self, view: _Round) -> list[int]:
        n_types = view.speed.shape[1]
        if self.shuffle_types:
            return self._rng.permutation(n_types).tolist()
        if not len(view.speed):
            return list(range(n_types))
        book, rows = self._book, self._rows
        assert book is not None and rows is not None
        if rows.type_order is None:  # fixed while the rows stay (the same jobs)
            # each job's speeds relative to its fastest type, summed over the round's jobs
            relative_sum = book.relative[rows.slots].sum(axis=0)
            rows.type_order = np.argsort(-relative_sum, kind="stable").tolist()
        return rows.type_order


def _walk_one_worker(order: list[int], ranked: np.ndarray, keep: np.ndarray, ids: list[str],
                     left: list[int], taken: bytearray, chosen: dict[str, int]) -> None:
    """``_walk``'s loop where every gang is one GPU and no job is pooled: an entry is taken
    when not taken by an earlier type, and a type's list is read until its room is gone
    (the same picks; no gang or budget read per entry)."""
    for kind in order:
        room = left[kind]
        if room < 1:
            continue
        column = ranked[:, kind]
        for row in column[keep[column, kind]].tolist():
            if taken[row]:
                continue
            taken[row] = 1
            chosen[ids[row]] = kind
            room -= 1
            if not room:
                break
        left[kind] = room
