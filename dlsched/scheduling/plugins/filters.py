"""Filter plugins: GPU type and node pool constraints."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from dlsched.cluster.cluster import Cluster
from dlsched.scheduling.placement import unconstrained
from dlsched.scheduling.state import CycleState
from dlsched.workload.job import Job


class GpuTypeFilter:
    """Keeps nodes whose GPU type the job allows (``JobSpec.gpu_types``; empty allows all)."""

    name = "gpu-type"
    static = True  # depends only on the job's spec

    def filter(self, state: CycleState, job: Job, mask: np.ndarray) -> np.ndarray:
        allowed = job.spec.gpu_types
        if not allowed:
            return mask
        cluster = state.cluster
        codes = [i for i, t in enumerate(cluster.type_names) if t in allowed]
        return mask & np.isin(cluster.node_type, codes)


class NodePoolFilter:
    """Keeps the nodes of the job's pool (a Philly virtual cluster) when the cluster has it.

    A job whose pool the cluster does not define may run on any node: pools describe how a
    cluster is partitioned, and a trace replayed on another cluster should still run.
    """

    name = "node-pool"
    static = True

    def __init__(self) -> None:
        self._masks: dict[tuple[int, str], np.ndarray] = {}

    def filter(self, state: CycleState, job: Job, mask: np.ndarray) -> np.ndarray:
        pool = job.spec.pool
        cluster = state.cluster
        if pool is None or pool not in cluster.pools:
            return mask
        return mask & self._pool_mask(cluster, pool)

    def _pool_mask(self, cluster: Cluster, pool: str) -> np.ndarray:
        key = (id(cluster), pool)
        cached = self._masks.get(key)
        if cached is None:
            cached = np.array([n.pool == pool for n in cluster.nodes], dtype=bool)
            self._masks[key] = cached
        return cached


class RunnableFilter:
    """Drops nodes whose GPU type the throughput model says the job cannot run on (rate 0)."""

    name = "runnable"
    static = True
    refusal = ("the throughput model rates it 0 on every GPU type left (an LLM job: no "
               "configuration of its model fits that many of these GPUs)")

    def filter(self, state: CycleState, job: Job, mask: np.ndarray) -> np.ndarray:
        from dlsched.perf.model import Placement

        cluster = state.cluster
        model = state.snapshot.throughput
        bad = [i for i, t in enumerate(cluster.type_names)
               if model.rate(job.spec, Placement.single_node(t, job.spec.num_gpus)) <= 0]
        if not bad:
            return mask
        return mask & ~np.isin(cluster.node_type, bad)


_TYPES, _POOLS, _RUNNABLE = GpuTypeFilter(), NodePoolFilter(), RunnableFilter()
_RUNNABLE_ONLY = (_RUNNABLE,)  # one tuple: the shape cache keys it by identity
_PLACEABLE = (_TYPES, _POOLS, _RUNNABLE)  # the default profile's static filters


def runnable_nodes(state: CycleState, job: Job) -> np.ndarray:
    """Read-only node mask of the GPU types the throughput model rates above 0 for the job at
    its size (the core's ``runnable`` filter), from the cycle's static-mask cache."""
    from dlsched.scheduling.placement import static_mask

    return static_mask(state, job, _RUNNABLE_ONLY)


def allowed_nodes(state: CycleState, job: Job) -> np.ndarray:
    """Read-only mask of the nodes the core's own static filters allow the job: its GPU types,
    its pool (a pool the cluster does not define restricts nothing) and the GPU types the
    throughput model rates above 0 (``runnable``), from the cycle's static-mask cache. The one
    mask for every policy that places jobs itself (the fewest-nodes placement, Pollux, Sia,
    Gandiva, Synergy) and for the allocation cycle's check of their targets: a job must not
    run where it cannot progress (pack-aware once ran ResNet-50 b128 on K80, rated 0, for
    ever), nor outside its pool (Optimus, AFS and ElasticFlow once grew a pool-a job onto
    pool b's node)."""
    from dlsched.scheduling.placement import static_mask

    return static_mask(state, job, _PLACEABLE)


def allowed_signature(state: CycleState, job: Job) -> bytes:
    """``allowed_nodes`` as bytes: jobs with equal signatures may use the same nodes."""
    from dlsched.scheduling.placement import mask_signature

    return mask_signature(state, job, _PLACEABLE)


def allows_every_node(state: CycleState, job: Job) -> bool:
    """Whether ``allowed_nodes`` is every node of the cluster (the allocation cycle asks it
    for every job a round moves or starts: no import statement per call, ~35 calls' cost)."""
    return unconstrained(state, job, _PLACEABLE)


def pooled_nodes(state: CycleState, jobs: Iterable[Job]) -> dict[str, frozenset[int]]:
    """Job id -> the nodes ``allowed_nodes`` gives it, for each job whose pool the cluster
    defines (empty on a cluster without pools): for a policy that picks nodes by GPU type
    alone (Gavel), which must still keep a job in its pool."""
    pools = state.cluster.pools
    if not pools:
        return {}
    out: dict[str, frozenset[int]] = {}
    by_mask: dict[int, frozenset[int]] = {}  # the cycle's masks are shared per shape
    for job in jobs:
        if job.spec.pool in pools:
            mask = allowed_nodes(state, job)
            nodes = by_mask.get(id(mask))
            if nodes is None:
                nodes = by_mask[id(mask)] = frozenset(np.flatnonzero(mask).tolist())
            out[job.job_id] = nodes
    return out
