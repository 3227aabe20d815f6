"""Heterogeneity-aware max-min fairness with space sharing (Gavel, OSDI'20 §3.1, §4.1).

Besides ``X[j, t]``, jobs may share GPUs in pairs, each at its measured co-located rate; a shared
GPU counts once against its type. Gavel's normalization stays the isolated
``throughput(j, X^equal)``. As Gavel does with job types, the LP works on classes of identical
jobs (same throughputs, scale factor, normalizer and colocation class): a class-pair column is
the time class ``c`` jobs share with class ``d`` jobs, the same for every job of a class, and
``pairing`` turns it into concrete job pairs. For max-min (and the ``pareto`` sum stage) this is
exact over all pairs of jobs, and the LP size depends on the number of classes, not of jobs.

Candidate class pairs: same scale factor, measured co-located rates, and a combined normalized
rate ``r_a / T_a + r_b / T_b`` above ``min_gain`` on some type (below 1, time-slicing the two is
at least as good); each class keeps its ``max_partners`` best partner classes.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass

import numpy as np

from dlsched.policies.gavel.fairness import fairness_values
from dlsched.policies.gavel.lp import Columns, Entries, MaxMinLP, job_classes, single_columns
from dlsched.policies.gavel.pairing import job_pairs
from dlsched.policies.gavel.problem import Allocation, AllocationProblem

DEFAULT_PARTNERS = 16
ROW_BLOCK = 256  # rows of the class-pair gain matrix computed at once
MIN_SHARE = 1e-9  # shared time below this is solver noise, not a pair to schedule


@dataclass(frozen=True)
class _Classes:
    """Classes of identical jobs: representative job, class of every job, members, size."""

    reps: np.ndarray
    inverse: np.ndarray
    counts: np.ndarray
    throughput: np.ndarray
    scale: np.ndarray
    normalizer: np.ndarray
    colocation: np.ndarray
    rates: np.ndarray  # (LP columns, colocation classes, colocation classes)
    pooled: bool = False  # columns per (pool, type): a pair needs both classes' pool

    @classmethod
    def of(cls, problem: AllocationProblem, normalizer: np.ndarray) -> _Classes:
        if problem.colocation is None:
            colocation, rates = np.zeros(problem.n_jobs, dtype=np.int64), \
                np.zeros((problem.n_types, 1, 1))
        else:
            colocation, rates = problem.colocation.job_class, problem.colocation.rates
        # per LP column: per type, or per (pool, type) (a job's pool is then in its key)
        throughput = problem.lp_value(problem.throughput)
        if problem.pools is not None:
            rates = rates[problem.pools.column_type]
        key = np.column_stack([throughput, problem.scale, normalizer, colocation])
        reps, inverse, counts = job_classes(key)
        return cls(reps, inverse, counts, throughput[reps], problem.scale[reps],
                   normalizer[reps], colocation[reps], rates, problem.pools is not None)

    def members(self) -> list[np.ndarray]:
        order = np.argsort(self.inverse, kind="stable")
        return np.split(order, np.cumsum(self.counts)[:-1])


def _pair_gain(classes: _Classes, rows: np.ndarray) -> np.ndarray:
    """``gain[i, d]``: best combined normalized rate of classes ``rows[i]`` and ``d`` sharing;
    0 where they cannot share (other scale factor, unmeasured, or a lone job with itself)."""
    own, speed = classes.colocation, classes.throughput
    mine = classes.rates[:, own[rows]][:, :, own]  # (types, rows, classes)
    theirs = classes.rates[:, own][:, :, own[rows]].transpose(0, 2, 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        gain = mine / speed[rows].T[:, :, None] + theirs / speed.T[:, None, :]
    gain = np.where((mine > 0) & (theirs > 0) & np.isfinite(gain), gain, 0.0).max(axis=0)
    alone = classes.counts[rows] < 2
    gain[np.arange(len(rows))[alone], rows[alone]] = 0.0
    return np.where(classes.scale[rows][:, None] == classes.scale[None, :], gain, 0.0)


def candidate_pairs(classes: _Classes, max_partners: int, min_gain: float) -> np.ndarray:
    """``(P, 2)`` class pairs ``c <= d`` worth co-locating (see the module docstring)."""
    n, found = len(classes.reps), []
    keep = min(max_partners, n)
    for start in range(0, n, ROW_BLOCK):
        rows = np.arange(start, min(start + ROW_BLOCK, n))
        gain = _pair_gain(classes, rows)
        best = np.argpartition(-gain, keep - 1, axis=1)[:, :keep]
        good = np.take_along_axis(gain, best, axis=1) > min_gain
        found.append(np.column_stack([np.repeat(rows, keep)[good.ravel()], best[good]]))
    pairs = np.sort(np.concatenate(found), axis=1)
    return np.unique(pairs, axis=0) if len(pairs) else pairs


def _pair_columns(classes: _Classes, pairs: np.ndarray
                  ) -> tuple[Columns, np.ndarray, np.ndarray]:
    """One column per (class pair, type) with both rates positive: the time fraction each job
    of the first class spends sharing with the second class (see ``pairing``)."""
    first, second = classes.colocation[pairs[:, 0]], classes.colocation[pairs[:, 1]]
    rate_a, rate_b = classes.rates[:, first, second].T, classes.rates[:, second, first].T
    shares = (rate_a > 0) & (rate_b > 0)
    if classes.pooled:  # a (pool, type) column both classes may use
        shares &= (classes.throughput[pairs[:, 0]] > 0) & (classes.throughput[pairs[:, 1]] > 0)
    index, types = np.nonzero(shares)
    a, b = pairs[index, 0], pairs[index, 1]
    same = a == b
    # Per column: the second class's time per unit, and the GPUs per unit.
    ratio = np.where(same, 0.0, classes.counts[a] / classes.counts[b])
    gpus = classes.scale[a] * classes.counts[a] * np.where(same, 0.5, 1.0)
    cols = np.arange(len(index))
    other = ~same  # a class shared with itself has one entry per column, not two
    jobs, both = np.concatenate([a, b[other]]), np.concatenate([cols, cols[other]])
    value = np.concatenate([rate_a[index, types], (rate_b[index, types] * ratio)[other]])
    usage = np.concatenate([np.ones(len(a)), ratio[other]])
    shape = (len(classes.reps), len(cols))
    return (Columns(Entries(jobs, both, value / classes.normalizer[jobs], shape),
                    Entries(jobs, both, usage, shape),
                    Entries(types, cols, gpus, (classes.throughput.shape[1], len(cols)))),
            index, types)


def _realize(classes: _Classes, pairs: np.ndarray, x_cols: np.ndarray, n_singles: int,
             columns: tuple[np.ndarray, ...]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Job-level ``(x, pairs, pair_x)`` from the class LP's solution."""
    jobs, types, pair_index, pair_types = columns
    x = np.zeros((len(classes.reps), classes.throughput.shape[1]))
    x[jobs, types] = x_cols[:n_singles]
    items = [(int(a), int(b), int(t), float(q * classes.counts[a] * (0.5 if a == b else 1.0)))
             for (a, b), t, q in zip(pairs[pair_index], pair_types, x_cols[n_singles:],
                                     strict=True)
             if q > MIN_SHARE]
    job_pair, pair_x = job_pairs(classes.members(), items, x.shape[1])
    return x[classes.inverse], job_pair, pair_x


def max_min_fairness_packed(problem: AllocationProblem, pareto: bool = True,
                            max_partners: int = DEFAULT_PARTNERS,
                            min_gain: float = 1.0) -> Allocation:
    """Gavel §4.1 with space sharing: ``max_X min_j throughput(j, X) / (w_j *
    throughput(j, X^equal))`` where ``throughput`` counts co-located time at co-located rates
    and a shared GPU counts once against its type's capacity."""
    started = time.perf_counter()
    classes = _Classes.of(problem, problem.weights * problem.equal_share_throughput())
    singles, jobs, types = single_columns(classes.throughput / classes.normalizer[:, None],
                                          classes.scale * classes.counts)
    pairs = candidate_pairs(classes, max_partners, min_gain)
    shared, pair_index, pair_types = _pair_columns(classes, pairs)
    lp = MaxMinLP(singles.then(shared), problem.lp_capacity(), np.zeros(len(classes.reps)))
    x_cols, best = lp.solve()
    if pareto:
        x_cols = lp.maximize_total(best, classes.counts.astype(float), first=x_cols)
    x, job_pair, pair_x = _realize(classes, pairs, np.clip(x_cols, 0.0, 1.0), len(jobs),
                                   (jobs, types, pair_index, pair_types))
    result = Allocation("max_min_fairness_packed", problem.by_type(x), best, 0.0,
                        pairs=job_pair, pair_x=problem.by_type(pair_x), lp_solves=lp.solves)
    return dataclasses.replace(result, objective=float(fairness_values(problem, result).min()),
                               solve_seconds=time.perf_counter() - started)
