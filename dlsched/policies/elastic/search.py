"""Greedy marginal-gain search for worker counts under one GPU budget.

Each job ``j`` has a utility ``U[j, K]`` for ``K = 0..L-1`` workers (``-inf``: not allowed) and
the sum ``Σ_j U[j, K_j]`` is to be maximized subject to ``Σ_j K_j ≤ capacity``: a
multiple-choice knapsack. Pollux (OSDI'21 §4.2) searches it with a genetic algorithm; dlsched
uses the classic greedy on the upper concave envelope instead: every job starts at ``K = 0``
and the next step is always the *jump* of highest gain per GPU over all jobs (from ``K`` to
the ``K' > K`` maximizing ``(U[K'] − U[K]) / (K' − K)``), so a non-concave utility (a restart
penalty everywhere except at the current size; a rigid job allowed only ``0`` or ``n``) is
climbed in one jump, not blocked at a local dip. A jump wider than the GPUs left is replaced by
the best one that fits. Jobs stop when no jump gains anything.

The heap holds one live jump per job; ties go to the lower ``rank`` (e.g. the earlier job).
Cost: ``O((J + capacity) · log J)`` heap operations, each a numpy scan of one row.

``Budgets`` adds the GPUs a job may be placed on (Pollux §4.2 allocates nodes, so a job's
workers are only ever counted against GPUs it can use): one budget per distinct node mask, the
GPUs of those nodes; a job counts against every budget whose nodes include all of its own, and
a jump must fit the least of them. For masks that nest or are disjoint (a job rated 0 on K80
may use P100+V100, a job pinned to V100 only V100) these are Hall's conditions: the GPUs the
counts need exist on the nodes each job may use (node packing and interference avoidance are
placement's, ``pollux_place.py``).
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray


@dataclass(frozen=True, slots=True)
class Budgets:
    """GPU budgets besides the cluster's: ``groups[j]`` the budgets job ``j`` counts against
    (indices into ``gpus``), ``gpus[m]`` the GPUs of budget ``m``. Plain ints: the greedy reads
    them at every step, where numpy's per-call cost would dominate."""

    groups: tuple[tuple[int, ...], ...]
    gpus: tuple[int, ...]

    def most(self, total: int) -> NDArray[np.int64]:
        """The most workers each job could get: its tightest budget (``total`` without one)."""
        return np.array([min((total, *(self.gpus[m] for m in g))) for g in self.groups],
                        dtype=np.int64)


def mask_budgets(capacity: NDArray[np.int64],
                 masks: Sequence[NDArray[np.bool_] | None]) -> Budgets | None:
    """One budget per distinct node mask of ``masks`` (None: every node, the cluster's own
    budget); None when every job may use every node. Each distinct mask is compared once."""
    keys = [None if mask is None else mask.tobytes() for mask in masks]
    distinct: dict[bytes, NDArray[np.bool_]] = {}
    for key, mask in zip(keys, masks, strict=True):
        if key is not None and key not in distinct:
            distinct[key] = mask
    distinct = {key: mask for key, mask in distinct.items() if not mask.all()}
    if not distinct:
        return None
    table = np.array(list(distinct.values()), dtype=bool)
    gpus = tuple(int(capacity[m].sum()) for m in table)
    within = {key: tuple(np.flatnonzero(~(m & ~table).any(axis=1)).tolist())
              for key, m in distinct.items()}
    return Budgets(tuple(within.get(key, ()) if key else () for key in keys), gpus)


def greedy_counts(utility: NDArray[np.float64], capacity: int,
                  rank: NDArray[np.int64] | None = None,
                  budgets: Budgets | None = None) -> NDArray[np.int64]:
    """Workers per job (``K_j``, ``Σ K_j ≤ capacity`` and within ``budgets``) chosen by the
    envelope greedy above; ``utility[:, 0]`` must be finite (every job may get nothing)."""
    jobs, width = utility.shape
    counts = np.zeros(jobs, dtype=np.int64)
    if jobs == 0 or capacity <= 0 or width <= 1:
        return counts
    order = np.arange(jobs) if rank is None else np.asarray(rank)
    heap = _first_jumps(utility, capacity, order)
    free = capacity
    groups = budgets.groups if budgets is not None else ((),) * jobs
    left = list(budgets.gpus) if budgets is not None else []
    while heap and free > 0:
        _, _, j, target = heapq.heappop(heap)
        step = target - int(counts[j])
        group = groups[j]
        room = min(free, *(left[m] for m in group)) if group else free
        if step > room:  # a stale, too wide jump: take the best one that still fits
            _push(heap, utility[j], int(counts[j]), room, int(order[j]), j)
            continue
        counts[j] = target
        free -= step
        for m in group:
            left[m] -= step
        _push(heap, utility[j], target, room - step, int(order[j]), j)
    return counts


def best_jump(row: NDArray[np.float64], start: int, free: int) -> tuple[float, int] | None:
    """The jump from ``start`` of highest gain per worker within ``free`` more workers, as
    ``(gain per worker, target)``; ``None`` when none gains."""
    ahead = row[start + 1:start + 1 + free]
    if ahead.size == 0:
        return None
    with np.errstate(invalid="ignore"):
        ratios = (ahead - row[start]) / np.arange(1, ahead.size + 1)
    ratios = np.where(np.isfinite(ratios), ratios, -np.inf)
    best = int(np.argmax(ratios))
    if not ratios[best] > 0:
        return None
    return float(ratios[best]), start + 1 + best


def _push(heap: list, row: NDArray[np.float64], start: int, free: int, rank: int,
          j: int) -> None:
    jump = best_jump(row, start, free)
    if jump is not None:
        heapq.heappush(heap, (-jump[0], rank, j, jump[1]))


def _first_jumps(utility: NDArray[np.float64], capacity: int,
                 order: NDArray[np.int64]) -> list[tuple[float, int, int, int]]:
    """Every job's best jump from 0, for all jobs at once."""
    ahead = utility[:, 1:capacity + 1]
    with np.errstate(invalid="ignore"):
        ratios = (ahead - utility[:, :1]) / np.arange(1, ahead.shape[1] + 1)
    ratios = np.where(np.isfinite(ratios), ratios, -np.inf)
    best = np.argmax(ratios, axis=1)
    gain = ratios[np.arange(len(best)), best]
    keep = np.flatnonzero(gain > 0)
    heap = list(zip((-gain[keep]).tolist(), order[keep].tolist(), keep.tolist(),
                    (best[keep] + 1).tolist(), strict=True))
    heapq.heapify(heap)
    return heap
