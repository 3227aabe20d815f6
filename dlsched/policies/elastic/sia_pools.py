"""Sia's GPU budgets per node pool (SOSP'23 §4.2's capacity rows, one per pool and type).

Sia's ILP bounds the GPUs of each type chosen in a round by the type's GPUs in the cluster.
On a cluster partitioned into pools (Philly's virtual clusters: ``filters.NodePoolFilter``) a
job may only use its pool's nodes, so the jobs of one pool could be given together more GPUs
of a type than their pool has: the rest stayed unplaced (``sia_place``) while the budget they
took was denied to jobs of the pools that had the room. ``pool_rows`` gives each pooled job's
configurations the capacity row of (its pool, the type), holding the pool's GPUs of that type;
pools share no node, so these rows also keep every type within the cluster's GPUs.

Jobs without a pool (or with one the cluster does not define) keep the cluster-wide row of
the type, as before; in a round that mixes them with pooled jobs, the rows do not see what a
job without a pool takes of a pool's nodes (the placement still checks them).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from dlsched.policies.elastic.sia_configs import Columns
from dlsched.scheduling.state import CycleState
from dlsched.workload.job import Job


def pool_rows(state: CycleState, jobs: Sequence[Job], columns: Columns,
              capacity: NDArray[np.int64]) -> tuple[Columns, NDArray[np.int64]] | None:
    """``columns`` with each one's capacity row in ``type_index`` (the true types stay in the
    caller's columns) and the rows' GPUs; None when no job is in a pool the cluster defines
    (the ILP keeps one row per type)."""
    cluster = state.cluster
    if not cluster.pools:
        return None
    pools = sorted({job.spec.pool for job in jobs if job.spec.pool in cluster.pools})
    if not pools:
        return None
    n_types = len(cluster.type_names)
    groups: list[str | None] = [None, *pools]  # group 0: jobs without a pool
    group_of = np.array([groups.index(job.spec.pool) if job.spec.pool in cluster.pools else 0
                         for job in jobs], dtype=np.int64)
    rows = np.stack([_type_gpus(state, capacity, group) for group in groups]).ravel()
    index = group_of[columns.job] * n_types + columns.type_index
    return (Columns(columns.job, index, columns.count, columns.multi, columns.value),
            rows.astype(np.int64))


def _type_gpus(state: CycleState, capacity: NDArray[np.int64], pool: str | None
               ) -> NDArray[np.float64]:
    """GPUs of ``capacity`` per type on the pool's nodes (every node: ``pool`` None)."""
    cluster = state.cluster
    kinds = cluster.node_type
    mask = kinds >= 0
    if pool is not None:
        mask &= np.array([node.pool == pool for node in cluster.nodes], dtype=bool)
    return np.bincount(kinds[mask], weights=capacity[mask], minlength=len(cluster.type_names))
