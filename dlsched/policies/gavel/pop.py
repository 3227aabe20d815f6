"""POP: partitioned optimization problems (Narayanan et al., SOSP'21, "Solving Large-Scale
Granular Resource Allocation Problems Efficiently with POP").

POP §3: split the jobs uniformly at random into ``k`` groups and give every group ``1/k`` of
each resource (here: of each GPU type's count, possibly fractional), solve each sub-problem with
the same policy, and concatenate the allocations. Sub-problems are independent, so the LP work
drops from one problem of ``n`` jobs to ``k`` of ``n/k`` (super-linear LP cost makes this a
large saving); the combined allocation is feasible for the full problem by construction. Jobs
keep their full-problem normalization (``AllocationProblem.subproblem``), and the combined
allocation is scored on the full problem, so ``objective`` is directly comparable to an exact
solve's.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from dlsched.policies.gavel.objectives import Policy, score
from dlsched.policies.gavel.problem import Allocation, AllocationProblem


def partition(n_jobs: int, k: int, seed: int) -> list[np.ndarray]:
    """``min(k, n_jobs)`` groups of job indices of near-equal size, drawn at random (seeded);
    each group is sorted so that problem order (FIFO's arrival order) is kept inside it."""
    order = np.random.default_rng(seed).permutation(n_jobs)
    return [np.sort(group) for group in np.array_split(order, max(1, min(k, n_jobs)))]


def combine(problem: AllocationProblem, groups: list[np.ndarray],
            parts: list[Allocation]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The sub-allocations as one ``(x, pairs, pair_x)`` over the full problem's job indices."""
    x = np.zeros(problem.throughput.shape)
    for group, part in zip(groups, parts, strict=True):
        x[group] = part.x
    pairs = [group[part.pairs] for group, part in zip(groups, parts, strict=True)]
    pair_x = [part.pair_x for part in parts]
    return x, np.concatenate(pairs).reshape(-1, 2), np.concatenate(pair_x).reshape(
        -1, problem.n_types)


def solve_with_pop(policy: Policy, problem: AllocationProblem, k: int, seed: int = 0,
                   workers: int = 1, **options: object) -> Allocation:
    """``policy`` solved on ``k`` random sub-problems (POP), combined; ``options`` go to the
    policy and to its score. ``k = 1`` is the exact problem. ``workers > 1`` solves
    sub-problems on that many threads (HiGHS runs without the GIL)."""
    if k < 1:
        raise ValueError(f"POP needs k >= 1, got {k}")
    started = time.perf_counter()
    groups = partition(problem.n_jobs, k, seed)
    share = 1.0 / len(groups)

    def solve(group: np.ndarray) -> Allocation:
        return policy(problem.subproblem(group, share), **options)

    if workers > 1:
        with ThreadPoolExecutor(max_workers=workers) as pool:
            parts = list(pool.map(solve, groups))
    else:
        parts = [solve(group) for group in groups]
    x, pairs, pair_x = combine(problem, groups, parts)
    combined = Allocation(parts[0].policy, x, float("nan"), 0.0, pairs=pairs, pair_x=pair_x,
                          lp_solves=sum(part.lp_solves for part in parts))
    value = score(problem, combined, **options)
    return Allocation(combined.policy, x, value, time.perf_counter() - started, pairs=pairs,
                      pair_x=pair_x, lp_solves=combined.lp_solves)
