"""Gavel's efficiency policies (Narayanan et al., OSDI'20 §4.2) and its FIFO baseline.

``min_makespan`` is a max-min LP; ``min_cost`` a linear-fractional program turned into an LP by
the Charnes-Cooper substitution; ``fifo_hetero`` a greedy rule, no LP.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import numpy as np

from dlsched.policies.gavel.fairness import solve_max_min
from dlsched.policies.gavel.lp import INF, Entries, LinearProgram, single_columns, stack
from dlsched.policies.gavel.problem import Allocation, AllocationProblem, effective_throughput

SECONDS_PER_HOUR = 3600.0


def _remaining(problem: AllocationProblem) -> np.ndarray:
    if problem.remaining is None or np.any(problem.remaining <= 0):
        raise ValueError("this policy needs remaining steps > 0 for every job")
    return problem.remaining


def min_makespan(problem: AllocationProblem, pareto: bool = True) -> Allocation:
    """Gavel §4.2, minimize makespan: ``min_X max_j R_j / throughput(j, X)``, solved as
    ``max_X min_j throughput(j, X) / R_j``; ``objective`` is the makespan in seconds if every
    job kept this allocation to its end."""
    started = time.perf_counter()
    value = problem.throughput / _remaining(problem)[:, None]
    # Steps per second over steps left is ~1e-5 for hours of work: the second stage's
    # z >= z* (1 - 1e-9) then lies below HiGHS's tolerances and it reports the LP
    # infeasible. X does not change when every value is scaled alike: solve with the largest
    # value at 1 and scale z* back.
    top = float(value.max(initial=0.0))
    unit = top if top > 0 else 1.0
    x, best, solves = solve_max_min(value / unit, np.zeros(problem.n_jobs), problem.scale,
                                    problem.counts, pareto, pools=problem.pools)
    return Allocation("min_makespan", x, 1.0 / (best * unit), time.perf_counter() - started,
                      lp_solves=solves)


def min_cost(problem: AllocationProblem, prices: Sequence[float],
             meet_deadlines: bool = True) -> Allocation:
    """Gavel §4.2, minimize cost (with SLOs): maximize normalized throughput per dollar,

        max_X  sum_j throughput(j, X) / R_j  /  sum_j sum_t price_t * scale_j * X[j, t]

    ``prices`` per GPU-hour, one per worker type. With ``meet_deadlines`` and
    ``problem.deadline`` (seconds from now; inf = none) each job must also keep
    ``throughput(j, X) >= R_j / deadline_j``. Charnes-Cooper: ``Y = gamma X`` with the cost
    fixed to 1 makes it an LP in ``(Y, gamma)``. ``objective``: fraction of remaining work per
    dollar. Without deadlines only the best work-per-dollar jobs run, as the objective asks.
    """
    started = time.perf_counter()
    remaining = _remaining(problem)
    price = np.asarray(prices, dtype=float) / SECONDS_PER_HOUR
    if price.shape != (problem.n_types,) or np.any(price <= 0):
        raise ValueError(f"need one price > 0 per worker type {problem.worker_types}")
    # LP columns: one per type, or per (pool, type) when pools bind the jobs
    throughput, capacity = problem.lp_value(problem.throughput), problem.lp_capacity()
    if problem.pools is not None:
        price = price[problem.pools.column_type]
    columns, jobs, types = single_columns(throughput, problem.scale)
    n_cols = columns.n_cols
    cost_row = Entries(np.zeros(n_cols, dtype=np.int64), np.arange(n_cols),
                       price[types] * problem.scale[jobs], (1, n_cols))
    blocks = [_with_gamma(columns.usage, -np.ones(problem.n_jobs)),
              _with_gamma(columns.gpus, -capacity), _with_gamma(cost_row, np.zeros(1))]
    lower = [np.full(problem.n_jobs + len(capacity), -INF), np.ones(1)]
    upper = [np.zeros(problem.n_jobs + len(capacity)), np.ones(1)]
    if meet_deadlines and problem.deadline is not None:
        slo = np.flatnonzero(np.isfinite(problem.deadline))
        blocks.append(_with_gamma(_throughput_rows(throughput, jobs, types, slo),
                                  -remaining[slo] / problem.deadline[slo]))
        lower.append(np.zeros(len(slo)))
        upper.append(np.full(len(slo), INF))
    gain = np.append(throughput[jobs, types] / remaining[jobs], 0.0)
    lp = LinearProgram(-gain, stack(*blocks), (np.zeros(n_cols + 1), np.full(n_cols + 1, INF)),
                       (np.concatenate(lower), np.concatenate(upper)))
    solution = lp.solve()
    x = np.zeros(throughput.shape)
    x[jobs, types] = np.clip(solution[:-1] / solution[-1], 0.0, 1.0)
    return Allocation("min_cost", problem.by_type(x), -lp.objective,
                      time.perf_counter() - started)


def _with_gamma(block: Entries, gamma: np.ndarray) -> Entries:
    """``[block, gamma]``: the Charnes-Cooper scale variable as a last column."""
    rows = np.arange(block.shape[0])
    return block.then(Entries(rows, np.zeros(len(rows), dtype=np.int64), gamma,
                              (block.shape[0], 1)))


def _throughput_rows(throughput: np.ndarray, jobs: np.ndarray, types: np.ndarray,
                     selected: np.ndarray) -> Entries:
    """Rows ``throughput(j, Y)`` for the ``selected`` jobs over the single-job columns
    (``throughput``: per LP column)."""
    row_of = np.full(len(throughput), -1)
    row_of[selected] = np.arange(len(selected))
    keep = np.flatnonzero(row_of[jobs] >= 0)
    return Entries(row_of[jobs[keep]], keep, throughput[jobs[keep], types[keep]],
                   (len(selected), len(jobs)))


def fifo_hetero(problem: AllocationProblem) -> Allocation:
    """Gavel's heterogeneity-aware FIFO baseline: jobs in problem order (arrival
    order), each given all of its time on the fastest type with ``scale`` GPUs still free; the
    first job that fits nowhere stops the queue (strict FIFO, no backfilling). With pools
    that bind the jobs, "type" is a (pool, type) column the job may use and its GPUs there,
    and a job that fits nowhere stops the queue of its pool: it closes the columns it may use
    (all of them for a job without a pool) to the jobs after it.
    ``objective``: number of jobs placed."""
    started = time.perf_counter()
    # Python floats, not numpy rows: a row has a handful of GPU types, where each numpy call
    # costs more than the loop (the same comparisons and subtractions, in float64).
    throughput = problem.lp_value(problem.throughput)
    free = problem.lp_capacity().astype(float).tolist()
    scale = problem.scale.tolist()
    allowed = None if problem.pools is None else problem.pools.allowed.tolist()
    x = np.zeros(throughput.shape)
    placed = 0
    for j, row in enumerate(throughput.tolist()):
        need, best, fastest = scale[j], -1, 0.0
        for kind, speed in enumerate(row):  # the fastest type with room; the first on ties
            if speed > fastest and free[kind] >= need:
                best, fastest = kind, speed
        if best < 0:
            if allowed is None:
                break
            free = [-np.inf if ok else room for room, ok in zip(free, allowed[j], strict=True)]
            continue
        x[j, best] = 1.0
        free[best] -= need
        placed += 1
    return Allocation("fifo_hetero", problem.by_type(x), float(placed),
                      time.perf_counter() - started, lp_solves=0)


def makespan_values(problem: AllocationProblem, allocation: Allocation) -> np.ndarray:
    with np.errstate(divide="ignore"):
        return _remaining(problem) / effective_throughput(problem, allocation)


def cost_ratio(problem: AllocationProblem, allocation: Allocation,
               prices: Sequence[float]) -> float:
    """Normalized throughput per dollar of an allocation (``min_cost``'s objective)."""
    gain = (effective_throughput(problem, allocation) / _remaining(problem)).sum()
    spent = (problem.scale @ allocation.x) @ (np.asarray(prices, dtype=float) / SECONDS_PER_HOUR)
    return float(gain / spent) if spent > 0 else 0.0
