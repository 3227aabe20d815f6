"""A round's GPUs of each type per node pool, for Gavel's type assignment (OSDI'20 §5).

Gavel's round gives a job the first GPU type, in priority order, with room for its gang,
counting each type's room over the whole cluster. A job confined to a pool (a Philly virtual
cluster: ``filters.NodePoolFilter``) may only use its pool's nodes, so a type whose room is all
in other pools was still given to it; ``place_round`` then left it unplaced for the round while
its own pool had room of another type, and the room it was counted against was lost to the
jobs that could have used it. ``PoolBudget`` counts each pool's room per type beside the
cluster's: a pooled job takes a type only when its pool has room for its gang there, and that
room is consumed. Jobs without a pool (or with one the cluster does not define) are counted
against the cluster's room alone, as before; in a round that mixes them with pooled jobs a
pool's count does not see what they take of it (``place_round`` still checks the nodes).
The LP that gives ``X`` counts each (pool, type) itself (``pool_columns``); the budget keeps
the round's walk, whose ``X = 0`` entries fill otherwise idle GPUs, within each pool.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import numpy as np

from dlsched.cluster.cluster import Cluster
from dlsched.workload.job import Job

# per cluster (by identity), each pool's node mask: built once, read every round
_MASKS: dict[int, tuple[Cluster, dict[str, np.ndarray]]] = {}


def _pool_masks(cluster: Cluster) -> dict[str, np.ndarray]:
    cached = _MASKS.get(id(cluster))
    if cached is None or cached[0] is not cluster:
        pools = np.array([node.pool or "" for node in cluster.nodes], dtype=object)
        cached = _MASKS[id(cluster)] = (cluster, {p: pools == p for p in cluster.pools})
    return cached[1]


class PoolBudget:
    """Each pooled job's pool and each pool's room per GPU type left this round."""

    def __init__(self, pool_of: Mapping[str, str], left: Mapping[str, list[int]]) -> None:
        self.pool_of = dict(pool_of)  # job id -> its pool (pooled jobs only)
        self.left = {pool: list(room) for pool, room in left.items()}

    @classmethod
    def of(cls, cluster: Cluster, jobs: Iterable[Job], room: np.ndarray) -> PoolBudget | None:
        """The budget of ``jobs`` on ``room`` (free GPUs per node); None when none of them is
        in a pool the cluster defines (the round counts the cluster's room alone)."""
        pools = cluster.pools
        if not pools:  # no pass over the jobs on a cluster without pools (most runs)
            return None
        pool_of = {job.job_id: job.spec.pool for job in jobs if job.spec.pool in pools}
        if not pool_of:
            return None
        masks, kinds = _pool_masks(cluster), cluster.node_type
        left = {}
        for pool in set(pool_of.values()):
            mask = masks[pool] & (kinds >= 0)  # CPU-only nodes (type -1) hold no GPU
            left[pool] = np.bincount(kinds[mask], weights=room[mask],
                                     minlength=len(cluster.type_names)).astype(int).tolist()
        return cls(pool_of, left)  # type: ignore[arg-type]

    def take(self, job_ids: tuple[str, ...], kind: int, need: int) -> bool:
        """Whether the pools of ``job_ids`` (one job, or a co-located pair on the same GPUs)
        have ``need`` GPUs of type ``kind`` left; if so they are consumed. A pair of two
        pools has no GPU both may use."""
        pools = {self.pool_of[j] for j in job_ids if j in self.pool_of}
        if not pools:
            return True
        if len(pools) > 1:
            return False
        room = self.left[pools.pop()]
        if room[kind] < need:
            return False
        room[kind] -= need
        return True
