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


    def best_single(self, capacity: np.ndarray, mask: np.ndarray) -> int | None:
        """The node ``score`` ranks first for one worker, among the nodes of ``mask`` with
        room for one (None if there is none), without scoring every candidate: every such
        node fits the worker, so the tightest wins (lowest index on ties)."""
        if capacity.dtype != _INT64:
            keyed = np.where(mask & (capacity > 0), capacity, _OUTSIDE)
            best = int(keyed.argmin())
            return best if keyed[best] < _OUTSIDE else None
        return _tightest(capacity, mask, 1)

    def spread(self, room: list[int], need: int) -> list[tuple[int, int]]:
        """(position in ``room``, workers) in the order ``score`` picks nodes one by one for
        ``need`` workers when none holds them all (``sum(room) >= need``): while no node holds
        every remaining worker the roomiest gives all it has; then the tightest node that
        holds the rest takes them (lowest position on ties, as ``argmax`` breaks them)."""
        order = sorted(range(len(room)), key=lambda i: -room[i])  # stable: ties keep position
        picks: list[tuple[int, int]] = []
        remaining = need
        for at, position in enumerate(order):
            if room[position] < remaining:
                picks.append((position, room[position]))
                remaining -= room[position]
                continue
            best = position  # those that hold the rest lead ``order``; the last is the tightest
            for other in order[at + 1:]:
                if room[other] < remaining:
                    break
                if room[other] < room[best]:
                    best = other
            picks.append((best, remaining))
            break
        return picks

    def best_fitting(self, capacity: np.ndarray, mask: np.ndarray, need: int) -> int | None:
        """The node ``score`` ranks first for ``need`` workers when some node of ``mask`` has
        room for all of them: the tightest such node (lowest index on ties), which then takes
        them all; None when no node fits them all (placement scores node by node)."""
        if capacity.dtype != _INT64:
            keyed = np.where(mask & (capacity >= need), capacity, _OUTSIDE)
            best = int(keyed.argmin())
            return best if keyed.item(best) < _OUTSIDE else None
        return _tightest(capacity, mask, need)


_INT64 = np.dtype(np.int64)
_OUTSIDE = 1 << 62  # far above any GPU count, far below the int64 limit
# id(mask) -> (mask, its offsets, a buffer and its unsigned view): masks are mostly the
# placement's cached static ones.
_OFFSETS: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = {}


def _tightest(capacity: np.ndarray, mask: np.ndarray, need: int) -> int | None:
    """The node of ``mask`` with the least room among those with room for ``need`` (lowest
    index on ties; None if none), in two additions and one argmin without temporaries: a node
    of the mask keys as capacity - need, which, read as unsigned, puts a node too small
    (negative) after every other; a node outside the mask keys as _OUTSIDE + capacity - need."""
    entry = _OFFSETS.get(id(mask))
    if entry is None or entry[0] is not mask:
        entry = _offsets(mask)
    _, offsets, keyed, unsigned, less_one = entry
    if need == 1:  # the common job: the offsets less one, made once per mask
        np.add(capacity, less_one, out=keyed)
    else:
        np.add(capacity, offsets, out=keyed)
        np.subtract(keyed, need, out=keyed)
    best = int(unsigned.argmin())
    return best if 0 <= keyed.item(best) < _OUTSIDE >> 1 else None


def _offsets(mask: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray,
                                         np.ndarray]:
    """0 on the nodes of ``mask``, _OUTSIDE elsewhere, with a buffer for the keys and the
    offsets less one (a one-GPU job's); cached for read-only masks (a writable one could
    change under the cache)."""
    offsets = np.where(mask, np.int64(0), np.int64(_OUTSIDE))
    keyed = np.empty_like(offsets)
    entry = (mask, offsets, keyed, keyed.view(np.uint64), offsets - 1)
    if not mask.flags.writeable:
        if len(_OFFSETS) > 4096:  # masks of dynamic filters: do not pile up
            _OFFSETS.clear()
        _OFFSETS[id(mask)] = entry
    return entry


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


class MostFree:
    """Most free GPUs first, taking as many workers as fit there: the greedy placement of the
    Pollux artifact's Tiresias and Optimus (``free_gpus.most_common(1)``, simulator/
    tiresias.py and optimus.py); ties go to the lowest node index."""

    name = "most-free"

    def score(self, state: CycleState, job: Job, nodes: np.ndarray, capacity: np.ndarray,
              need: int) -> np.ndarray:
        return capacity.astype(float)


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
