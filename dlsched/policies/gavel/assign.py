"""Gavel's round mechanism, its placement half (Narayanan et al., OSDI'20 §5).

Each round Gavel walks the (job, GPU type) entries in decreasing priority and gives a job the
first type, in that order, with room for its whole gang; a job is scheduled at most once per
round. Every running job is re-assigned, so a job can move to another type (migration) when its
priority there is highest. Placement then keeps a job that stays on its type on the workers it
already holds (Gavel avoids needless checkpoint-restore), and puts the others on the nodes of
their type, a node that fits the whole gang first (the tightest), else the roomiest nodes.

This module is pure: counts in, node lists out; ``gavel_round`` feeds it the cluster.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from dlsched.policies.gavel.pool_budget import PoolBudget


@dataclass(frozen=True, slots=True)
class Entry:
    """One (job, type) candidate of a round, with its priority (higher first)."""

    priority: float
    tiebreak: tuple[float, str]  # (submit time, job id): deterministic ties
    job_id: str
    kind: int
    partner: str | None = None  # a co-located pair: both jobs on the same GPUs (§3.1)


def assign_types(entries: Sequence[Entry], workers: Mapping[str, int],
                 free: np.ndarray, budget: PoolBudget | None = None) -> dict[str, int]:
    """Gavel §5: entries by priority (highest first), each job on the first type with room for
    its ``workers``; ``free[t]`` GPUs of type t are available (a copy is consumed); with a
    ``budget``, a pooled job's pool must have that room too (``pool_budget.py``)."""
    return assign_with_pairs(entries, workers, free, budget)[0]


def assign_with_pairs(entries: Sequence[Entry], workers: Mapping[str, int], free: np.ndarray,
                      budget: PoolBudget | None = None
                      ) -> tuple[dict[str, int], dict[str, str]]:
    """``assign_types`` over single and pair entries (Gavel §5 with space sharing: priorities
    per job combination): a pair entry takes ``workers`` GPUs once for both jobs, only when
    neither job is scheduled yet. Returns each job's type and each paired job's partner."""
    left = free.astype(np.int64).copy()
    chosen: dict[str, int] = {}
    partner: dict[str, str] = {}
    for entry in sorted(entries, key=lambda e: (-e.priority, e.tiebreak, e.kind)):
        need, other = workers[entry.job_id], entry.partner
        if entry.job_id in chosen or left[entry.kind] < need or (
                other is not None and other in chosen):
            continue
        if budget is not None and not budget.take(
                (entry.job_id,) if other is None else (entry.job_id, other), entry.kind, need):
            continue
        chosen[entry.job_id] = entry.kind
        left[entry.kind] -= need
        if other is not None:
            chosen[other] = entry.kind
            partner[entry.job_id], partner[other] = other, entry.job_id
    return chosen, partner


def place_on_nodes(need: int, nodes: np.ndarray, room: np.ndarray) -> tuple[int, ...] | None:
    """``need`` workers on ``nodes`` (indices) with ``room[n]`` free GPUs each (consumed): the
    tightest node that fits all, else the roomiest nodes first; None when they do not fit."""
    if need <= 0:
        return ()
    space = room[nodes]
    fits = np.flatnonzero(space >= need)
    if len(fits):
        best = int(nodes[fits[np.argmin(space[fits])]])
        room[best] -= need
        return (best,) * need
    if int(space.sum()) < need:
        return None
    placed: list[int] = []
    for index in np.argsort(-space, kind="stable"):
        node = int(nodes[index])
        take = min(int(room[node]), need - len(placed))
        room[node] -= take
        placed.extend([node] * take)
        if len(placed) == need:
            break
    return tuple(sorted(placed))


def room_by_type(node_type: np.ndarray, room: np.ndarray, n_types: int) -> np.ndarray:
    """GPUs of room per GPU type (``Cluster.type_names`` order); nodes without GPUs (type
    code -1: CPU-only nodes, as in alibaba-2023) count for none."""
    with_gpus = node_type >= 0
    return np.bincount(node_type[with_gpus], weights=room[with_gpus], minlength=n_types)


def place_round(types: Mapping[str, int], workers: Mapping[str, int],
                current: Mapping[str, tuple[int, ...]], node_type: np.ndarray,
                room: np.ndarray, pools: Mapping[str, frozenset[int]] | None = None
                ) -> dict[str, tuple[int, ...]]:
    """Nodes for every job given its type: jobs staying on their type keep their nodes, the
    others (largest gangs first) are placed on the remaining room (``room`` is consumed).
    ``pools``: the only nodes a job may use, for a job its pool restricts (Gavel's types know
    no pools; a job whose type has room only outside its pool gets no nodes this round).
    Per-node work on Python lists (written back to ``room`` at the end): a round places
    tens of jobs on a few nodes each, where numpy's per-call cost dominates."""
    placed: dict[str, tuple[int, ...]] = {}
    kinds, left = node_type.tolist(), room.tolist()
    moving = []  # (minus gang, job id): placed largest first, after every job that stays
    for job_id, kind in types.items():
        held = current.get(job_id)
        if held is not None and pools and job_id in pools and not pools[job_id].issuperset(
                held):
            held = None  # (held outside its pool: moves)
        if held is None:
            moving.append((-workers[job_id], job_id))
        elif len(held) == 1:  # ``_keeps`` for one worker, inlined (most jobs)
            node = held[0]
            if kinds[node] == kind and left[node] >= 1:
                left[node] -= 1
                placed[job_id] = held
            else:
                moving.append((-workers[job_id], job_id))
        elif held and _keeps(held, kind, kinds, left):
            placed[job_id] = held
        else:
            moving.append((-workers[job_id], job_id))
    moving.sort()
    if not pools and moving and moving[0][0] == -1 == moving[-1][0]:
        _fill_one_worker(moving, types, kinds, left, placed)
        room[:] = left
        return placed
    by_type: dict[int, list[int]] = {}  # a type's nodes, listed when a job moves there
    for minus_need, job_id in moving:
        kind = types[job_id]
        of_kind = by_type.get(kind)
        if of_kind is None:
            of_kind = by_type[kind] = [n for n, k in enumerate(kinds) if k == kind]
        if pools and job_id in pools:
            of_kind = [n for n in of_kind if n in pools[job_id]]
        if minus_need == -1:  # ``_place_listed`` of one worker, inlined (most jobs)
            best, tightest = -1, 0
            for node in of_kind:  # the tightest node with room (the first of equals)
                space = left[node]
                if space >= 1 and (best < 0 or space < tightest):
                    best, tightest = node, space
                    if space == 1:  # none is tighter: the first of equals
                        break
            if best >= 0:
                left[best] -= 1
                placed[job_id] = (best,)
            continue
        nodes = _place_listed(-minus_need, of_kind, left)
        if nodes is not None:
            placed[job_id] = nodes
    room[:] = left
    return placed


def _fill_one_worker(moving: list[tuple[int, str]], types: Mapping[str, int],
                     kinds: list[int], left: list[int],
                     placed: dict[str, tuple[int, ...]]) -> None:
    """``place_round``'s moves where every moving job has one worker and no pool: each on
    its type's tightest node with room (the first of equals), as the scan picks it. A node
    picked stays the tightest until it is full (its room drops below every other's), so a
    type's picks are its nodes by (room, index), each as many times as its room: the
    order is made once a type, not scanned a move (Gavel's agnostic rounds move ~60 jobs)."""
    fills: dict[int, Iterator[int]] = {}
    for _, job_id in moving:
        kind = types[job_id]
        fill = fills.get(kind)
        if fill is None:
            order = sorted([(space, node) for node, k in enumerate(kinds)
                            if k == kind and (space := left[node]) > 0])
            fill = fills[kind] = iter([node for space, node in order for _ in range(space)])
        node = next(fill, -1)
        if node >= 0:
            left[node] -= 1
            placed[job_id] = (node,)


def _place_listed(need: int, nodes: list[int], room: list[int]) -> tuple[int, ...] | None:
    """``place_on_nodes`` on Python lists: the same choice, node for node."""
    if need <= 0:
        return ()
    best = -1
    for node in nodes:  # the tightest node that fits all (the first of equals)
        space = room[node]
        if space >= need and (best < 0 or space < room[best]):
            best = node
    if best >= 0:
        room[best] -= need
        return (best,) * need
    if sum(room[node] for node in nodes) < need:
        return None
    placed: list[int] = []
    for node in sorted(nodes, key=lambda n: -room[n]):  # roomiest first, stable
        take = min(room[node], need - len(placed))
        room[node] -= take
        placed.extend([node] * take)
        if len(placed) == need:
            break
    return tuple(sorted(placed))


def _keeps(held: tuple[int, ...], kind: int, node_type: list[int], room: list[int]) -> bool:
    """Whether a job's ``held`` nodes are all of type ``kind`` and still have room for its
    workers there; if so, that room is consumed."""
    if len(held) == 1:
        node = held[0]
        if node_type[node] != kind or room[node] < 1:
            return False
        room[node] -= 1
        return True
    count: dict[int, int] = {}
    for node in held:
        if node_type[node] != kind:
            return False
        count[node] = count.get(node, 0) + 1
    if any(room[node] < n for node, n in count.items()):
        return False
    for node, n in count.items():
        room[node] -= n
    return True
