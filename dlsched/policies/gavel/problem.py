"""The allocation problem Gavel's policies solve, and its result (Narayanan et al., OSDI'20 §3.1).

An allocation ``X[j, t]`` is the fraction of wall-clock time job ``j`` spends on GPU type ``t``
(each time on ``scale[j]`` GPUs of that type). Gavel's constraints (§3.1): ``0 <= X <= 1``, each
job's time fractions sum to at most 1, and per type ``sum_j X[j, t] * scale[j] <= count[t]``.
With space sharing (§3.1 "space sharing"), ``pair_x[p, t]`` is the time fraction the pair of jobs
``pairs[p]`` spends co-located on the same ``scale`` GPUs of type ``t``; it counts against both
jobs' time and once against the type's GPUs. The effective throughput of a job is
``sum_t T[j, t] X[j, t]`` plus its co-located rate times ``pair_x`` over its pairs.
On a cluster whose node pools bind the jobs (``pools``), the LPs solve over (pool, type)
columns with one capacity row each (``pool_columns``) and give ``X`` summed back per type.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import numpy as np

from dlsched.policies.gavel.pool_columns import PoolColumns

FloatArray = np.ndarray
IntArray = np.ndarray
TOLERANCE = 1e-6


def _frozen(values: object, dtype: type = np.float64) -> np.ndarray:
    array = np.array(values, dtype=dtype)
    array.setflags(write=False)
    return array


@dataclass(frozen=True, eq=False)
class Colocation:
    """Space-sharing rates by job class: ``rates[t, a, b]`` is the steps/s of a class-``a`` job
    sharing GPUs of type ``t`` with a class-``b`` job (0: not measured or cannot share)."""

    job_class: IntArray
    rates: FloatArray

    def __post_init__(self) -> None:
        object.__setattr__(self, "job_class", _frozen(self.job_class, np.int64))
        object.__setattr__(self, "rates", _frozen(self.rates))
        if self.rates.ndim != 3 or self.rates.shape[1] != self.rates.shape[2]:
            raise ValueError(f"colocation rates must be (types, classes, classes), got "
                             f"{self.rates.shape}")

    def pair_rates(self, pairs: IntArray) -> FloatArray:
        """``(P, types, 2)``: rate of each pair's first and second job on each type."""
        first, second = self.job_class[pairs[:, 0]], self.job_class[pairs[:, 1]]
        return np.stack([self.rates[:, first, second].T, self.rates[:, second, first].T], axis=2)


@dataclass(frozen=True, eq=False)
class AllocationProblem:
    """One scheduling round's inputs: active jobs, GPU types with counts, throughputs (steps/s).

    Optional per-job state feeds the objectives that need it: ``remaining`` steps and ``elapsed``
    seconds since arrival (FTF, makespan, cost), ``isolated_elapsed`` the seconds the job's
    progress so far would have taken on its equal share (FTF's ``t_isolated``; None: take
    ``elapsed``), ``attained`` GPU-seconds (LAS), ``deadline``
    seconds from now (cost with SLOs), ``tenant`` index with ``tenant_weights`` (hierarchical
    weighted fairness). ``equal_share`` is each job's time fraction under Gavel's ``X^equal``
    (default ``min(1, sum(count) / (n_jobs * scale))``: an equal share of the GPUs, spread over
    types in proportion to their counts); POP's sub-problems inherit the full problem's.
    ``pools``: the (pool, type) columns of a cluster whose node pools bind the jobs (the LPs'
    capacity rows, ``pool_columns``); None: one column per type.
    """

    job_ids: tuple[str, ...]
    worker_types: tuple[str, ...]
    counts: FloatArray
    throughput: FloatArray
    scale: FloatArray
    weights: FloatArray | None = None
    remaining: FloatArray | None = None
    elapsed: FloatArray | None = None
    attained: FloatArray | None = None
    deadline: FloatArray | None = None
    tenant: IntArray | None = None
    tenant_weights: FloatArray | None = None
    equal_share: FloatArray | None = None
    isolated_elapsed: FloatArray | None = None
    colocation: Colocation | None = field(default=None)
    pools: PoolColumns | None = None

    def __post_init__(self) -> None:
        n = len(self.job_ids)
        self._set("counts", _frozen(self.counts))
        self._set("throughput", _frozen(self.throughput).reshape(n, len(self.worker_types)))
        self._set("scale", _frozen(self.scale))
        self._set("weights", _frozen(np.ones(n) if self.weights is None else self.weights))
        for name in ("remaining", "elapsed", "attained", "deadline", "equal_share",
                     "tenant_weights", "isolated_elapsed"):
            if getattr(self, name) is not None:
                self._set(name, _frozen(getattr(self, name)))
        if self.tenant is not None:
            self._set("tenant", _frozen(self.tenant, np.int64))
        problem = self.problem()
        if problem is not None:
            raise ValueError(problem)

    def _set(self, name: str, value: object) -> None:
        object.__setattr__(self, name, value)

    def problem(self) -> str | None:
        """The first inconsistency in the inputs, or None."""
        n, types = self.n_jobs, self.n_types
        per_job = ("scale", "weights", "remaining", "elapsed", "attained", "deadline",
                   "equal_share", "tenant", "isolated_elapsed")
        for name in per_job:
            value = getattr(self, name)
            if value is not None and value.shape != (n,):
                return f"{name} must have one value per job ({n}), got shape {value.shape}"
        # (the arrays' own ``any``: a round's LP is solved at each allocation reset, and
        # ``np.any``'s dispatch cost more than these checks of a hundred jobs)
        if self.counts.shape != (types,) or (self.counts < 0).any():
            return f"counts must be {types} non-negative numbers, got {self.counts}"
        if ((self.throughput < 0).any() or (self.scale < 1).any()
                or (self.weights <= 0).any()):
            return "throughputs must be >= 0, scale factors >= 1 and weights > 0"
        unrunnable = self.throughput.max(axis=1, initial=0) <= 0
        if unrunnable.any():
            stuck = [self.job_ids[j] for j in np.flatnonzero(unrunnable)]
            return f"jobs that cannot run on any worker type: {stuck[:5]}"
        if self.colocation is not None and self.colocation.job_class.shape != (n,):
            return "colocation.job_class must have one class per job"
        if self.pools is not None and (self.pools.allowed.shape != (n, len(self.pools.capacity))
                                       or self.pools.n_types != types):
            return "pools must have one row of allowed columns per job and the problem's types"
        return None

    @property
    def n_jobs(self) -> int:
        return len(self.job_ids)

    @property
    def n_types(self) -> int:
        return len(self.worker_types)

    def lp_value(self, value: FloatArray) -> FloatArray:
        """A (jobs, types) value as the LP's columns: itself, or per (pool, type) column
        (``PoolColumns.spread``) when node pools bind the jobs."""
        return value if self.pools is None else self.pools.spread(value)

    def lp_capacity(self) -> FloatArray:
        """The GPUs of each LP column (``lp_value``'s columns)."""
        return self.counts if self.pools is None else self.pools.capacity

    def by_type(self, x: FloatArray) -> FloatArray:
        """An LP solution over ``lp_value``'s columns as time per type."""
        return x if self.pools is None else self.pools.collapse(x)

    def share_fraction(self) -> FloatArray:
        """Each job's total time fraction under ``X^equal`` (see the class docstring)."""
        if self.equal_share is not None:
            return self.equal_share
        return np.minimum(1.0, self.counts.sum() / (self.n_jobs * self.scale))

    def mix_throughput(self) -> FloatArray:
        """Steps/s with all of a job's time spread over types in proportion to their counts."""
        return self.throughput @ (self.counts / self.counts.sum())

    def equal_share_throughput(self) -> FloatArray:
        """``throughput(j, X^equal)``, the normalizer of Gavel's fairness policies (§4.1)."""
        return self.share_fraction() * self.mix_throughput()

    def subproblem(self, jobs: IntArray, capacity_fraction: float) -> AllocationProblem:
        """The jobs ``jobs`` on ``capacity_fraction`` of every type (POP), keeping each job's
        ``X^equal`` of the full problem so that sub-problems share one normalization."""
        def pick(values: np.ndarray | None) -> np.ndarray | None:
            return None if values is None else values[jobs]

        colocation = self.colocation
        if colocation is not None:
            colocation = Colocation(colocation.job_class[jobs], colocation.rates)
        return dataclasses.replace(
            self, job_ids=tuple(self.job_ids[j] for j in jobs),
            counts=self.counts * capacity_fraction, throughput=self.throughput[jobs],
            scale=self.scale[jobs], weights=self.weights[jobs], remaining=pick(self.remaining),
            elapsed=pick(self.elapsed), attained=pick(self.attained),
            deadline=pick(self.deadline), tenant=pick(self.tenant),
            equal_share=self.share_fraction()[jobs], colocation=colocation,
            isolated_elapsed=pick(self.isolated_elapsed),
            pools=None if self.pools is None else self.pools.subset(jobs, capacity_fraction))


@dataclass(frozen=True, eq=False)
class Allocation:
    """A policy's answer: time fractions per (job, type) and per (co-located pair, type).

    ``objective`` is the policy's objective value (its sense depends on the policy, see
    ``objectives.SCORES``); ``solve_seconds`` is the wall time of building and solving.
    """

    policy: str
    x: FloatArray
    objective: float
    solve_seconds: float
    pairs: IntArray = field(default_factory=lambda: np.zeros((0, 2), dtype=np.int64))
    pair_x: FloatArray | None = None
    lp_solves: int = 1

    def __post_init__(self) -> None:
        object.__setattr__(self, "x", _frozen(self.x))
        object.__setattr__(self, "pairs", _frozen(self.pairs, np.int64).reshape(-1, 2))
        pair_x = np.zeros((len(self.pairs), self.x.shape[1])) if self.pair_x is None \
            else self.pair_x
        object.__setattr__(self, "pair_x",
                           _frozen(pair_x).reshape(len(self.pairs), self.x.shape[1]))

    def time_fraction(self) -> FloatArray:
        """Each job's total time fraction, alone or co-located."""
        shared = np.bincount(self.pairs.ravel(), weights=np.repeat(self.pair_x.sum(axis=1), 2),
                             minlength=len(self.x))
        return self.x.sum(axis=1) + shared


def gpus_used(problem: AllocationProblem, allocation: Allocation) -> FloatArray:
    """GPUs of each type the allocation occupies on average."""
    pair_scale = problem.scale[allocation.pairs[:, 0]] if len(allocation.pairs) else np.zeros(0)
    return problem.scale @ allocation.x + pair_scale @ allocation.pair_x


def effective_throughput(problem: AllocationProblem, allocation: Allocation) -> FloatArray:
    """Steps/s of each job under the allocation (Gavel §3.1, ``throughput(m, X)``)."""
    alone = (problem.throughput * allocation.x).sum(axis=1)
    if not len(allocation.pairs):
        return alone
    if problem.colocation is None:
        raise ValueError("allocation has co-located pairs but the problem has no colocation")
    rates = problem.colocation.pair_rates(allocation.pairs)
    gained = (rates * allocation.pair_x[:, :, None]).sum(axis=1)
    return alone + np.bincount(allocation.pairs.ravel(), weights=gained.ravel(),
                               minlength=problem.n_jobs)


def violations(problem: AllocationProblem, allocation: Allocation,
               tolerance: float = TOLERANCE) -> list[str]:
    """Every broken constraint of §3.1, as sentences; empty when the allocation is feasible."""
    found = []
    if allocation.x.shape != problem.throughput.shape:
        return [f"x has shape {allocation.x.shape}, expected {problem.throughput.shape}"]
    if allocation.x.min(initial=0) < -tolerance or allocation.pair_x.min(initial=0) < -tolerance:
        found.append("negative time fraction")
    over = np.flatnonzero(allocation.time_fraction() > 1 + tolerance)
    if len(over):
        found.append(f"time fractions above 1 for jobs {over[:5].tolist()}")
    used = gpus_used(problem, allocation)
    for t in np.flatnonzero(used > problem.counts * (1 + tolerance) + tolerance):
        found.append(f"{problem.worker_types[t]}: {used[t]:.4f} GPUs used of {problem.counts[t]}")
    if np.any(allocation.x[problem.throughput <= 0] > tolerance):
        found.append("time on a worker type where the job cannot run")
    return found + _pair_violations(problem, allocation, tolerance) + _pool_violations(
        problem, allocation, tolerance)


def _pool_violations(problem: AllocationProblem, allocation: Allocation,
                     tolerance: float) -> list[str]:
    """With (pool, type) columns: no time on a type none of a job's columns has, and no
    column over its GPUs counting the jobs with one column of the type (a pooled job's time
    on a type is all in its pool; where a job may use several, the split is not known)."""
    pools = problem.pools
    if pools is None:
        return []
    of_type = pools.allowed.astype(float) @ (
        pools.column_type[:, None] == np.arange(problem.n_types)).astype(float)
    found = []
    if np.any(allocation.x[of_type == 0] > tolerance):
        found.append("time on a GPU type the job's pool does not have")
    one = np.where(of_type == 1, allocation.x, 0.0) * problem.scale[:, None]
    used = (pools.allowed * one[:, pools.column_type]).sum(axis=0)
    for c in np.flatnonzero(used > pools.capacity * (1 + tolerance) + tolerance):
        found.append(f"{pools.column_group[c]}/{problem.worker_types[pools.column_type[c]]}: "
                     f"{used[c]:.4f} GPUs used of {pools.capacity[c]}")
    return found


def _pair_violations(problem: AllocationProblem, allocation: Allocation,
                     tolerance: float) -> list[str]:
    pairs = allocation.pairs
    if not len(pairs):
        return []
    if problem.colocation is None:
        return ["co-located pairs without colocation rates"]
    found = []
    if np.any(pairs[:, 0] == pairs[:, 1]):
        found.append("a job paired with itself")
    if np.any(problem.scale[pairs[:, 0]] != problem.scale[pairs[:, 1]]):
        found.append("a pair of jobs with different scale factors")
    rates = problem.colocation.pair_rates(pairs)
    if np.any(allocation.pair_x[(rates <= 0).any(axis=2)] > tolerance):
        found.append("shared time on a type where the pair cannot share")
    return found
