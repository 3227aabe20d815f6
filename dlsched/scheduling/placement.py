"""Placement: choose GPUs for a gang, node by node, with Filter and Score plugins.

Each step filters the nodes once, scores those with room, takes as many workers as fit on the
best node (ties go to the lowest node index, so placement is deterministic), and repeats until
every worker is placed. Failing part-way gives the GPUs back: a gang is placed whole or not at all.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from dlsched.scheduling.framework import SUCCESS, FilterPlugin, ScorePlugin, Status, unschedulable
from dlsched.scheduling.state import EPS, CycleState
from dlsched.workload.job import Job


def filter_nodes(state: CycleState, job: Job, filters: Sequence[FilterPlugin]
                 ) -> tuple[np.ndarray, Status]:
    mask = np.ones(state.cluster.num_nodes, dtype=bool)
    for plugin in filters:
        mask = plugin.filter(state, job, mask)
        if not mask.any():
            return mask, unschedulable(plugin.name, "no node passes this filter")
    return mask, SUCCESS


def place(state: CycleState, job: Job, filters: Sequence[FilterPlugin],
          scores: Sequence[tuple[ScorePlugin, float]], take_limit: int | None = None,
          workers: int | None = None) -> tuple[tuple[int, ...], Status]:
    """GPUs for ``workers`` (default: the job's request) workers, or () and why not."""
    need = job.spec.num_gpus if workers is None else workers
    share = job.spec.gpu_share
    mask, status = filter_nodes(state, job, filters)
    if not status.ok:
        return (), status
    capacity = state.capacity(share)
    usable = mask & (capacity > 0)
    if int(capacity[usable].sum()) < need:
        have = int(capacity[usable].sum())
        return (), unschedulable("placement", f"needs {need} GPUs, {have} free on fitting nodes")
    chosen: list[int] = []
    state.scratch["placing_nodes"] = []
    while len(chosen) < need:
        remaining = need - len(chosen)
        nodes = np.flatnonzero(usable)
        best = nodes[int(np.argmax(_total_score(state, job, nodes, capacity[nodes], remaining,
                                                scores)))]
        take = min(remaining, int(capacity[best]), take_limit or remaining)
        gpus = pick_gpus(state, int(best), take, share)
        state.take(gpus, share)
        chosen.extend(gpus)
        state.scratch["placing_nodes"].append(int(best))
        capacity = state.capacity(share)
        usable &= capacity > 0
        if len(chosen) < need and not usable.any():
            state.give_back(chosen, [share] * len(chosen))
            return (), unschedulable("placement", "fragmented: no node combination fits")
    return tuple(chosen), SUCCESS


def _total_score(state: CycleState, job: Job, nodes: np.ndarray, capacity: np.ndarray,
                 need: int, scores: Sequence[tuple[ScorePlugin, float]]) -> np.ndarray:
    if not scores:
        return np.zeros(len(nodes))
    total = np.zeros(len(nodes))
    for plugin, weight in scores:
        total += weight * plugin.score(state, job, nodes, capacity, need)
    return total


def pick_gpus(state: CycleState, node: int, count: int, share: float) -> list[int]:
    """``count`` GPUs of ``node`` with room for ``share``: inside one NVLink domain when one
    has room (the fullest such domain, to keep big domains free), else the lowest indices;
    for fractions, the GPUs with the least room left that still fit (packing)."""
    cluster = state.cluster
    first = int(cluster.node_first_gpu[node])
    free = state.free[first:first + int(cluster.node_gpus[node])]
    fits = np.flatnonzero(free >= share - EPS)
    if share < 1.0 - EPS:
        order = fits[np.argsort(free[fits], kind="stable")]
        return [first + int(i) for i in order[:count]]
    domain = cluster.nodes[node].nvlink_domain
    if domain and count <= domain:
        groups = fits // domain
        sizes = np.bincount(groups)
        roomy = np.flatnonzero(sizes >= count)
        if len(roomy):
            group = roomy[int(np.argmin(sizes[roomy]))]
            return [first + int(i) for i in fits[groups == group][:count]]
    return [first + int(i) for i in fits[:count]]
