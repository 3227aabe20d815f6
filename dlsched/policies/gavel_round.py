"""Gavel's round-based mechanism (Narayanan et al., OSDI'20 §5) as one multi-point plugin.

An LP policy (``dlsched.policies.gavel``) gives ``X[j, t]``, the fraction of time job ``j``
should spend on GPU type ``t``. Rounds realize it: ``priority[j, t] = X[j, t] / (fraction of
its time since arrival job j has run on t)`` (§5; a job that has not run on ``t`` yet counts
``MIN_FRACTION``, so new jobs go first). Every cycle:

- **QueueSort**: waiting jobs by their best priority (then submit time, id);
- **Filter** (dynamic): a job may use the first type, in its priority order, with room for its
  gang; if none has room, its best type (where it may preempt). Types with ``X = 0`` come last
  and are used only when free (work conservation; such a job never preempts);
- **PostFilter**: only at round boundaries, running jobs whose priority on their type is below
  the waiting job's on that type, its preferred types first and the lowest priority first.

``X`` is re-solved only when the set of active jobs (waiting + running) changes. Time on each
type is counted per job at every cycle from the running jobs' allocations.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from dlsched.errors import ConfigError
from dlsched.perf.gavel_table import GavelThroughputs, worker_type
from dlsched.policies.gavel.inputs import from_gavel
from dlsched.policies.gavel.pop import solve_with_pop
from dlsched.policies.gavel.problem import Allocation, AllocationProblem
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
    is_round: bool


class GavelRounds:
    """QueueSort, Filter, PostFilter and Wakeup for Gavel's priorities.

    ``objective(problem, **options)`` gives X (with POP over ``pop_k`` sub-problems when
    ``pop_k > 1``); ``options`` may be a function of the problem (prices per its types);
    ``refine(problem, jobs)`` may add data to the problem (tenants, weights)."""

    name = "gavel-rounds"
    static = False  # the filter and the order change every round

    def __init__(self, policy: str, objective: Objective,
                 options: dict | Callable[[AllocationProblem], dict] | None = None,
                 round_seconds: float = 360.0, pop_k: int = 1,
                 refine: Callable[[AllocationProblem, Sequence[Job]], AllocationProblem]
                 | None = None) -> None:
        if round_seconds <= 0 or pop_k < 1:
            raise ValueError("round_seconds must be > 0 and pop_k >= 1")
        self.policy, self.objective, self.options = policy, objective, options or {}
        self.round_seconds, self.pop_k = round_seconds, pop_k
        self.refine = refine
        self._x_throughput: dict[str, np.ndarray] = {}
        self.time_on: dict[str, np.ndarray] = {}  # seconds run per type (cluster order), by job
        self._credited: dict[str, float] = {}
        self._active: frozenset[str] | None = None
        self._x: dict[str, np.ndarray] = {}
        self._round_start: float | None = None
        self.solves = 0

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
        if active != self._active:
            self._solve(state, jobs)
            self._active = active
            for gone in set(self._credited) - active:
                del self._credited[gone]  # time_on stays: what each job received, for reports
        n_types = len(state.cluster.type_names)
        x = np.array([self._x[j.job_id] for j in jobs]).reshape(len(jobs), n_types)
        ran = np.array([self.time_on.get(j.job_id, np.zeros(n_types)) for j in jobs])
        elapsed = np.array([max(now - j.spec.submit_time, 1e-9) for j in jobs])
        fraction = np.maximum(ran.reshape(x.shape) / elapsed[:, None], MIN_FRACTION)
        priority = x / fraction
        allocated = x > 0
        order = np.lexsort((-priority, ~allocated), axis=-1) if len(jobs) else priority
        runnable = self._runnable(state, jobs)
        preference = [tuple(int(t) for t in row if runnable[i, t])
                      for i, row in enumerate(order)]
        return _Round({j.job_id: i for i, j in enumerate(jobs)}, priority, preference,
                      allocated, is_round)

    def _credit(self, state: CycleState) -> None:
        """Add the time since the last cycle to each running job's current GPU type."""
        now, cluster = state.now, state.cluster
        n_types = len(cluster.type_names)
        for job in state.snapshot.running:
            started = now if job.run_started is None else job.run_started
            since = max(self._credited.get(job.job_id, -np.inf), started)
            kind = int(cluster.node_type[cluster.gpu_node[job.allocation[0]]])
            seconds = self.time_on.setdefault(job.job_id, np.zeros(n_types))
            seconds[kind] += max(0.0, now - since)
            self._credited[job.job_id] = now

    def _runnable(self, state: CycleState, jobs: Sequence[Job]) -> np.ndarray:
        """(jobs, types): where each job may run at all (the throughput model's rate > 0)."""
        rows = [self._x_throughput.get(j.job_id) for j in jobs]
        n_types = len(state.cluster.type_names)
        return np.array([r > 0 if r is not None else np.ones(n_types, bool) for r in rows]
                        ).reshape(len(jobs), n_types)

    def _solve(self, state: CycleState, jobs: Sequence[Job]) -> None:
        if not jobs:
            self._x, self._x_throughput = {}, {}
            return
        problem = self._problem(state, jobs)
        if self.refine is not None:
            problem = self.refine(problem, jobs)
        options = self.options(problem) if callable(self.options) else self.options
        if self.pop_k > 1:
            allocation = solve_with_pop(self.objective, problem, self.pop_k, **options)
        else:
            allocation = self.objective(problem, **options)
        self._x = {job_id: allocation.x[i] for i, job_id in enumerate(problem.job_ids)}
        self._x_throughput = {job_id: problem.throughput[i]
                              for i, job_id in enumerate(problem.job_ids)}
        self.solves += 1

    def _problem(self, state: CycleState, jobs: Sequence[Job]) -> AllocationProblem:
        """Gavel's problem for the active jobs: types in the cluster's order (mapped to k80,
        p100, v100), remaining steps, seconds since arrival and attained GPU-seconds."""
        cluster, now = state.cluster, state.now
        by_type = cluster.gpus_by_type()
        model = state.snapshot.throughput
        model = model if isinstance(model, GavelThroughputs) else None
        try:
            for name in cluster.type_names:
                worker_type(name)
            return from_gavel(
                [j.spec for j in jobs], {name: by_type[name] for name in cluster.type_names},
                model=model, remaining=[j.remaining_work(now) for j in jobs],
                elapsed=[now - j.spec.submit_time for j in jobs],
                attained=[j.attained_service(now) for j in jobs], colocation=False)
        except KeyError as exc:
            raise ConfigError(f"policy {self.policy}: {_unknown(jobs, model)}"
                              f"{exc.args[0] if exc.args else exc}; Gavel policies need the "
                              f"'gavel' throughput model's job types") from None

    # -- QueueSort ------------------------------------------------------------------------
    def sort_key(self, state: CycleState, job: Job) -> tuple[float, float, str]:
        view = self.view(state)
        row = view.row[job.job_id]
        return (-float(view.priority[row].max(initial=0.0)), job.spec.submit_time, job.job_id)

    # -- Filter ---------------------------------------------------------------------------
    def filter(self, state: CycleState, job: Job, mask: np.ndarray) -> np.ndarray:
        view = self.view(state)
        row = view.row[job.job_id]
        node_type = state.cluster.node_type
        capacity = state.capacity(job.spec.gpu_share)
        for t in view.preference[row]:
            nodes = mask & (node_type == t)
            if int(capacity[nodes].sum()) >= job.spec.num_gpus:
                return nodes
        best = view.preference[row][:1]
        if best and view.allocated[row, best[0]]:
            return mask & (node_type == best[0])  # full: preemption may make room there
        return mask & np.isin(node_type, view.preference[row])

    # -- PostFilter -----------------------------------------------------------------------
    def post_filter(self, state: CycleState, job: Job) -> tuple[Job, ...]:
        """At a round boundary: running jobs with a lower priority on their own type than
        this job has there, on the types it is allocated, preferred types first."""
        view = self.view(state)
        if not view.is_round:
            return ()
        row = view.row[job.job_id]
        rank = {t: i for i, t in enumerate(view.preference[row]) if view.allocated[row, t]}
        cluster = state.cluster
        candidates = []
        for other in state.snapshot.running:
            if other.job_id in state.evicted:
                continue
            kind = int(cluster.node_type[cluster.gpu_node[other.allocation[0]]])
            theirs = view.priority[view.row[other.job_id], kind]
            if kind in rank and theirs < view.priority[row, kind]:
                candidates.append((rank[kind], theirs, other.job_id, other))
        return tuple(c[-1] for c in sorted(candidates, key=lambda c: c[:3]))

    # -- Wake-ups -------------------------------------------------------------------------
    def next_wakeup(self, state: CycleState) -> float | None:
        """Asks for nothing (the simulator runs a cycle every round) but keeps the accounts:
        a cycle with no waiting job calls no other point of this plugin."""
        self.view(state)
        return None

    def seconds_on(self, job_id: str) -> np.ndarray:
        """Seconds the job has run on each GPU type (cluster type order) so far."""
        return self.time_on.get(job_id, np.zeros(0))


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
