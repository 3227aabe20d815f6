"""Chronus's lease-slot admission MILP (Gao et al., *Chronus: A Novel Deadline-aware Scheduler
for Deep Learning Training Jobs*, SoCC'21 §4), solved with HiGHS.

Time ahead is cut into lease slots. SLO job ``j`` needs ``need[j]`` more slots on its
``gpus[j]`` GPUs (rigid) and must get them within its first ``horizon[j]`` slots (the caller
counts the slots after which its work still ends by its deadline). Binary ``x[j, t]``: j runs
in slot t; binary ``y[j]``: j is scheduled to meet its deadline.

    maximize   Σ_j weight[j]·y[j]  −  ε · Σ_{j,t} (t + 1 − keep[j]·[t = 0] / 2)·x[j, t]
    subject to Σ_t x[j, t] ≥ need[j]·y[j]          (a scheduled job gets its slots)
               Σ_j gpus[j]·x[j, t] ≤ capacity       (every slot)

``weight`` makes already-admitted jobs worth more than all new ones together, so a new job is
admitted only if every admitted one stays schedulable; the ε term (below one job's weight in
total) runs work as early as possible and never in slots it does not need. ``keep`` marks the
jobs that hold GPUs now: their slot 0 costs half a slot less, so among plans equally early
slot 0 goes to them (never at the cost of an admission), as Chronus keeps an
admitted job's cached lease plan from one lease to the next instead of re-shuffling it (a
re-shuffle stops and restarts jobs for nothing, each restart costing the job its pause).

Budget (``mip_budget.py``): HiGHS stops after ``budget.max_nodes`` branch-and-bound nodes,
never on wall-clock time, so a run's schedule is the same on any machine under any load.
When the budget runs out, the best plan found so far (HiGHS' incumbent, feasible: every
scheduled job gets its slots within capacity) is used as if optimal: it may schedule fewer
new jobs than the optimum, and those it leaves out are refused. A solve that ends with no
feasible plan at all returns None (the empty plan is feasible, so only the wall-clock safety
net, stopping HiGHS before its trivial heuristics, can do that); the policy then decides no
admission that lease (``chronus.py``). On ``chronus-mix2-4h`` every one of
the 419 solves ends at HiGHS' root node, so the budget never binds there; the wall-clock
safety net (``budget.safety_seconds``) is counted and warned about if it ever triggers.
"""

from __future__ import annotations

import numpy as np

from dlsched.lazy import highs_solver, lazy_import
from dlsched.policies.elastic.mip_budget import MipBudget, SolveLog, run_budgeted

highspy = lazy_import("highspy")
LEASE_BUDGET = MipBudget(max_nodes=1000)


def lease_milp(gpus: np.ndarray, need: np.ndarray, horizon: np.ndarray, weight: np.ndarray,
               capacity: int, keep: np.ndarray | None = None, budget: MipBudget = LEASE_BUDGET,
               log: SolveLog | None = None) -> tuple[np.ndarray, np.ndarray] | None:
    """``(y, first)``: which jobs are scheduled and whether each runs in slot 0 (the best plan
    found within ``budget``); None if the solve ended with no plan at all."""
    jobs = len(gpus)
    if jobs == 0:
        return np.zeros(0, dtype=bool), np.zeros(0, dtype=bool)
    owner = np.repeat(np.arange(jobs), horizon)  # x columns: (job, slot), job by job
    slot = np.arange(len(owner)) - np.repeat(np.cumsum(horizon) - horizon, horizon)
    n_x = len(owner)
    epsilon = 0.5 / (float(((slot + 1)).sum()) + 1.0)
    held = np.zeros(jobs, dtype=bool) if keep is None else np.asarray(keep, dtype=bool)
    early = (slot + 1) - 0.5 * ((slot == 0) & held[owner])
    cost = np.concatenate([epsilon * early, -weight.astype(float)])  # minimize
    # rows 0..jobs-1: Σ_t x - need·y >= 0; rows jobs..: slot capacity
    slots = int(horizon.max()) if n_x else 1
    rows = np.concatenate([owner, jobs + slot, np.arange(jobs)])
    cols = np.concatenate([np.arange(n_x), np.arange(n_x), n_x + np.arange(jobs)])
    vals = np.concatenate([np.ones(n_x), gpus[owner].astype(float), -need.astype(float)])
    solution = _solve(cost, (rows, cols, vals), jobs + slots,
                      np.concatenate([np.zeros(jobs), np.full(slots, -highspy.kHighsInf)]),
                      np.concatenate([np.full(jobs, highspy.kHighsInf),
                                      np.full(slots, float(capacity))]), budget, log)
    if solution is None:
        return None
    y = solution[n_x:] > 0.5
    first = np.zeros(jobs, dtype=bool)
    first[owner[(slot == 0) & (solution[:n_x] > 0.5)]] = True
    return y, first & y


def _solve(cost: np.ndarray, entries: tuple[np.ndarray, np.ndarray, np.ndarray], n_rows: int,
           row_lower: np.ndarray, row_upper: np.ndarray, budget: MipBudget,
           log: SolveLog | None) -> np.ndarray | None:
    rows, cols, vals = entries
    n_cols = len(cost)
    order = np.argsort(cols, kind="stable")
    start = np.zeros(n_cols + 1, dtype=np.int32)
    np.cumsum(np.bincount(cols, minlength=n_cols), out=start[1:])
    lp = highspy.HighsLp()
    lp.num_col_, lp.num_row_ = n_cols, n_rows
    lp.col_cost_ = cost
    lp.col_lower_, lp.col_upper_ = np.zeros(n_cols), np.ones(n_cols)
    lp.row_lower_, lp.row_upper_ = row_lower, row_upper
    lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    lp.a_matrix_.start_ = start
    lp.a_matrix_.index_ = rows[order].astype(np.int32)
    lp.a_matrix_.value_ = vals[order].astype(float)
    lp.integrality_ = [highspy.HighsVarType.kInteger] * n_cols
    highs = highs_solver()
    highs.setOptionValue("output_flag", False)
    highs.passModel(lp)
    run_budgeted(highs, budget, log, "Chronus lease MILP")
    if highs.getInfo().primal_solution_status != 2:  # 2: a feasible solution exists
        return None
    return np.asarray(highs.getSolution().col_value)
