"""Gandiva's books of free GPU room within one round, in GPU fractions as the core keeps them
(``CycleState.free``: the free share of each GPU): a worker asking for ``share`` of a GPU fits
a GPU with that much free, so four quarter-GPU jobs fit one GPU and do not time-slice.

Whole-GPU jobs read ``whole`` (wholly free GPUs per node), kept in step with ``free``: for a
cluster of whole-GPU jobs the books are the integer counts Gandiva kept before.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from dlsched.cluster.cluster import Cluster
from dlsched.scheduling.state import EPS, FULL, shift_free


class GandivaRoom:
    def __init__(self, cluster: Cluster, free: np.ndarray, whole: np.ndarray) -> None:
        self.cluster = cluster
        self.free = free.astype(np.float64)  # copies: the round's own books
        self.whole = whole.astype(np.int64)

    @classmethod
    def empty(cls, cluster: Cluster, down: Sequence[int]) -> GandivaRoom:
        """Every GPU of the nodes that are up, free (a quantum re-decides everything)."""
        whole = cluster.node_gpus.astype(np.int64).copy()
        whole[list(down)] = 0
        return cls(cluster, np.repeat(whole > 0, cluster.node_gpus).astype(np.float64), whole)

    @property
    def total(self) -> float:
        """Free GPU room in the cluster, in GPUs (fractions summed)."""
        return float(self.free.sum())

    def capacity(self, share: float) -> np.ndarray:
        """Per node: workers of ``share`` that still fit (a copy the caller may consume)."""
        if share >= FULL - EPS:
            return self.whole.copy()
        fits = (self.free >= share - EPS).astype(np.int64)
        return np.bincount(self.cluster.gpu_node, weights=fits,
                           minlength=self.cluster.num_nodes).astype(np.int64)

    def take(self, gpus: Sequence[int], shares: Sequence[float]) -> None:
        for gpu, share in zip(gpus, shares, strict=True):
            shift_free(self.free, self.whole, self.cluster.gpu_node, gpu, -share)

    def give(self, gpus: Sequence[int], shares: Sequence[float]) -> None:
        self.take(gpus, [-share for share in shares])

    def take_on(self, nodes: Sequence[int], share: float) -> tuple[int, ...]:
        """One GPU with ``share`` free per worker on its node, the lowest index first (the
        core's choice for free GPUs), booked; ``ValueError`` if a node lacks them (a
        planning bug: ``capacity`` said they fit)."""
        chosen: list[int] = []
        first, counts = self.cluster.node_first_gpu, self.cluster.node_gpus
        for node in nodes:
            start = int(first[node])
            span = self.free[start:start + int(counts[node])]
            room = np.flatnonzero(span >= share - EPS)
            if not len(room):
                raise ValueError(f"node {node} has no GPU with {share:g} free")
            gpu = start + int(room[0])
            shift_free(self.free, self.whole, self.cluster.gpu_node, gpu, -share)
            chosen.append(gpu)
        return tuple(sorted(chosen))
