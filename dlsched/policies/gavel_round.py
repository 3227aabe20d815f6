"""Gavel's round-based mechanism (Narayanan et al., OSDI'20 §5) as an allocation plugin.

An LP policy (``dlsched.policies.gavel``) gives ``X[j, t]``, the fraction of time job ``j``
should spend on GPU type ``t``. Rounds realize it: ``priority[j, t] = X[j, t] / (fraction of
its time since arrival job j has run on t)`` (§5; a job that has not run on ``t`` yet counts
``MIN_FRACTION``, so new jobs go first). At every round boundary (``round_seconds``, 6 minutes
in Gavel) **every** active job, running or waiting, is re-assigned by priority
(``gavel.assign``): a running job may keep its GPUs, move to another type (a ``Resize``: it
checkpoints and restarts there, no queueing) or be preempted. Entries with ``X = 0`` come after
all others and are used only when a type would otherwise stay idle (work conservation, a
simplification: Gavel leaves such GPUs idle until the next solve).

Between rounds (a job arrived or finished) running jobs keep their GPUs and waiting jobs take
free GPUs by the same priorities (a job that arrived since the last solve has no ``X`` yet and
takes only otherwise idle GPUs). As in Gavel's implementation, ``X`` is re-solved at most once
per round, at its start, and only when the set of active jobs changed.
Time on each type is counted per job at every cycle from the running jobs' allocations.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from dlsched.cluster.cluster import Cluster
from dlsched.errors import ConfigError
from dlsched.perf.gavel_table import GavelThroughputs, worker_type
from dlsched.perf.model import Placement
from dlsched.policies.gavel.assign import Entry, assign_types, place_round, room_by_type
from dlsched.policies.gavel.inputs import from_gavel, from_rates
from dlsched.policies.gavel.lp import WarmStart
from dlsched.policies.gavel.pool_budget import PoolBudget
from dlsched.policies.gavel.pool_columns import pool_columns
from dlsched.policies.gavel.pop import solve_with_pop
from dlsched.policies.gavel.problem import Allocation, AllocationProblem
from dlsched.scheduling.allocation import Assignment
from dlsched.scheduling.plugins.filters import pooled_nodes
from dlsched.scheduling.state import CycleState
from dlsched.workload.job import Job

MIN_FRACTION = 1e-3  # a type a job has not run on yet: priority X / 1e-3 (new jobs go first)
ROUND_TOLERANCE = 1e-6
Objective = Callable[..., Allocation]


@dataclass
class _Round:
    """One cycle's view: rows of the active jobs, their priorities and type preferences."""

    row: dict[str, int]
    priority: np.ndarray  # (jobs, types)
    preference: list[tuple[int, ...]]  # per row: types by priority, X > 0 ones first
    allocated: np.ndarray  # (jobs, types) bool: X > 0
    speed: np.ndarray  # (jobs, types): throughput on each type (ones when unknown)
    is_round: bool


class GavelRounds:
    """Gavel's rounds as an ``AllocatePlugin`` (and the profile's nominal QueueSort).

    ``objective(problem, **options)`` gives X (with POP over ``pop_k`` sub-problems when
    ``pop_k > 1``); ``options`` may be a function of the problem (prices per its types);
    ``refine(problem, jobs)`` may add data to the problem (tenants, weights).
    ``warm_start``: max-min fairness and LAS start each solve from the last one's basis
    (``gavel.lp.WarmStart``; exact, not POP): fewer simplex iterations, and on a degenerate LP
    possibly another, equally optimal allocation than a solve from scratch gives."""

    name = "gavel-rounds"
    static = False  # the filter and the order change every round
    colocation = False  # the problem carries co-located rates (space sharing)

    def __init__(self, policy: str, objective: Objective,
                 options: dict | Callable[[AllocationProblem], dict] | None = None,
                 round_seconds: float = 360.0, pop_k: int = 1,
                 refine: Callable[[AllocationProblem, Sequence[Job]], AllocationProblem]
                 | None = None, warm_start: bool = False) -> None:
        if round_seconds <= 0 or pop_k < 1:
            raise ValueError("round_seconds must be > 0 and pop_k >= 1")
        self.policy, self.objective, self.options = policy, objective, options or {}
        self.round_seconds, self.pop_k = round_seconds, pop_k
        self.refine = refine
        self._rates: dict[str, np.ndarray] = {}  # throughput per type, by job
        self.time_on: dict[str, np.ndarray] = {}  # seconds run per type (cluster order), by job
        self._credited: dict[str, float] = {}
        self._active: frozenset[str] | None = None
        self._x: dict[str, np.ndarray] = {}
        self._round_start: float | None = None
        self.solves = 0
        # FTF's t_isolated: per job, seconds its progress would have taken on its equal share
        # (summed between solves: steps done / equal-share throughput of the last solve).
        self._isolated: dict[str, float] = {}
        self._reads_isolated = reads_isolated_time(objective)  # else no t_isolated books
        self._reads_progress = reads_progress(objective)  # else no remaining work, ... read
        self._attained_only = reads_attained_only(objective)  # LAS: no remaining, elapsed
        self._last_solve: dict[str, tuple[float, float]] = {}  # remaining, equal-share rate
        self._lookup: tuple[Cluster, list[int], list[int]] | None = None
        self._kind_rates: dict[tuple[object, ...], np.ndarray] = {}  # see ``_speed``
        self._nodes: dict[str, tuple[tuple[int, ...], tuple[int, ...]]] = {}  # ``_nodes_of``
        self._assignments: dict[str, Assignment] = {}  # each job's last target (``_target``)
        # max-min and LAS: each solve starts from the last one's basis (``WarmStart``)
        self._warm = WarmStart() if warm_start and pop_k == 1 and warm_starts(objective) \
            else None

    # -- per-cycle view -----------------------------------------------------------------
    def view(self, state: CycleState) -> _Round:
        cached = state.scratch.get(self.name)
        if cached is None:
            cached = state.scratch[self.name] = self._refresh(state)
        return cached

    def _refresh(self, state: CycleState) -> _Round:
        now, snapshot = state.now, state.snapshot
        is_round = self._round_start is None or (
            now >= self._round_start + self.round_seconds - ROUND_TOLERANCE)
        if is_round:
            self._round_start = now
        self._credit(state)
        jobs = sorted((*snapshot.running, *snapshot.waiting),
                      key=lambda j: (j.spec.submit_time, j.job_id))
        active = frozenset(j.job_id for j in jobs)
        if is_round and active != self._active:  # Gavel re-solves at most once per round
            self._solve(state, jobs)
            self._active = active
            # time_on stays: what each job received, for reports
            for book in (self._credited, self._rates, self._nodes, self._assignments):
                for gone in set(book) - active:
                    del book[gone]
        n_types = len(state.cluster.type_names)
        none = np.zeros(n_types)  # arrived since the last solve: no X yet
        x = np.array([self._x.get(j.job_id, none) for j in jobs]).reshape(len(jobs), n_types)
        ran = np.array([self._alone_seconds(j.job_id, n_types) for j in jobs])
        elapsed = np.array([max(now - j.spec.submit_time, 1e-9) for j in jobs])
        fraction = np.maximum(ran.reshape(x.shape) / elapsed[:, None], MIN_FRACTION)
        priority = x / fraction
        allocated = x > 0
        order = np.lexsort((-priority, ~allocated), axis=-1) if len(jobs) else priority
        speed = self._speed(state, jobs)
        runnable = (speed > 0).tolist()  # Python lists: no numpy scalar per (job, type)
        preference = [tuple(t for t in row if ok[t])
                      for row, ok in zip(np.asarray(order).tolist(), runnable, strict=True)]
        return _Round({j.job_id: i for i, j in enumerate(jobs)}, priority, preference,
                      allocated, speed, is_round)

    def _alone_seconds(self, job_id: str, n_types: int) -> np.ndarray:
        """Seconds the job has run on each type in the combination a single ``X`` entry
        stands for (alone; ``PackedGavelRounds`` leaves out time shared with a partner)."""
        return self.time_on.get(job_id, np.zeros(n_types))

    def _gpu_lookup(self, cluster: Cluster) -> tuple[list[int], list[int]]:
        """Each GPU's node and GPU type (as lists, built once per cluster)."""
        cached = self._lookup
        if cached is None or cached[0] is not cluster:
            gpu_node = np.asarray(cluster.gpu_node)
            cached = self._lookup = (cluster, gpu_node.tolist(),
                                     np.asarray(cluster.node_type)[gpu_node].tolist())
        return cached[1], cached[2]

    def _credit(self, state: CycleState) -> None:
        """Add the time since the last cycle to each running job's current GPU type."""
        now, cluster = state.now, state.cluster
        n_types = len(cluster.type_names)
        gpu_kind = self._gpu_lookup(cluster)[1]
        for job in state.snapshot.running:
            started = now if job.run_started is None else job.run_started
            since = max(self._credited.get(job.job_id, -np.inf), started)
            kind = gpu_kind[job.allocation[0]]
            seconds = self.time_on.setdefault(job.job_id, np.zeros(n_types))
            seconds[kind] += max(0.0, now - since)
            self._credited[job.job_id] = now

    def _speed(self, state: CycleState, jobs: Sequence[Job]) -> np.ndarray:
        """(jobs, types): each job's throughput per type at its size (0: it cannot run
        there), from the throughput model, once per job."""
        return np.array(self._speed_rows(state, jobs)).reshape(
            len(jobs), len(state.cluster.type_names))

    def _speed_rows(self, state: CycleState, jobs: Sequence[Job]) -> list[np.ndarray]:
        """``_speed``'s rows, not stacked: jobs of one kind without pins share one array
        (never written to)."""
        rates, cluster = self._rates, state.cluster
        model = state.snapshot.throughput
        # Gavel's table rates a job by its model, batch size and size alone: once per kind.
        by_kind = self._kind_rates if type(model) is GavelThroughputs else None
        for job in jobs:
            if job.job_id not in rates:
                spec = job.spec
                kind = (model, cluster.type_names, spec.model, spec.batch_size, spec.num_gpus)
                known = by_kind.get(kind) if by_kind is not None else None
                if known is None:
                    try:
                        known = np.array([model.rate(spec, Placement.single_node(
                            name, spec.num_gpus)) for name in cluster.type_names])
                    except KeyError as exc:
                        raise ConfigError(f"policy {self.policy}: {_unknown([job], None)}{exc}"
                                          ) from None
                    if by_kind is not None:
                        by_kind[kind] = known
                # no pins: every type (``known`` is never written to)
                rates[job.job_id] = (known * _pinned_to(cluster, spec.gpu_types)
                                     if spec.gpu_types else known)
        return [rates[j.job_id] for j in jobs]

    def _solve(self, state: CycleState, jobs: Sequence[Job]) -> None:
        if not jobs:
            self._x = {}
            return
        problem = self._problem(state, jobs)
        if self.refine is not None:
            problem = self.refine(problem, jobs)
        if self._reads_isolated:
            problem = self._with_isolated_time(problem)
        options = self.options(problem) if callable(self.options) else self.options
        if self._warm is not None:
            options = {**options, "warm": self._warm}
        if self.pop_k > 1:
            allocation = solve_with_pop(self.objective, problem, self.pop_k, **options)
        else:
            allocation = self.objective(problem, **options)
        self._store(problem, allocation)
        self.solves += 1

    def _with_isolated_time(self, problem: AllocationProblem) -> AllocationProblem:
        """The problem with each job's ``isolated_elapsed`` (Gavel's FTF ``t_isolated``)."""
        if problem.remaining is None:
            return problem
        import dataclasses

        rates = problem.equal_share_throughput()
        isolated = []
        for job_id, remaining in zip(problem.job_ids, problem.remaining, strict=True):
            before = self._last_solve.get(job_id)
            seconds = self._isolated.get(job_id, 0.0)
            if before is not None and before[1] > 0:
                seconds += max(0.0, before[0] - float(remaining)) / before[1]
            isolated.append(seconds)
        self._isolated = dict(zip(problem.job_ids, isolated, strict=True))
        self._last_solve = {job_id: (float(r), float(q)) for job_id, r, q in
                            zip(problem.job_ids, problem.remaining, rates, strict=True)}
        return dataclasses.replace(problem, isolated_elapsed=np.array(isolated))

    def _store(self, problem: AllocationProblem, allocation: Allocation) -> None:
        self._x = {job_id: allocation.x[i] for i, job_id in enumerate(problem.job_ids)}

    def _problem(self, state: CycleState, jobs: Sequence[Job]) -> AllocationProblem:
        """Gavel's problem for the active jobs (``_type_problem``), with (pool, type) columns
        when node pools bind some of them (``gavel.pool_columns``)."""
        problem = self._type_problem(state, jobs)
        if not state.cluster.pools:  # no pass over the jobs on a cluster without pools
            return problem
        pools = pool_columns(state.cluster, [j.spec.pool for j in jobs])
        if pools is None:
            return problem
        import dataclasses

        return dataclasses.replace(problem, pools=pools)

    def _type_problem(self, state: CycleState, jobs: Sequence[Job]) -> AllocationProblem:
        """Gavel's problem for the active jobs: types in the cluster's order, remaining work,
        seconds since arrival and attained GPU-seconds. With the ``gavel`` throughput model,
        from Gavel's tables (types mapped to k80, p100, v100; co-located pairs); with any
        other model, from its rates per type at each job's size (``_speed``)."""
        cluster, now = state.cluster, state.now
        by_type = cluster.gpus_by_type()
        counts = {name: by_type[name] for name in cluster.type_names}
        remaining = elapsed = attained = None  # (FIFO, max-min: not read, ``reads_progress``)
        if self._reads_progress or self.refine is not None or self._reads_isolated:
            if not self._attained_only or self.refine is not None or self._reads_isolated:
                remaining = [j.remaining_work(now) for j in jobs]
                elapsed = [now - j.spec.submit_time for j in jobs]
            attained = [j.attained_service(now) for j in jobs]
        model = state.snapshot.throughput
        if not isinstance(model, GavelThroughputs):
            if self.colocation:
                raise ConfigError(f"policy {self.policy}: space sharing needs Gavel's "
                                  f"co-location measurements: use the 'gavel' throughput model")
            return from_rates([j.spec for j in jobs], counts, self._speed(state, jobs),
                              remaining=remaining, elapsed=elapsed, attained=attained)
        try:
            for name in cluster.type_names:
                worker_type(name)
            problem = from_gavel(
                [j.spec for j in jobs], counts, model=model, remaining=remaining,
                elapsed=elapsed, attained=attained, colocation=self.colocation)
        except KeyError as exc:
            raise ConfigError(f"policy {self.policy}: {_unknown(jobs, model)}"
                              f"{exc.args[0] if exc.args else exc}; Gavel policies need the "
                              f"'gavel' throughput model's job types") from None
        if any(j.spec.gpu_types for j in jobs):
            import dataclasses

            pins = np.array([_pinned_to(cluster, j.spec.gpu_types) for j in jobs])
            problem = dataclasses.replace(problem, throughput=problem.throughput * pins)
        return problem

    # -- QueueSort (unused by the allocation cycle; a profile needs one) -----------------
    def sort_key(self, state: CycleState | None, job: Job) -> tuple[float, str]:
        return (job.spec.submit_time, job.job_id)

    # -- Allocate -------------------------------------------------------------------------
    def allocate(self, state: CycleState) -> dict[str, Assignment]:
        """Every job's nodes for this cycle: all re-assigned at a round boundary, else the
        running ones keep theirs and waiting ones fill free GPUs (module docstring)."""
        view = self.view(state)
        cluster = state.cluster
        gpu_node = self._gpu_lookup(cluster)[0]
        current = {job.job_id: self._nodes_of(job, gpu_node) for job in state.snapshot.running}
        if view.is_round:
            room = cluster.node_gpus.astype(np.int64).copy()
            room[list(state.snapshot.down_nodes)] = 0
            candidates = [*state.snapshot.running, *state.snapshot.waiting]
            kept: dict[str, tuple[int, ...]] = {}
        else:
            room = state.node_free.astype(np.int64).copy()
            candidates = list(state.snapshot.waiting)
            kept = current
        workers = {job.job_id: job.spec.num_gpus for job in candidates}
        free = room_by_type(cluster.node_type, room, len(cluster.type_names))
        types = assign_types(self._entries(view, candidates), workers, free,
                             PoolBudget.of(cluster, candidates, room))
        placed = place_round(types, workers, current if view.is_round else {},
                             cluster.node_type, room, pooled_nodes(state, candidates))
        return {job_id: self._target(job_id, nodes)
                for job_id, nodes in {**kept, **placed}.items()}

    def _target(self, job_id: str, nodes: tuple[int, ...]) -> Assignment:
        """An ``Assignment`` of ``nodes`` (sorted), the job's last one while they are the same
        (frozen: reused instead of made again each cycle)."""
        target = self._assignments.get(job_id)
        if target is None or target.nodes != nodes:
            target = self._assignments[job_id] = Assignment(nodes)
        return target

    def _nodes_of(self, job: Job, gpu_node: list[int]) -> tuple[int, ...]:
        """A running job's nodes (``Assignment.of(job, cluster).nodes``), kept while it holds
        the same GPUs."""
        held = job.allocation
        known = self._nodes.get(job.job_id)
        if known is None or known[0] is not held:
            known = self._nodes[job.job_id] = (held, tuple(sorted([gpu_node[g] for g in held])))
        return known[1]

    def _entries(self, view: _Round, jobs: Sequence[Job]) -> list[Entry]:
        """(job, type) entries: allocated types at their priority; types with ``X = 0`` after
        all of them (work conservation), the job's faster types first."""
        entries = []
        for job in jobs:
            row = view.row[job.job_id]
            speed = view.speed[row]
            top = float(speed.max(initial=0.0)) or 1.0
            tiebreak = (job.spec.submit_time, job.job_id)
            for t in view.preference[row]:
                priority = (float(view.priority[row, t]) if view.allocated[row, t]
                            else -2.0 + float(speed[t]) / top)
                entries.append(Entry(priority, tiebreak, job.job_id, t))
        return entries

    def seconds_on(self, job_id: str) -> np.ndarray:
        """Seconds the job has run on each GPU type (cluster type order) so far."""
        return self.time_on.get(job_id, np.zeros(0))


def reads_isolated_time(objective: Objective) -> bool:
    """Whether ``objective`` may read ``AllocationProblem.isolated_elapsed`` (FTF's
    ``t_isolated``): any objective but Gavel's own that never do (FIFO, max-min, LAS,
    weighted fairness, makespan, cost), whose rounds skip that bookkeeping at each solve."""
    from dlsched.policies.gavel.efficiency import fifo_hetero, min_cost, min_makespan
    from dlsched.policies.gavel.fairness import las, max_min_fairness, weighted_fairness

    return objective not in (fifo_hetero, min_cost, min_makespan, las, max_min_fairness,
                             weighted_fairness)


def reads_progress(objective: Objective) -> bool:
    """Whether ``objective`` may read a job's remaining work, time since arrival or attained
    service (``AllocationProblem.remaining``, ``elapsed``, ``attained``): any objective but
    Gavel's FIFO and max-min, which read throughputs, scales and weights alone (their rounds
    read none of the three, ``from_gavel`` fills its defaults: reading each job's progress at
    every reset was ~5% of the instructions of Gavel's 1,000-job FIFO run)."""
    from dlsched.policies.gavel.efficiency import fifo_hetero
    from dlsched.policies.gavel.fairness import max_min_fairness

    return objective not in (fifo_hetero, max_min_fairness)


def reads_attained_only(objective: Objective) -> bool:
    """Whether ``objective`` reads a job's attained service but not its remaining work or
    time since arrival: Gavel's LAS (``fairness.las``; its problem's ``remaining`` and
    ``elapsed`` are then ``from_gavel``'s defaults: a settle of each job's progress at every
    reset saved)."""
    from dlsched.policies.gavel.fairness import las

    return objective is las


def warm_starts(objective: Objective) -> bool:
    """Whether ``objective`` takes a ``WarmStart`` (``warm=``): max-min fairness and LAS."""
    from dlsched.policies.gavel.fairness import las, max_min_fairness

    return objective in (las, max_min_fairness)


def _pinned_to(cluster: Cluster, gpu_types: tuple[str, ...]) -> np.ndarray:
    """Per cluster type: 1 where the job's GPU-type pins allow it (no pins: every type), else
    0 (its throughput there counts as 0: Gavel never gives it that type)."""
    return np.array([1.0 if not gpu_types or name in gpu_types else 0.0
                     for name in cluster.type_names])


def _unknown(jobs: Sequence[Job], model: GavelThroughputs | None) -> str:
    """'job <id> (model <m>, batch <b>): ' for the first job the Gavel table does not know."""
    table = model or GavelThroughputs()
    for job in jobs:
        try:
            table.job_type(job.spec)
        except KeyError:
            return (f"job {job.job_id} (model {job.spec.model!r}, batch size "
                    f"{job.spec.batch_size!r}): ")
    return ""
