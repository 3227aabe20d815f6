"""Gavel's allocation columns per (node pool, GPU type), for a cluster whose pools bind jobs.

Gavel's LPs (Narayanan et al., OSDI'20 §3.1) give each job time ``X[j, t]`` on GPU type ``t``
under one capacity constraint per type, ``sum_j X[j, t] * scale[j] <= count[t]``, counted over
the whole cluster. A job confined to a node pool (a Philly virtual cluster, a tenant's nodes:
``filters.NodePoolFilter``) can only use its pool's GPUs, so that LP gave a job time on a type
its pool lacks, or more of a type than its pool holds: the allocation's throughputs (and the
priorities the rounds derive from them) were not reachable. Here the LP's columns are (group,
type) pairs: a group is one pool of the round's jobs, or every other node (usable only by the
jobs without a pool); a job's ``X`` is over the columns it may use, and each column has its own
capacity row holding the group's GPUs of that type. Groups share no node, so the columns of a
type never hold more than its GPUs in the cluster. The objective stays the paper's (one max-min
or sum over all jobs, with each job's normalizer, ``X^equal``, over the whole cluster, as
before): only the feasible set changes, to the allocations the cluster can realize.

``PoolColumns.collapse`` sums a solution back per type; a pooled job's time on a type is then
all in its own pool, which is where the rounds place it (``pool_budget``, ``place_round``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from dlsched.cluster.cluster import Cluster


@dataclass(frozen=True, eq=False)
class PoolColumns:
    """The LP's columns: column ``c`` is GPU type ``column_type[c]`` (an index of the problem's
    types) on group ``column_group[c]`` (a pool's name; None: the nodes of no bound pool) with
    ``capacity[c]`` GPUs; ``allowed[j, c]``: whether job ``j`` may run there."""

    column_type: np.ndarray
    column_group: tuple[str | None, ...]
    capacity: np.ndarray
    allowed: np.ndarray
    n_types: int

    def spread(self, value: np.ndarray) -> np.ndarray:
        """A (jobs, types) matrix as (jobs, columns): each job's value on a type in every
        column of that type it may use, 0 in the others (an LP makes no variable there)."""
        return np.where(self.allowed, value[:, self.column_type], 0.0)

    def collapse(self, x: np.ndarray) -> np.ndarray:
        """A (rows, columns) solution per type: the sum of each type's columns."""
        by_type = np.zeros((x.shape[0], self.n_types))
        for c, kind in enumerate(self.column_type.tolist()):
            by_type[:, kind] += x[:, c]
        return by_type

    def subset(self, jobs: np.ndarray, capacity_fraction: float) -> PoolColumns:
        """The columns of the jobs ``jobs`` on ``capacity_fraction`` of each (POP)."""
        return PoolColumns(self.column_type, self.column_group,
                           self.capacity * capacity_fraction, self.allowed[jobs], self.n_types)


def pool_columns(cluster: Cluster, job_pools: Sequence[str | None]) -> PoolColumns | None:
    """The columns for jobs of the pools ``job_pools`` (one per job, problem order) on
    ``cluster`` (types in ``cluster.type_names`` order); None when no job is in a pool the
    cluster defines (the LP keeps one column per type, as in the paper)."""
    pools = cluster.pools
    if not pools:
        return None
    bound = sorted({pool for pool in job_pools if pool in pools})
    if not bound:
        return None
    group_of = {pool: g for g, pool in enumerate(bound)}
    free_jobs = any(pool not in group_of for pool in job_pools)
    groups: list[str | None] = [*bound, None] if free_jobs else list(bound)
    gpus = _group_gpus(cluster, group_of, len(groups))
    column_group_index, column_type = np.nonzero(gpus > 0)  # group-major, types in order
    job_group = np.array([group_of.get(pool, -1) for pool in job_pools], dtype=np.int64)
    allowed = (job_group[:, None] == column_group_index[None, :]) | (job_group[:, None] < 0)
    return PoolColumns(column_type, tuple(groups[g] for g in column_group_index.tolist()),
                       gpus[column_group_index, column_type].astype(float),
                       allowed.reshape(len(job_pools), len(column_type)),
                       len(cluster.type_names))


def _group_gpus(cluster: Cluster, group_of: dict[str, int], n_groups: int) -> np.ndarray:
    """(groups, types) GPUs; nodes of no bound pool count in the last group when there is
    one for them (else nobody may use them: they are left out)."""
    n_types = len(cluster.type_names)
    gpus = np.zeros((n_groups, n_types))
    rest = len(group_of) if n_groups > len(group_of) else -1
    for node, kind, count in zip(cluster.nodes, cluster.node_type.tolist(),
                                 cluster.node_gpus.tolist(), strict=True):
        group = group_of.get(node.pool, rest) if node.pool is not None else rest
        if kind >= 0 and group >= 0:
            gpus[group, kind] += count
    return gpus
