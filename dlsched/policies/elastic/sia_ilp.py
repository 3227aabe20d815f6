"""Sia's allocation ILP (Jayaram Subramanya et al., SOSP'23 §4.2), solved with HiGHS.

    maximize   Σ_c value_c · x_c
    subject to Σ_{c of job j} x_c ≤ 1                 (at most one configuration per job)
               Σ_{c on type t} count_c · x_c ≤ G_t     (GPUs of each type)
               x_c ∈ {0, 1}

The matrix is built column-wise with numpy (two non-zeros per column) and handed to HiGHS in
CSC form. Only the ``T`` capacity rows couple the jobs, so a basic optimal solution of the LP
relaxation has at most ``2T`` fractional columns: by default (``exact=False``) dlsched solves
the LP (by column generation from the small configurations, ``lp_relaxation``), keeps its
integral columns and completes the rest greedily (``fill_greedily``).
HiGHS' branch and bound on the full ILP (``exact=True``) is much slower when many jobs tie
(3–9 s at 160 jobs on 64 GPUs, shared 2-core machine), so it is an option, bounded by ``gap``
and by a deterministic budget of branch-and-bound nodes (``mip_budget.py``; never wall
clock, so the same run gives the same allocation under any load). When the budget runs out
the best integral solution found so far is kept (columns at 1) and completed greedily, as
the LP route's rounding is; with none found, the greedy completion builds the whole answer.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from dlsched.lazy import highs_solver, lazy_import
from dlsched.policies.elastic.mip_budget import MipBudget, SolveLog, run_budgeted
from dlsched.policies.elastic.sia_configs import Columns

highspy = lazy_import("highspy")
# exact=True only. Measured: every solve ends at HiGHS' root node on pollux-64 with pollux-1's
# 160 jobs (bundled fits) and on 40 jobs of Sia's philly workload-1 on sia-64 (796 solves)
EXACT_BUDGET = MipBudget(max_nodes=1000)


def solve_allocation(columns: Columns, capacity: NDArray[np.int64], exact: bool = False,
                     gap: float = 1e-3, budget: MipBudget = EXACT_BUDGET,
                     seed: NDArray[np.bool_] | None = None,
                     log: SolveLog | None = None) -> NDArray[np.bool_]:
    """Which columns are chosen (at most one per job, within each type's capacity).
    ``seed`` marks columns the LP starts from (default: counts up to 2). With ``exact``, the
    ILP's best solution within ``budget`` (counted in ``log``), completed greedily."""
    n = len(columns.value)
    if n == 0:
        return np.zeros(0, dtype=bool)
    if exact:
        chosen = _branch_and_bound(columns, capacity, gap, budget, log)
    else:
        chosen = lp_relaxation(columns, capacity, columns.count <= 2 if seed is None else seed)
    return fill_greedily(columns, capacity, chosen)


def _branch_and_bound(columns: Columns, capacity: NDArray[np.int64], gap: float,
                      budget: MipBudget, log: SolveLog | None) -> NDArray[np.bool_]:
    """The ILP's incumbent when HiGHS stops (optimal within ``gap``, or the node budget ran
    out); no column if it has none (``fill_greedily`` then builds the whole answer)."""
    n = len(columns.value)
    solver = highs_solver()
    solver.setOptionValue("output_flag", False)
    solver.setOptionValue("mip_rel_gap", gap)
    solver.passModel(_model(columns, capacity, True))
    run_budgeted(solver, budget, log, "Sia allocation ILP")
    if solver.getInfo().primal_solution_status != 2:  # 2: a feasible solution exists
        return np.zeros(n, dtype=bool)
    x = np.asarray(solver.getSolution().col_value)
    return x > 1 - 1e-6 if x.size == n else np.zeros(n, dtype=bool)


def lp_relaxation(columns: Columns, capacity: NDArray[np.int64],
                  seed: NDArray[np.bool_]) -> NDArray[np.bool_]:
    """The integral columns of the LP relaxation's optimum, by column generation: solve the
    LP over ``seed`` plus one column per job, price every column with the duals (``value −
    u_job − λ_type·count``), add those that would improve it, repeat until none does."""
    active = seed.copy()
    _, first, job_row = np.unique(columns.job, return_index=True, return_inverse=True)
    active[first] = True  # every job keeps its row, in the same order
    while True:
        cols = np.flatnonzero(active)
        solver = highs_solver()
        solver.setOptionValue("output_flag", False)
        solver.passModel(_model(_subset(columns, cols), capacity, False))
        solver.run()
        solution = solver.getSolution()
        duals = -np.asarray(solution.row_dual)  # costs are −value: flip to the max problem
        jobs = int(job_row.max()) + 1
        reduced = columns.value - duals[job_row] - duals[jobs + columns.type_index] * \
            columns.count
        entering = (reduced > 1e-7) & ~active
        if not entering.any():
            chosen = np.zeros(len(columns.value), dtype=bool)
            chosen[cols] = np.asarray(solution.col_value) > 1 - 1e-6
            return chosen
        active |= entering


def _subset(columns: Columns, cols: NDArray[np.int64]) -> Columns:
    return Columns(columns.job[cols], columns.type_index[cols], columns.count[cols],
                   columns.multi[cols], columns.value[cols])


def fill_greedily(columns: Columns, capacity: NDArray[np.int64],
                  chosen: NDArray[np.bool_]) -> NDArray[np.bool_]:
    """``chosen`` completed greedily: each job without a column, best first, takes its most
    valuable column that fits; then, while one helps, the move of one job to a more valuable
    column of highest gain per extra GPU that fits (using GPUs the LP rounding left idle)."""
    chosen = chosen.copy()
    left = _left(columns, capacity, chosen)
    served = np.zeros(int(columns.job.max()) + 1, dtype=bool)
    served[columns.job[chosen]] = True
    open_cols = np.flatnonzero(~served[columns.job])
    order = np.lexsort((columns.job[open_cols], -columns.value[open_cols]))
    for col in open_cols[order].tolist():
        if left.max() <= 0:
            break
        job, t, k = int(columns.job[col]), int(columns.type_index[col]), int(columns.count[col])
        if not served[job] and k <= left[t]:
            chosen[col], served[job] = True, True
            left[t] -= k
    while _upgrade(columns, chosen, left):
        pass
    return chosen


def _left(columns: Columns, capacity: NDArray[np.int64],
          chosen: NDArray[np.bool_]) -> NDArray[np.int64]:
    used = np.bincount(columns.type_index[chosen], weights=columns.count[chosen],
                       minlength=len(capacity))
    return np.asarray(capacity, dtype=np.int64) - used.astype(np.int64)


def _upgrade(columns: Columns, chosen: NDArray[np.bool_], left: NDArray[np.int64]) -> bool:
    """Move one served job to a better column that fits; whether one was found."""
    current = np.full(int(columns.job.max()) + 1, -1)
    current[columns.job[chosen]] = np.flatnonzero(chosen)
    now = current[columns.job]
    cand = np.flatnonzero(now >= 0)
    if cand.size == 0 or left.max() <= 0:
        return False
    old = now[cand]
    gain = columns.value[cand] - columns.value[old]
    same = columns.type_index[cand] == columns.type_index[old]
    need = columns.count[cand] - np.where(same, columns.count[old], 0)
    fits = (gain > 1e-12) & (need <= left[columns.type_index[cand]])
    if not fits.any():
        return False
    score = np.where(fits, gain / np.maximum(need, 1), -np.inf)
    best = int(np.argmax(score))
    col, prev = int(cand[best]), int(old[best])
    chosen[prev], chosen[col] = False, True
    left[columns.type_index[prev]] += columns.count[prev]
    left[columns.type_index[col]] -= columns.count[col]
    return True


def _model(columns: Columns, capacity: NDArray[np.int64], integral: bool) -> highspy.HighsLp:
    n = len(columns.value)
    jobs, job_row = np.unique(columns.job, return_inverse=True)
    rows = np.stack([job_row, len(jobs) + columns.type_index], axis=1).ravel()
    values = np.stack([np.ones(n), columns.count.astype(float)], axis=1).ravel()
    lp = highspy.HighsLp()
    lp.num_col_, lp.num_row_ = n, len(jobs) + len(capacity)
    lp.col_cost_ = -np.asarray(columns.value, dtype=float)
    lp.col_lower_, lp.col_upper_ = np.zeros(n), np.ones(n)
    lp.row_lower_ = np.full(lp.num_row_, -highspy.kHighsInf)
    lp.row_upper_ = np.concatenate([np.ones(len(jobs)), np.asarray(capacity, dtype=float)])
    lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    lp.a_matrix_.start_ = np.arange(0, 2 * n + 1, 2, dtype=np.int32)
    lp.a_matrix_.index_ = rows.astype(np.int32)
    lp.a_matrix_.value_ = values
    if integral:
        lp.integrality_ = [highspy.HighsVarType.kInteger] * n
    return lp
