"""Finish-time fairness (Themis, NSDI'20) made heterogeneity-aware (Gavel, OSDI'20 §4.2).

Gavel's formulation: with ``t_j`` the time since the job arrived, ``R_j`` its remaining steps and
``t_j^iso`` the time its progress so far would have taken on its equal share (Gavel's simulator
sums, between solves, the steps done over the equal-share throughput of the time),

    rho_j(X) = (t_j + R_j / throughput(j, X)) / (t_j^iso + R_j / throughput(j, X^equal))

is the job's finish time under ``X`` relative to the one on an equal (1/n) share of the cluster
(``t_j^iso`` = ``t_j`` when the problem does not carry ``isolated_elapsed``),
and the policy is ``min_X max_j rho_j(X)``. The problem is quasi-convex, not an LP. For a fixed
``rho``, ``rho_j(X) <= rho`` is linear: ``throughput(j, X) >= r_j(rho) = R_j / (rho D_j - t_j)``
with ``D_j`` the denominator. So we find the root of ``lambda(rho) = 1`` where ``lambda(rho) =
max_X min_j throughput(j, X) / r_j(rho)`` is one max-min LP (increasing in ``rho``): a bracketed
secant search whose LPs differ only in one column and re-solve from the previous basis. Each
feasible point also tightens the bracket to the ``max_j rho_j`` its allocation achieves; the
search starts at a lower bound (each job alone on its fastest type), which is the optimum when
one job that waited long is the bottleneck: then one LP settles it.
"""

from __future__ import annotations

import time

import numpy as np

from dlsched.policies.gavel.lp import MaxMinLP, job_classes, single_columns
from dlsched.policies.gavel.problem import Allocation, AllocationProblem, effective_throughput

DEFAULT_TOLERANCE = 1e-4  # relative width of the final bracket on rho
MAX_SOLVES = 40


def alone_throughput(throughput: np.ndarray, scale: np.ndarray, counts: np.ndarray
                     ) -> np.ndarray:
    """Each job's best throughput with the cluster to itself: its time on the fastest types
    first, at most ``count / scale`` of it on each type."""
    order = np.argsort(-throughput, axis=1)
    speed = np.take_along_axis(throughput, order, axis=1)
    cap = np.take_along_axis(np.minimum(1.0, counts[None, :] / scale[:, None]), order, axis=1)
    before = np.cumsum(cap, axis=1) - cap
    return (speed * np.clip(np.minimum(cap, 1.0 - before), 0.0, None)).sum(axis=1)


class _RhoSearch:
    """The LP ``lambda(rho)`` over job classes, and ``rho_j`` of its allocations."""

    def __init__(self, problem: AllocationProblem) -> None:
        remaining = problem.remaining
        if remaining is None or np.any(remaining <= 0):
            raise ValueError("finish-time fairness needs remaining steps > 0 for every job")
        elapsed = np.zeros(problem.n_jobs) if problem.elapsed is None else problem.elapsed
        isolated = (_isolated_so_far(problem, elapsed)
                    + remaining / problem.equal_share_throughput())
        # r_j(rho) = 1 / (rho D_j / R_j - t_j / R_j): jobs equal in (T, scale, D/R, t/R) are
        # the same LP row (all new jobs of one type and scale, whatever their remaining steps).
        # LP columns: one per type, or per (pool, type) when pools bind the jobs (then a
        # job's pool is part of its row's data: jobs of two pools are two rows)
        throughput, capacity = problem.lp_value(problem.throughput), problem.lp_capacity()
        self.problem = problem
        key = np.column_stack([throughput, problem.scale, isolated / remaining,
                               elapsed / remaining])
        self.reps, self.inverse, self.counts = job_classes(key)
        self.remaining, self.elapsed = remaining[self.reps], elapsed[self.reps]
        self.isolated = isolated[self.reps]
        self.columns, self.jobs, self.types = single_columns(
            throughput[self.reps], problem.scale[self.reps] * self.counts)
        self.n_cols = throughput.shape[1]
        self.lowest = float(np.max(self.elapsed / self.isolated))  # lambda(lowest) = 0
        # No job can beat its rho alone on the cluster (its pool): a lower bound on the optimum.
        fastest = alone_throughput(throughput[self.reps], problem.scale[self.reps], capacity)
        self.floor = float(np.max((self.elapsed + self.remaining / fastest) / self.isolated))
        # Each evaluation sets the z column first; it starts finite (rho = 1 is at or below
        # ``lowest`` when jobs waited longer than their equal share accounts for).
        self.lp = MaxMinLP(self.columns, capacity, np.zeros(len(self.reps)),
                           self.required(1.0 if self.lowest < 1.0 else self.floor))

    def required(self, rho: float) -> np.ndarray:
        return self.remaining / (rho * self.isolated - self.elapsed)

    def evaluate(self, rho: float) -> tuple[np.ndarray, float]:
        self.lp.set_z_coefficients(self.required(rho))
        return self.lp.solve()

    def rho(self, x_cols: np.ndarray) -> float:
        throughput = self.columns.value.times(x_cols)
        with np.errstate(divide="ignore"):
            return float(np.max((self.elapsed + self.remaining / throughput) / self.isolated))

    def expand(self, x_cols: np.ndarray) -> np.ndarray:
        """The LP's columns as ``X`` per job and type."""
        x = np.zeros((len(self.reps), self.n_cols))
        x[self.jobs, self.types] = np.clip(x_cols, 0.0, 1.0)
        return self.problem.by_type(x[self.inverse])


def _next_rho(points: list[tuple[float, float]], low: float, high: float,
              tolerance: float) -> float:
    """Secant root of ``lambda - 1`` through the last two evaluated points, kept inside the
    bracket: at least 1% of its width above ``low`` (else bisection) and at most
    ``high (1 - tolerance / 2)``, so that a guess at the optimum ``high`` already holds is
    checked by one infeasible point just below it."""
    (rho_a, lam_a), (rho_b, lam_b) = points[-2], points[-1]
    width = high - low
    guess = low + 0.5 * width
    if lam_b != lam_a:
        guess = rho_b + (1.0 - lam_b) * (rho_b - rho_a) / (lam_b - lam_a)
        if not low + 0.01 * width < guess:
            guess = low + 0.5 * width
    return min(guess, high * (1.0 - 0.5 * tolerance))


class _Bracket:
    """What the search knows: ``low`` (infeasible or a proven bound), ``high`` (the best
    ``max_j rho_j`` reached so far, by ``best``) and the evaluated ``(rho, lambda)`` points."""

    def __init__(self, search: _RhoSearch) -> None:
        self.search, self.low, self.high = search, search.floor, np.inf
        self.best: np.ndarray | None = None
        self.points = [(search.lowest, 0.0)]

    def evaluate(self, rho: float) -> None:
        x_cols, lam = self.search.evaluate(rho)
        self.points.append((rho, lam))
        reached = self.search.rho(x_cols)
        if reached < self.high:
            self.high, self.best = reached, x_cols
        if lam < 1.0:
            self.low = max(self.low, rho)

    def settled(self, tolerance: float) -> bool:
        return self.high - self.low <= tolerance * self.high


def finish_time_fairness(problem: AllocationProblem, pareto: bool = True,
                         tolerance: float = DEFAULT_TOLERANCE) -> Allocation:
    """Gavel §4.2 FTF: ``min_X max_j rho_j(X)``; ``objective`` is the max rho achieved.

    The answer is within ``tolerance`` (relative) of the optimum; ``pareto`` then maximizes
    ``sum_j throughput_j / r_j`` at it. ``rho = 1`` is reachable on a full problem
    (``X^equal``), not always in a POP sub-problem, which keeps the full problem's ``X^equal``,
    nor with pools (``X^equal`` spreads a job over the cluster, its pool may be crowded).
    """
    started = time.perf_counter()
    search = _RhoSearch(problem)
    bracket = _Bracket(search)
    # First just above the lower bound (the optimum when one job that waited long is the
    # bottleneck), then rho = 1, then secant steps. rho = 1 (X^equal) is out of reach when
    # jobs have waited longer than their equal share accounts for (t^iso < t): at or below
    # ``lowest`` a job's requirement is negative or infinite and the LP unbounded, so the
    # search never asks there.
    first = min(1.0, search.floor * (1.0 + 0.5 * tolerance))
    if first <= search.lowest:
        first = search.floor * (1.0 + 0.5 * tolerance)
    bracket.evaluate(first)
    if not bracket.settled(tolerance) and search.lowest < 1.0:
        bracket.evaluate(1.0)
    while not bracket.settled(tolerance) and search.lp.solves < MAX_SOLVES:
        bracket.evaluate(_next_rho(bracket.points, bracket.low, bracket.high, tolerance))
    best = bracket.best
    if pareto:  # best reaches z = 1 at rho = high; a hair above it leaves room for rounding
        search.lp.set_z_coefficients(search.required(bracket.high * (1.0 + 0.1 * tolerance)))
        best = search.lp.maximize_total(1.0, search.counts.astype(float), first=best)
    x = search.expand(best)
    return Allocation("finish_time_fairness", x, search.rho(best), time.perf_counter() - started,
                      lp_solves=search.lp.solves)


def _isolated_so_far(problem: AllocationProblem, elapsed: np.ndarray) -> np.ndarray:
    return elapsed if problem.isolated_elapsed is None else problem.isolated_elapsed


def ftf_values(problem: AllocationProblem, allocation: Allocation) -> np.ndarray:
    """Each job's ``rho_j`` under the allocation (inf for a job that gets no throughput)."""
    elapsed = np.zeros(problem.n_jobs) if problem.elapsed is None else problem.elapsed
    isolated = (_isolated_so_far(problem, elapsed)
                + problem.remaining / problem.equal_share_throughput())
    with np.errstate(divide="ignore"):
        return (elapsed + problem.remaining / effective_throughput(problem, allocation)) / isolated
