"""The FGD paper's experiment loop (Weng et al., USENIX ATC'23 §6.1): tasks arrive one by one
and never leave; each goes where the placement's score plugin puts it, or fails when no node
fits it. The metric is the GPU allocation ratio (milli-GPUs allocated / capacity) as the
arrived GPU requests grow past the cluster's capacity.

The workload: a pod list shuffled with a seed, then resampled until its GPU requests are
``ratio`` x the cluster's GPUs (the artifact's ``TunePodsByNodeTotalResource``: while above,
drop a random pod; while below, append a copy of a random pod of the original list, stopping
at the first that would overshoot).

This loop is special-purpose (no time, no departures), but it places tasks with the same
plugin objects the scheduler uses (``SharingScore.score_nodes`` and ``pick``), on a
``NodeView`` it keeps in place instead of a ``CycleState`` rebuilt per task. Equal scores go
to the first node of a seeded random order (``tie_order``), as in the artifact.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from dlsched.cluster.cluster import Cluster
from dlsched.fragmentation.base import SharingScore
from dlsched.fragmentation.view import MILLI, Demand, NodeView


@dataclass(frozen=True)
class Replay:
    """Per arrived task: the arrived GPU requests and the allocated GPUs, both as % of the
    cluster's GPUs; and whether it was placed."""

    capacity_gpus: int
    arrived_pct: np.ndarray
    allocated_pct: np.ndarray
    placed: np.ndarray

    def allocation_at(self, arrived_pct: float) -> float | None:
        """The mean allocation ratio (%) over the arrivals whose arrived share rounds to
        ``arrived_pct`` (or within 1 point of it), as the artifact's
        experiments/analysis/merge_alloc_discrete.py samples it; None if none is near."""
        rounded = np.rint(self.arrived_pct)
        near = rounded == arrived_pct
        if not near.any():
            near = np.abs(rounded - arrived_pct) <= 1
        return float(self.allocated_pct[near].mean()) if near.any() else None

    @property
    def unallocated_gpus(self) -> float:
        """GPUs (in whole-GPU units) left unallocated once every task arrived."""
        return self.capacity_gpus * (1 - float(self.allocated_pct[-1]) / 100)


def tuned_workload(demands: Sequence[Demand], capacity_gpus: int, ratio: float,
                   seed: int) -> list[Demand]:
    """The pod list shuffled with ``seed`` and resampled to ``ratio`` x the GPU capacity."""
    rng = np.random.default_rng(seed)
    pods = [demands[i] for i in rng.permutation(len(demands))]
    target = ratio * capacity_gpus * MILLI
    total = sum(d.total_gpu_milli for d in pods)
    while total > target and pods:
        total -= pods.pop(int(rng.integers(len(pods)))).total_gpu_milli
    while total < target:
        extra = demands[int(rng.integers(len(demands)))]
        if total + extra.total_gpu_milli > target:
            break
        pods.append(extra)
        total += extra.total_gpu_milli
    return pods


def replay(cluster: Cluster, tasks: Sequence[Demand], plugin: SharingScore,
           tie_order: np.ndarray | None = None) -> Replay:
    """Place ``tasks`` in order with ``plugin``. Equal scores go to the node ranked first by
    ``tie_order`` (a rank per node; default: node order)."""
    rank = np.arange(cluster.num_nodes) if tie_order is None else np.asarray(tie_order)
    view = NodeView.empty(cluster)
    view.versions = np.ones(cluster.num_nodes, dtype=np.int64)  # only ``take`` changes it
    allocated = np.zeros(len(tasks), dtype=np.int64)
    placed = np.zeros(len(tasks), dtype=bool)
    used = 0
    for i, demand in enumerate(tasks):
        nodes = np.flatnonzero(view.fits(demand))
        if len(nodes):
            node = _best(plugin.score_nodes(view, demand, nodes), nodes, rank)
            view.take(node, plugin.pick(view, demand, node), demand)
            used += demand.total_gpu_milli
            placed[i] = True
        allocated[i] = used
    capacity = cluster.num_gpus * MILLI
    arrived = np.cumsum([d.total_gpu_milli for d in tasks]) if len(tasks) else allocated
    return Replay(cluster.num_gpus, arrived * 100.0 / capacity, allocated * 100.0 / capacity,
                  placed)


def tie_order(num_nodes: int, seed: int) -> np.ndarray:
    """A seeded rank per node for breaking ties. The artifact's Kubernetes ``selectHost``
    takes the smallest node name among equal scores (its vendored
    pkg/scheduler/core/generic_scheduler.go), and the simulator prefixes every node name with
    its position in a random permutation (``syncClusterResourceList``, pkg/simulator/
    simulator.go): ties go to the first node of a random order fixed for the run."""
    return np.random.default_rng([seed, 1]).permutation(num_nodes)


def _best(scores: np.ndarray, nodes: np.ndarray, rank: np.ndarray) -> int:
    top = np.flatnonzero(scores == scores.max())
    if len(top) == 1:
        return int(nodes[top[0]])
    tied = nodes[top]
    return int(tied[int(rank[tied].argmin())])
