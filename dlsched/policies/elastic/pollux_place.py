"""Placing Pollux's worker counts onto nodes (Qiao et al., OSDI'21 §4.2).

Rules, in order:

1. a job whose count did not change keeps its nodes (a move would be a restart);
2. the others, largest first, go to one node when one has room (best fit: the fullest node that
   fits, which keeps whole nodes free for distributed jobs);
3. otherwise over several nodes, most free first. With ``interference`` (Pollux §4.2,
   "interference avoidance": at most one distributed job per node) a node already holding a
   distributed job is skipped;
4. an elastic job that does not fit at its count shrinks to what fits if that is within its
   bounds; a rigid one gets nothing;
5. an elastic job that still gets nothing (the nodes with room each hold a distributed job)
   shrinks onto the one node with the most room, within its bounds: on one node it is not
   distributed, so it may share a node with a distributed job. This is the Pollux artifact's
   rule (petuum/adaptdl ``osdi21-artifact``, ``simulator/pollux.py``, ``Problem._repair``):
   "at most one distributed job per node" drops only a second *distributed* job's replicas on
   a node, and replicas beyond a node's free GPUs are cut, not the whole job, so its search
   can always give a job fewer replicas on one node. Without it a 1-GPU job asked to take 4
   waited 9.4 h beside 4-5 free GPUs (``pollux-1``, ncf-159; the artifact's JCT: 102 s).

6. ``fill``: GPUs that rules 2-5 left free while they cut a planned count (node fragmentation,
   interference avoidance) go, best gain per GPU first, to jobs whose utility rises: a job
   grows on a node it already holds when it is distributed, or moves whole onto one node
   with more room than its workers. The artifact's search is over node-level allocations
   (``simulator/pollux.py``: its repair makes every candidate feasible and its mutation adds
   replicas where nodes have free GPUs), so its plan never leaves a GPU idle that a job's
   speedup would gain from; a plan of counts must be mended after placement instead.

A job goes only to the nodes its request allows (``Request.allowed``: its GPU-type pins and
pool, by the core's filters' rules; None: every node).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from dlsched.policies.elastic.search import best_jump


@dataclass(frozen=True, slots=True)
class Request:
    """One job's target worker count, its bounds and where it runs now."""

    count: int
    low: int
    current: Counter[int]
    allowed: NDArray[np.bool_] | None = None


def place(requests: Sequence[Request], capacity: NDArray[np.int64],
          interference: bool = True) -> list[tuple[int, ...]]:
    """One node index per worker for every request (empty: the job gets nothing)."""
    free = np.array(capacity, dtype=np.int64)
    distributed = np.zeros(len(free), dtype=bool)
    result: list[tuple[int, ...]] = [()] * len(requests)
    moving = []
    for i, req in enumerate(requests):
        if req.count > 0 and req.count == sum(req.current.values()) and _keep(req, free,
                                                                              distributed):
            result[i] = tuple(sorted(req.current.elements()))
        elif req.count > 0:
            moving.append(i)
    for i in sorted(moving, key=lambda i: -requests[i].count):
        result[i] = _place_one(requests[i], free, distributed, interference)
    return result


def _keep(req: Request, free: NDArray[np.int64], distributed: NDArray[np.bool_]) -> bool:
    nodes = list(req.current)
    if any(free[n] < k for n, k in req.current.items()):
        return False
    for node, k in req.current.items():
        free[node] -= k
    if len(nodes) > 1:
        distributed[nodes] = True
    return True


def _place_one(req: Request, free: NDArray[np.int64], distributed: NDArray[np.bool_],
               interference: bool) -> tuple[int, ...]:
    room = free if req.allowed is None else np.where(req.allowed, free, 0)
    fits = np.flatnonzero(room >= req.count)
    if fits.size:
        node = int(fits[np.argmin(free[fits])])
        free[node] -= req.count
        return (node,) * req.count
    usable = room > 0
    if interference:
        usable &= ~distributed
    nodes = np.flatnonzero(usable)
    nodes = nodes[np.argsort(-free[nodes], kind="stable")]
    total = int(free[nodes].sum())
    count = min(req.count, total)
    if count < max(req.low, 1):
        return _shrink_onto_one_node(req, room, free)
    chosen: list[int] = []
    for node in nodes.tolist():
        take = min(int(free[node]), count - len(chosen))
        chosen.extend([node] * take)
        free[node] -= take
        if len(chosen) == count:
            break
    if len(set(chosen)) > 1:
        distributed[sorted(set(chosen))] = True
    return tuple(sorted(chosen))


def _shrink_onto_one_node(req: Request, room: NDArray[np.int64],
                          free: NDArray[np.int64]) -> tuple[int, ...]:
    """Rule 5: the node with the most room (the first such), as many workers as fit there and
    the job asks, if that is within its bounds; on one node the job is not distributed."""
    node = int(np.argmax(room))
    count = min(req.count, int(room[node]))
    if count < max(req.low, 1):
        return ()
    free[node] -= count
    return (node,) * count


def fill(requests: Sequence[Request], capacity: NDArray[np.int64],
         placed: list[tuple[int, ...]], utility: NDArray[np.float64]) -> list[tuple[int, ...]]:
    """Rule 6: hand the GPUs ``placed`` leaves free to the jobs whose ``utility`` row (per
    worker count) gains most per GPU, one change at a time, until no change gains. A job only
    grows on nodes it is distributed over or moves whole onto one node, so no node gets a
    second distributed job. Free GPUs and masks are plain lists: a round's few changes would
    otherwise cost mostly numpy's per-call overhead."""
    result = list(placed)
    free = [int(k) for k in capacity]
    for nodes in result:
        for node in nodes:
            free[node] -= 1
    masks = [None if r.allowed is None else r.allowed.tolist() for r in requests]
    while (change := _best_change(masks, free, result, utility)) is not None:
        j, nodes = change
        for node in result[j]:
            free[node] += 1
        for node in nodes:
            free[node] -= 1
        result[j] = nodes
    return result


def _best_change(masks: list[list[bool] | None], free: list[int],
                 placed: list[tuple[int, ...]], utility: NDArray[np.float64],
                 ) -> tuple[int, tuple[int, ...]] | None:
    """The change of highest gain per GPU over every job (ties: the earlier job); None when
    none gains."""
    best: tuple[float, int, tuple[int, ...]] | None = None
    open_nodes, most = {n for n, k in enumerate(free) if k > 0}, max(free)
    for j, (mask, nodes) in enumerate(zip(masks, placed, strict=True)):
        if len(nodes) >= most and open_nodes.isdisjoint(nodes):
            continue  # it holds no node with room and fits whole on none
        room = free if mask is None else [k if ok else 0 for k, ok in zip(free, mask, strict=True)]
        for gain, target in _changes(utility[j], nodes, room):
            if best is None or gain > best[0]:
                best = (gain, j, target)
    return None if best is None else (best[1], best[2])


def _changes(row: NDArray[np.float64], nodes: tuple[int, ...], room: list[int],
             ) -> list[tuple[float, tuple[int, ...]]]:
    """A job's gaining changes as (gain per GPU, its nodes after): widening on each node it
    holds (a distributed job) or where it is (a single-node one), and moving whole onto the
    other node that fits the best move most tightly (rule 2's best fit)."""
    held, start = Counter(nodes), len(nodes)
    found = []
    for node in held:
        jump = best_jump(row, start, room[node]) if room[node] > 0 else None
        if jump is not None:
            found.append((jump[0], tuple(sorted((*nodes, *[node] * (jump[1] - start))))))
    others = [(k, n) for n, k in enumerate(room) if k > start and n not in held]
    jump = best_jump(row, start, max(others)[0] - start) if others else None
    if jump is not None:
        node = min((k, n) for k, n in others if k >= jump[1])[1]
        found.append((jump[0], (node,) * jump[1]))
    return found
