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

from collections.abc import Sequence
from operator import attrgetter

import numpy as np

from dlsched.cluster.cluster import Cluster
from dlsched.policies.gavel.assign import Entry, place_round, room_by_type
from dlsched.policies.gavel.problem import Allocation, AllocationProblem
from dlsched.policies.gavel_round import GavelRounds, _Round
from dlsched.scheduling.allocation import Assignment
from dlsched.scheduling.state import CycleState
from dlsched.workload.job import Job

_ARRIVAL = attrgetter("spec.submit_time", "job_id")  # Gavel's job order: arrival, then id
RESET_SECONDS = 1920.0  # Gavel's minimum_time_between_allocation_resets
UNRUN_PRIORITY = 1e9  # Gavel: "Don't use inf so 2*new_priority > new_priority"


class _Book:
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
        if self._free:
            slot = self._free.pop()
        else:
            slot = len(self.slot)
            if slot == len(self.time):
                self.time, self.deficit, self.x, self.speed, self.relative = (
                    np.concatenate([a, np.zeros_like(a)]) for a in (
                        self.time, self.deficit, self.x, self.speed, self.relative))
        self.slot[job_id] = slot
        self.time[slot] = half
        self.deficit[slot] = 0.0
        self.x[slot] = 0.0
        return slot

    def remove(self, job_id: str) -> None:
        self._free.append(self.slot.pop(job_id))

    def slots(self, job_ids: Sequence[str]) -> list[int]:
        slot = self.slot
        return [slot[job_id] for job_id in job_ids]


class ArtifactGavelRounds(GavelRounds):
    """``GavelRounds`` with the bookkeeping of Gavel's simulator (module docstring)."""

    def __init__(self, policy: str, objective: object, *, shuffle_types: bool = False,
                 fifo: bool = False, reset_seconds: float = RESET_SECONDS, seed: int = 0,
                 **kwargs: object) -> None:
        super().__init__(policy, objective, **kwargs)  # type: ignore[arg-type]
        self.shuffle_types, self.fifo, self.reset_seconds = shuffle_types, fifo, reset_seconds
        self._rng = np.random.default_rng(seed)
        self._book: _Book | None = None  # per-job seconds, deficits and X (``_Book``)
        self._worker_time: list[float] = []  # per type: all jobs' seconds since the reset
        self._last_reset = 0.0
        self._changed = False
        self._known: frozenset[str] = frozenset()
        self._since: dict[str, float] = {}
        self._cycle_x = np.zeros((0, 0))  # this cycle's X rows (``_refresh``'s job order)
        self._cycle_slots: list[int] = []  # this cycle's book slots (the same order)
        self._cycle_ids: list[str] = []  # this cycle's job ids (the same order)
        self._seconds_on: dict[str, list[float]] = {}  # seconds per type, by job (reports)
        self._workers: dict[str, int] = {}  # each tracked job's gang (its spec's GPUs)
        self._room: tuple[object, np.ndarray, np.ndarray] | None = None  # see ``_free_room``

    # -- bookkeeping --------------------------------------------------------------------
    def _refresh(self, state: CycleState) -> _Round:
        now, cluster = state.now, state.cluster
        n_types = len(cluster.type_names)
        is_round = self._round_start is None or (
            now >= self._round_start + self.round_seconds - 1e-6)
        if is_round:
            self._round_start = now
        if self._book is None:
            self._book = _Book(n_types)
            self._worker_time = [0.0] * n_types
        self._credit_rounds(state, n_types)
        jobs = sorted((*state.snapshot.running, *state.snapshot.waiting), key=_ARRIVAL)
        ids = [j.job_id for j in jobs]
        active = frozenset(ids)
        self._track(state, jobs, active)
        elapsed = now - self._last_reset
        if is_round and self._changed and (elapsed >= self.reset_seconds
                                           or self._last_reset == 0):
            self._reset(now, elapsed)
            self._solve(state, jobs)
            self._changed = False
        self._cycle_ids = ids
        slots = self._cycle_slots = self._book.slots(ids)
        speed = self._book.speed[slots]
        x = self._book.x[slots]
        priority = self._priorities(x, self._book.time[slots], speed)
        self._cycle_x = x
        # No per-job type preferences: the walk (``_walk``) orders the entries itself.
        return _Round(dict(zip(ids, range(len(ids)), strict=True)), priority, [], x > 0, speed,
                      is_round)

    def _store(self, problem: AllocationProblem, allocation: Allocation) -> None:
        """X by job (``GavelRounds._store``) and in the book's rows: the solved jobs' rows,
        zeros for every other tracked job."""
        super()._store(problem, allocation)
        book = self._book
        assert book is not None
        book.x[list(book.slot.values())] = 0.0
        for job_id, row in self._x.items():
            slot = book.slot.get(job_id)
            if slot is not None:
                book.x[slot] = row

    def _credit_rounds(self, state: CycleState, n_types: int) -> None:
        """Each running job's time since the last cycle, once per job (not per GPU), on its
        type: to the job and to the type's total, as Gavel's ``_done_callback`` adds it; and
        to the job's seconds per type (``seconds_on``) as ``GavelRounds._credit`` adds them
        to ``time_on`` (Python lists here: one float each, no numpy scalar per job)."""
        now, gpu_kind = state.now, self._gpu_lookup(state.cluster)[1]
        worker_time, since_of, time_on = self._worker_time, self._since, self._seconds_on
        book = self._book
        assert book is not None
        slot_of = book.slot
        slots: list[int] = []
        kinds: list[int] = []
        credits: list[float] = []
        for job in state.snapshot.running:
            job_id = job.job_id
            started = now if job.run_started is None else job.run_started
            since = since_of.get(job_id, started)
            seconds = now - (since if since > started else started)
            kind = gpu_kind[job.allocation[0]]
            on = time_on.get(job_id)
            if on is None:
                on = time_on[job_id] = [0.0] * n_types
            if seconds > 0.0:
                on[kind] += seconds
                slot = slot_of.get(job_id)
                if slot is not None:  # tracked (not on its first cycle)
                    slots.append(slot)
                    kinds.append(kind)
                    credits.append(seconds)
                    worker_time[kind] += seconds
            since_of[job_id] = now
        if slots:  # one (slot, type) cell per job: the same sums as one by one
            book.time[slots, kinds] += credits

    def _track(self, state: CycleState, jobs: Sequence[Job], active: frozenset[str]) -> None:
        """Add the jobs that arrived (Gavel's ``add_job``: half a round on every type; their
        speed rows from ``_speed``, once) and drop those that left."""
        book = self._book
        assert book is not None
        half = self.round_seconds / 2.0
        arrived = active - self._known
        if arrived:
            new = [job for job in jobs if job.job_id in arrived]
            speeds = self._speed(state, new)
            top = speeds.max(axis=1, keepdims=True)
            relative = np.divide(speeds, top, out=np.zeros_like(speeds), where=top > 0)
            for job, row, rel in zip(new, speeds, relative, strict=True):
                slot = book.add(job.job_id, half)
                self._workers[job.job_id] = job.spec.num_gpus
                book.speed[slot] = row
                book.relative[slot] = rel
        for job_id in self._known - active:
            self._assignments.pop(job_id, None)
            self._nodes.pop(job_id, None)
            self._workers.pop(job_id, None)
            book.remove(job_id)
            self._since.pop(job_id, None)
        if active != self._known:
            self._changed = True
        self._known = active

    def _reset(self, now: float, elapsed: float) -> None:
        """Gavel's ``_reset_time_run_so_far``: deficits += should-have-had - had (X is
        zero for a job without one), and every job's time back to half a round."""
        book = self._book
        assert book is not None
        half = self.round_seconds / 2.0
        slots = list(book.slot.values())
        had = book.time[slots]
        book.deficit[slots] += book.x[slots] * elapsed - (had - half)
        book.time[slots] = half
        total = 0.0
        for _ in slots:  # the type totals as Gavel adds them: half a round per job
            total += half
        self._worker_time = [total] * len(self._worker_time)
        self._last_reset = now

    def _priorities(self, x: np.ndarray, seconds: np.ndarray, speed: np.ndarray) -> np.ndarray:
        """(jobs, types) priorities from X, each job's seconds per type since the reset and
        its speeds: element by element what Gavel's ``_update_priorities`` computes."""
        total = np.array(self._worker_time)
        with np.errstate(divide="ignore", invalid="ignore"):
            fraction = np.where(total > 0, seconds / total, 0.0)
            row = np.where(fraction > 0, x / fraction, x * UNRUN_PRIORITY)
        return np.where((x > 0) & (speed > 0), row, 0.0)

    def seconds_on(self, job_id: str) -> np.ndarray:
        """Seconds the job has run on each GPU type (cluster type order) so far."""
        return np.array(self._seconds_on.get(job_id, ()), dtype=float)

    # -- allocation ---------------------------------------------------------------------
    def allocate(self, state: CycleState) -> dict[str, Assignment]:
        view = self.view(state)
        running, cluster = state.snapshot.running, state.cluster
        gpu_node = self._gpu_lookup(cluster)[0]
        current: dict[str, tuple[int, ...]] = {}
        known_nodes = self._nodes
        for job in running:  # ``_nodes_of``, inlined: kept while the job holds the same GPUs
            held, job_id = job.allocation, job.job_id
            known = known_nodes.get(job_id)
            if known is None or known[0] is not held:
                known = known_nodes[job_id] = (held, tuple(sorted([gpu_node[g] for g in held])))
            current[job_id] = known[1]
        if not view.is_round:  # Gavel's simulator decides only at round boundaries
            return {job_id: self._target(job_id, nodes) for job_id, nodes in current.items()}
        room, free = self._free_room(cluster, state.snapshot.down_nodes)
        candidates = [*running, *state.snapshot.waiting]
        workers = self._workers  # every tracked job: the round's candidates
        types = self._walk(view, candidates, workers, free)
        placed = place_round(types, workers, current, cluster.node_type, room)
        # ``_target`` inlined: a job's last Assignment while its nodes stay the same
        targets, assignments, has_x = {}, self._assignments, self._x
        for job_id, nodes in placed.items():
            if job_id in has_x:
                target = assignments.get(job_id)
                if target is None or target.nodes != nodes:
                    target = assignments[job_id] = Assignment(nodes)
                targets[job_id] = target
        return targets

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
        priorities are the walk's positions, without building and sorting the entries)."""
        left = free.astype(np.int64).tolist()
        chosen: dict[str, int] = {}
        smallest = min(workers.values(), default=1)
        for kind, job_ids in self._lists(view, jobs):
            for job_id in job_ids:
                if left[kind] < smallest:
                    break
                need = workers[job_id]
                if job_id in chosen or left[kind] < need:
                    continue
                chosen[job_id] = kind
                left[kind] -= need
        return chosen

    def _lists(self, view: _Round, jobs: Sequence[Job]) -> list[tuple[int, list[str]]]:
        """One list of job ids per GPU type, in walk order (``_type_order``): highest
        priority first, then deficit, then X; ties in arrival order; FIFO drops entries of
        priority 0."""
        order = self._type_order(view)
        # ``jobs`` are the view's jobs (running and waiting): ranked in the view's row order
        # (arrival order), which is also the last tie-break
        assert len(jobs) == len(self._cycle_ids)
        ids = self._cycle_ids
        book = self._book
        assert book is not None
        priority = view.priority
        keep = view.speed > 0
        if self.fifo:
            keep &= priority > 0
        # every type's column at once: the keys make each column's order total (the row
        # last), so it is the order a one-column lexsort gives
        rows = np.broadcast_to(np.arange(len(ids))[:, None], priority.shape)
        ranked = np.lexsort((rows, -self._cycle_x, -book.deficit[self._cycle_slots], -priority),
                            axis=0)
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
        book = self._book
        assert book is not None
        # each job's speeds relative to its fastest type, summed over the round's jobs
        relative = book.relative[self._cycle_slots]
        return np.argsort(-relative.sum(axis=0), kind="stable").tolist()
