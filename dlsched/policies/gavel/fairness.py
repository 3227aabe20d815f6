"""Gavel's max-min fairness family (Narayanan et al., OSDI'20 §4.1, §4.3): single-LP policies.

Each job's value is linear in ``X`` and the LP maximizes the smallest value (``MaxMinLP``). A
second LP then keeps the minimum and maximizes the sum of values (``pareto=True``): the paper's
LP alone leaves the allocation of non-bottleneck jobs arbitrary, often idle (Gavel's later
water-filling variant fixes the same problem with more LPs).
"""

from __future__ import annotations

import dataclasses
import time

import numpy as np

from dlsched.policies.gavel.lp import (
    MaxMinLP,
    WarmStart,
    job_classes,
    job_index,
    single_columns,
    thread_solver,
)
from dlsched.policies.gavel.pool_columns import PoolColumns
from dlsched.policies.gavel.problem import Allocation, AllocationProblem, effective_throughput

DEFAULT_HORIZON = 360.0  # seconds: Gavel's round length, LAS's look-ahead


def solve_max_min(value: np.ndarray, offset: np.ndarray, gpus: np.ndarray,
                  capacity: np.ndarray, pareto: bool, warm: WarmStart | None = None,
                  ids: tuple[str, ...] = (), pools: PoolColumns | None = None
                  ) -> tuple[np.ndarray, float, int]:
    """``max_X min_j offset_j + sum_t value[j, t] X[j, t]`` under Gavel's constraints.

    Jobs with identical data share one LP row (``job_classes``). Returns ``X``, the optimum and
    the number of LP solves. The LP is dropped here: it is held by the thread's solver.
    ``warm``: start each stage from the bases of the jobs ``ids`` (one per row) kept by the
    last solve (``WarmStart``), and keep this one's. ``pools``: solve over its (pool, type)
    columns and capacities instead of ``capacity`` per type; ``X`` comes back per type."""
    if pools is not None:
        value, capacity = pools.spread(value), pools.capacity
        if warm is not None:
            warm.columns_are((pools.column_group, tuple(pools.column_type.tolist())))
    n, n_types = value.shape
    key = np.empty((n, n_types + 2))
    key[:, :n_types], key[:, n_types], key[:, n_types + 1] = value, offset, gpus
    reps, inverse, counts = job_classes(key)
    columns, jobs, types = single_columns(value[reps], gpus[reps] * counts)
    lp = MaxMinLP(columns, capacity, offset[reps], highs=thread_solver())
    rep_ids = [ids[r] for r in reps.tolist()] if warm is not None else []
    index = job_index(ids, inverse) if warm is not None else {}  # (both stages keep it)
    if warm is not None:
        warm.first.start(lp, rep_ids, jobs, types, n_types)
    x_cols, best = lp.solve()
    if warm is not None:
        warm.first.keep(lp, index, jobs, types, n_types)
    if pareto:
        if warm is not None:  # HiGHS keeps a basis through the changed costs and bounds
            warm.second.start(lp, rep_ids, jobs, types, n_types)
        x_cols = lp.maximize_total(best, counts.astype(float), first=x_cols)
        if warm is not None:
            warm.second.keep(lp, index, jobs, types, n_types)
    x_cols = np.clip(x_cols, 0.0, 1.0)
    x_reps = np.zeros((len(reps), value.shape[1]))
    x_reps[jobs, types] = x_cols
    achieved = float(np.min(columns.value.times(x_cols) + offset[reps]))
    x = x_reps[inverse]
    return (x if pools is None else pools.collapse(x)), achieved, lp.solves


def agnostic_throughput(problem: AllocationProblem) -> np.ndarray:
    """Each job's mean throughput over the types it can run on, on each of those types: what a
    heterogeneity-agnostic scheduler assumes (§4.1, "heterogeneity-agnostic" baselines)."""
    runnable = problem.throughput > 0
    mean = problem.throughput.sum(axis=1) / runnable.sum(axis=1)
    return np.where(runnable, mean[:, None], 0.0)


def normalized_throughput(problem: AllocationProblem, throughput: np.ndarray) -> np.ndarray:
    """``throughput / (weight * throughput(j, X^equal))`` for a throughput per job (§4.1)."""
    return throughput / (problem.weights * problem.equal_share_throughput())


def max_min_fairness(problem: AllocationProblem, heterogeneity_aware: bool = True,
                     pareto: bool = True, warm: WarmStart | None = None) -> Allocation:
    """Gavel §4.1, weighted max-min fairness (LAS in the paper)::

        max_X min_j  throughput(j, X) / (w_j * throughput(j, X^equal))

    ``X^equal`` gives each job an equal share of the GPUs spread over types in proportion to
    their counts (``AllocationProblem.equal_share``), so a value of 1 means "as well off as on
    1/n of the cluster" (the sharing-incentive property, §4.4). The heterogeneity-agnostic
    variant replaces each job's throughputs with their mean over the types it can run on: it
    then equalizes time shares and cannot tell a 10x speed-up from 1.1x.
    """
    started = time.perf_counter()
    if not heterogeneity_aware:
        problem = dataclasses.replace(problem, throughput=agnostic_throughput(problem))
    value = problem.throughput / (problem.weights * problem.equal_share_throughput())[:, None]
    x, best, solves = solve_max_min(value, np.zeros(problem.n_jobs), problem.scale,
                                    problem.counts, pareto, warm, problem.job_ids,
                                    problem.pools)
    name = "max_min_fairness" if heterogeneity_aware else "max_min_fairness_agnostic"
    return Allocation(name, x, best, time.perf_counter() - started, lp_solves=solves)


def tenant_weighted(problem: AllocationProblem) -> AllocationProblem:
    """Job weights ``W_tenant * w_j / sum(w of the tenant's jobs)``: the tenant's weight split
    over its jobs by their own weights (Gavel §4.3, weighted fairness across entities)."""
    if problem.tenant is None or problem.tenant_weights is None:
        raise ValueError("weighted fairness needs problem.tenant and problem.tenant_weights")
    per_tenant = np.bincount(problem.tenant, weights=problem.weights,
                             minlength=len(problem.tenant_weights))
    weights = problem.tenant_weights[problem.tenant] * problem.weights / per_tenant[problem.tenant]
    return dataclasses.replace(problem, weights=weights)


def weighted_fairness(problem: AllocationProblem, pareto: bool = True) -> Allocation:
    """Gavel §4.3, hierarchical weighted fairness in one LP: tenants get normalized throughput in
    proportion to their weights, split among their jobs by job weight (``tenant_weighted``),
    then heterogeneity-aware max-min fairness. The paper's water-filling over several LPs is
    replaced by the ``pareto`` second stage."""
    result = max_min_fairness(tenant_weighted(problem), pareto=pareto)
    return dataclasses.replace(result, policy="weighted_fairness")


def las(problem: AllocationProblem, horizon: float = DEFAULT_HORIZON,
        pareto: bool = True, warm: WarmStart | None = None) -> Allocation:
    """Least attained service as an LP: max-min of each job's attained service after the next
    ``horizon`` seconds, weighted by priority::

        max_X min_j (attained_j + horizon * scale_j * throughput(j, X) / mix_j) / w_j

    ``attained`` is in GPU-seconds (Tiresias' service); progress is counted in GPU-seconds of the
    cluster's average GPU (``mix_j``: the job's throughput with its time spread over types by
    their counts), so faster GPUs count for more. The job with the least service is served
    first, as in LAS; Gavel §4.1 introduces its max-min policy as the generalization of LAS.
    """
    started = time.perf_counter()
    attained = np.zeros(problem.n_jobs) if problem.attained is None else problem.attained
    per_round = problem.scale / (problem.mix_throughput() * problem.weights)
    value = problem.throughput * per_round[:, None]
    x, best, solves = solve_max_min(value, attained / (horizon * problem.weights),
                                    problem.scale, problem.counts, pareto, warm, problem.job_ids,
                                    problem.pools)
    return Allocation("las", x, best * horizon, time.perf_counter() - started, lp_solves=solves)


def fairness_values(problem: AllocationProblem, allocation: Allocation) -> np.ndarray:
    """Each job's normalized throughput, as the allocation's fairness policy measures it."""
    if allocation.policy == "max_min_fairness_agnostic":
        problem = dataclasses.replace(problem, throughput=agnostic_throughput(problem))
    elif allocation.policy == "weighted_fairness":
        problem = tenant_weighted(problem)
    return normalized_throughput(problem, effective_throughput(problem, allocation))


def las_values(problem: AllocationProblem, allocation: Allocation,
               horizon: float = DEFAULT_HORIZON) -> np.ndarray:
    """Each job's weighted attained service after ``horizon`` seconds under the allocation."""
    attained = np.zeros(problem.n_jobs) if problem.attained is None else problem.attained
    gained = horizon * problem.scale * effective_throughput(problem, allocation)
    return (attained + gained / problem.mix_throughput()) / problem.weights
