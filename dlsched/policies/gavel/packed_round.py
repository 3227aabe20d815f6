"""Gavel's rounds with space sharing (Narayanan et al., OSDI'20 §3.1 "space sharing", §5).

The packed LP (``packed.max_min_fairness_packed``) gives ``X[j, t]`` (job ``j`` alone on type
``t``) and ``pair_x[p, t]`` (jobs ``a, b`` of pair ``p`` sharing GPUs of type ``t``). Gavel §5
schedules *job combinations*: each (single job or pair, type) has the priority
``allocation / fraction of time that combination has received on t`` (since the later job of
the combination arrived), and the round walks combinations by priority; a pair is scheduled only
when neither of its jobs is yet (``assign.assign_with_pairs``). A single's fraction counts the
job's time alone only. A chosen pair runs on the same GPUs with ``share = 0.5`` each, named
exactly (``gpus.name_gpus``), and each job runs at its co-located rate (the throughput model's
``Placement.partners``). Work conservation and between-round filling are those of
``GavelRounds``; pairs whose job has left are dropped until the next solve.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from dlsched.policies.gavel.assign import Entry, assign_with_pairs, place_round, room_by_type
from dlsched.policies.gavel.gpus import exact, name_gpus
from dlsched.policies.gavel.pool_budget import PoolBudget
from dlsched.policies.gavel.problem import Allocation, AllocationProblem
from dlsched.policies.gavel_round import MIN_FRACTION, GavelRounds, _Round
from dlsched.scheduling.allocation import Assignment
from dlsched.scheduling.plugins.filters import pooled_nodes
from dlsched.scheduling.state import EPS, CycleState
from dlsched.workload.job import Job

PAIR_SHARE = 0.5
MIN_PAIR_TIME = 1e-9
Pair = tuple[str, str]


class PackedGavelRounds(GavelRounds):
    """``GavelRounds`` over single jobs and co-located pairs (module docstring)."""

    colocation = True

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self._pairs: dict[Pair, np.ndarray] = {}  # pair -> pair_x per type (cluster order)
        self.pair_seconds: dict[Pair, np.ndarray] = {}  # seconds co-located per type
        self._shared_seconds: dict[str, np.ndarray] = {}  # per job, seconds spent in a pair
        self._started: dict[str, float] = {}  # running job -> when its current run began

    # -- solve and bookkeeping ----------------------------------------------------------
    def _store(self, problem: AllocationProblem, allocation: Allocation) -> None:
        super()._store(problem, allocation)
        ids = problem.job_ids
        self._pairs = {pair_key(ids[a], ids[b]): allocation.pair_x[p]
                       for p, (a, b) in enumerate(allocation.pairs)
                       if allocation.pair_x[p].sum() > MIN_PAIR_TIME}

    def _alone_seconds(self, job_id: str, n_types: int) -> np.ndarray:
        total = super()._alone_seconds(job_id, n_types)
        return total - self._shared_seconds.get(job_id, np.zeros(n_types))

    def _credit(self, state: CycleState) -> None:
        """Also credit the time each running pair has spent together (before the base class
        moves every job's credit mark to now)."""
        now, cluster = state.now, state.cluster
        n_types = len(cluster.type_names)
        for (a, b), gpus in running_pairs(state.snapshot.running).items():
            seconds = min(self._since(a, now), self._since(b, now))
            kind = int(cluster.node_type[cluster.gpu_node[gpus[0]]])
            self.pair_seconds.setdefault((a, b), np.zeros(n_types))[kind] += seconds
            for job_id in (a, b):
                self._shared_seconds.setdefault(job_id, np.zeros(n_types))[kind] += seconds
        super()._credit(state)

    def _since(self, job_id: str, now: float) -> float:
        job_started = self._started.get(job_id, now)
        return max(0.0, now - max(self._credited.get(job_id, -np.inf), job_started))

    def seconds_shared(self, a: str, b: str) -> float:
        """Seconds jobs ``a`` and ``b`` have run on the same GPUs so far."""
        return float(self.pair_seconds.get(pair_key(a, b), np.zeros(1)).sum())

    # -- allocate -----------------------------------------------------------------------
    def allocate(self, state: CycleState) -> dict[str, Assignment]:
        snapshot, cluster = state.snapshot, state.cluster
        self._started = {j.job_id: (state.now if j.run_started is None else j.run_started)
                         for j in snapshot.running}
        view = self.view(state)  # credits time, so after ``_started``
        if view.is_round:
            room = cluster.node_gpus.astype(np.int64).copy()
            room[list(snapshot.down_nodes)] = 0
            free = np.repeat(room > 0, cluster.node_gpus)
            candidates, kept = [*snapshot.running, *snapshot.waiting], {}
        else:
            room = state.node_free.astype(np.int64).copy()
            free = np.asarray(state.free) >= 1.0 - EPS
            candidates = list(snapshot.waiting)
            kept = {j.job_id: exact(j.allocation, cluster.gpu_node, j.shares[0])
                    for j in snapshot.running}
        workers = {job.job_id: job.spec.num_gpus for job in candidates}
        by_type = room_by_type(cluster.node_type, room, len(cluster.type_names))
        entries = [*self._entries(view, candidates), *self._pair_entries(view, candidates,
                                                                         state.now)]
        types, partner = assign_with_pairs(entries, workers, by_type,
                                           PoolBudget.of(cluster, candidates, room))
        return {**kept, **self._place(state, types, partner, workers, room, free)}

    def _pair_entries(self, view: _Round, jobs: Sequence[Job], now: float) -> list[Entry]:
        """(pair, type) entries with ``pair_x > 0``, both jobs active, at Gavel's priority."""
        active = {job.job_id: job for job in jobs}
        entries = []
        for (a, b), share in self._pairs.items():
            if a not in active or b not in active:
                continue
            since = max(active[a].spec.submit_time, active[b].spec.submit_time)
            got = self.pair_seconds.get((a, b), np.zeros(len(share))) / max(now - since, 1e-9)
            priority = share / np.maximum(got, MIN_FRACTION)
            speed = view.speed[view.row[a]] * view.speed[view.row[b]]
            tiebreak = (since, a)
            entries.extend(Entry(float(priority[t]), tiebreak, a, int(t), partner=b)
                           for t in np.flatnonzero((share > 0) & (speed > 0)))
        return entries

    def _place(self, state: CycleState, types: dict[str, int], partner: dict[str, str],
               workers: dict[str, int], room: np.ndarray, free: np.ndarray
               ) -> dict[str, Assignment]:
        """Nodes, then exact GPUs, per unit (a single job or a pair under its first id); a
        unit already running exactly as chosen keeps its GPUs."""
        cluster = state.cluster
        running = {job.job_id: job for job in state.snapshot.running}
        units = {j: k for j, k in types.items() if partner.get(j, j) >= j}
        fixed: dict[str, tuple[int, ...]] = {}
        for unit, kind in units.items():
            held = _held(running, unit, partner.get(unit), cluster.node_type,
                         cluster.gpu_node, kind)
            if held and free[list(held)].all():
                fixed[unit] = held
                free[list(held)] = False
                np.subtract.at(room, [int(cluster.gpu_node[g]) for g in held], 1)
        rest = {j: k for j, k in units.items() if j not in fixed}
        nodes = place_round(rest, workers, {}, cluster.node_type, room,
                            _unit_pools(state, rest, partner))
        gpus = {**fixed, **name_gpus(nodes, {}, free, cluster.node_first_gpu,
                                     cluster.node_gpus)}
        targets: dict[str, Assignment] = {}
        for unit, held in gpus.items():
            other = partner.get(unit)
            share = PAIR_SHARE if other is not None else None
            targets[unit] = Assignment(_nodes(held, cluster.gpu_node), share, held)
            if other is not None:
                targets[other] = targets[unit]
        return targets


def pair_key(a: str, b: str) -> Pair:
    return (a, b) if a <= b else (b, a)


def _nodes(gpus: tuple[int, ...], gpu_node: np.ndarray) -> tuple[int, ...]:
    return tuple(int(gpu_node[g]) for g in gpus)


def running_pairs(running: Sequence[Job]) -> dict[Pair, tuple[int, ...]]:
    """Running jobs packed on the same GPUs, two by two: pair -> their GPUs. Jobs that asked
    for a fraction of a GPU or a MIG instance share by their own request, not as a pair."""
    holders: dict[tuple[int, ...], list[str]] = {}
    for job in running:
        if (job.allocation and max(job.shares) < 1.0 and job.spec.gpu_share >= 1.0 - EPS
                and job.spec.mig_profile is None):
            holders.setdefault(tuple(sorted(job.allocation)), []).append(job.job_id)
    return {pair_key(*ids): gpus for gpus, ids in holders.items() if len(ids) == 2}


def _held(running: dict[str, Job], unit: str, other: str | None, node_type: np.ndarray,
          gpu_node: np.ndarray, kind: int) -> tuple[int, ...] | None:
    """The GPUs a unit runs on now if it already runs as chosen (alone on whole GPUs of
    ``kind``, or the pair together at half shares), else None."""
    job = running.get(unit)
    if job is None or not job.allocation:
        return None
    held = tuple(sorted(job.allocation))
    if any(int(node_type[gpu_node[g]]) != kind for g in held):
        return None
    if other is None:
        return held if min(job.shares) >= 1.0 - EPS else None
    mate = running.get(other)
    together = mate is not None and tuple(sorted(mate.allocation)) == held
    halves = all(abs(s - PAIR_SHARE) < EPS for s in (*job.shares, *(mate.shares if mate
                                                                    else ())))
    return held if together and halves else None


def _unit_pools(state: CycleState, units: Mapping[str, int], partner: Mapping[str, str]
                ) -> dict[str, frozenset[int]]:
    """Per unit its pool's nodes (``pooled_nodes``), a pair's the nodes both jobs' pools
    allow: the two share each GPU."""
    active = {job.job_id: job for job in (*state.snapshot.running, *state.snapshot.waiting)}
    ids = [j for unit in units for j in (unit, partner.get(unit)) if j is not None]
    pools = pooled_nodes(state, [active[j] for j in ids])
    out: dict[str, frozenset[int]] = {}
    for unit in units:
        mine, other = pools.get(unit), pools.get(partner.get(unit, ""))
        if mine is not None or other is not None:
            out[unit] = (mine if other is None else other if mine is None else mine & other)
    return out
