"""Score plugins for placement. Each returns 0..100 per candidate node (higher is better)."""

from __future__ import annotations

import numpy as np

from dlsched.scheduling.state import CycleState
from dlsched.workload.job import Job


class Consolidated:
    """Fewest nodes: a node that fits all remaining workers wins, the tightest such node first;
    otherwise the node with the most room (Tiresias/Gandiva-style consolidation)."""

    name = "consolidated"

    def score(self, state: CycleState, job: Job, nodes: np.ndarray, capacity: np.ndarray,
              need: int) -> np.ndarray:
        slope = 50.0 / max(int(capacity.max()), 1)
        return np.where(capacity >= need, (100.0 + need * slope) - capacity * slope,
                        capacity * (50.0 / max(need, 1)))


    def best_single(self, capacity: np.ndarray, usable: np.ndarray) -> int:
        """The node ``score`` ranks first for one worker, without scoring every candidate:
        every usable node fits one worker, so the tightest wins (lowest index on ties)."""
        return int(np.where(usable, capacity, np.iinfo(np.int64).max).argmin())


class BestFit:
    """Least fragmentation: the node left with the fewest free GPUs after placement wins; a node
    too small for the remaining workers ranks below every node that fits them."""

    name = "best-fit"

    def score(self, state: CycleState, job: Job, nodes: np.ndarray, capacity: np.ndarray,
              need: int) -> np.ndarray:
        size = np.maximum(state.cluster.node_gpus[nodes], 1)
        left = capacity - np.minimum(capacity, need)
        return np.where(capacity >= need, 50.0 + 50.0 * (1.0 - left / size), 50.0 * capacity / need)


class Spread:
    """Spread: the emptiest nodes first (with a take limit of one worker per node)."""

    name = "spread"

    def score(self, state: CycleState, job: Job, nodes: np.ndarray, capacity: np.ndarray,
              need: int) -> np.ndarray:
        size = np.maximum(state.cluster.node_gpus[nodes], 1)
        return 100.0 * capacity / size


class TopologyScore:
    """Locality: nodes in the rack of the workers already placed score 100, others 0; for the
    first node, prefer the rack with the most free GPUs so the rest can follow."""

    name = "topology"

    def score(self, state: CycleState, job: Job, nodes: np.ndarray, capacity: np.ndarray,
              need: int) -> np.ndarray:
        racks = state.cluster.node_rack[nodes]
        placed = state.scratch.get("placing_nodes") or []
        if placed:
            home = state.cluster.node_rack[placed[0]]
            return np.where(racks == home, 100.0, 0.0)
        per_rack = np.bincount(racks, weights=capacity)
        return 100.0 * per_rack[racks] / max(per_rack.max(), 1.0)
