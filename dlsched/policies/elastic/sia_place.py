"""Placing Sia's chosen configurations onto nodes (Jayaram Subramanya et al., SOSP'23 §4.1).

Per job, on nodes of its chosen GPU type that it may use (``Choice.allowed``: its pool, its pins,
the types rated above 0 for it):

1. a job whose configuration did not change keeps its nodes (no restart);
2. whole-node configurations take nodes that are entirely free;
3. single-node configurations go best-fit (the fullest node with room), largest first.

Counts are powers of two up to a node or whole nodes, so on nodes of power-of-two size step 3
never fails once the ILP's per-type GPU budget holds; jobs kept in place can fragment nodes,
so when any job fails to fit, ``place_configs`` places everything again without keeping. A
rigid job of another size (6 GPUs on 4-GPU nodes) takes whole nodes, then a best-fit rest.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray


@dataclass(frozen=True, slots=True)
class Choice:
    """A job's chosen configuration, where it runs now, and the nodes it may use (None:
    every node; ``filters.allowed_nodes``)."""

    type_index: int
    count: int
    node_size: int
    current: Counter[int]
    allowed: NDArray[np.bool_] | None = None


def place_configs(choices: Sequence[Choice], capacity: NDArray[np.int64],
                  node_type: NDArray[np.int64]) -> list[tuple[int, ...]]:
    """One node per worker for every choice (empty when it could not be placed)."""
    result = _place(choices, capacity, node_type, keep=True)
    if all(r or not c.count for r, c in zip(result, choices, strict=True)):
        return result
    return _place(choices, capacity, node_type, keep=False)


def _place(choices: Sequence[Choice], capacity: NDArray[np.int64],
           node_type: NDArray[np.int64], keep: bool) -> list[tuple[int, ...]]:
    free = np.array(capacity, dtype=np.int64)
    result: list[tuple[int, ...]] = [()] * len(choices)
    moving = []
    for i, c in enumerate(choices):
        if keep and c.count and _same(c, free, node_type):
            for node, k in c.current.items():
                free[node] -= k
            result[i] = tuple(sorted(c.current.elements()))
        elif c.count:
            moving.append(i)
    for i in sorted(moving, key=lambda i: -choices[i].count):
        result[i] = _place_one(choices[i], free, capacity, node_type)
    return result


def _same(c: Choice, free: NDArray[np.int64], node_type: NDArray[np.int64]) -> bool:
    return (sum(c.current.values()) == c.count
            and all(node_type[n] == c.type_index and free[n] >= k
                    and (c.allowed is None or c.allowed[n]) for n, k in c.current.items()))


def _place_one(c: Choice, free: NDArray[np.int64], capacity: NDArray[np.int64],
               node_type: NDArray[np.int64]) -> tuple[int, ...]:
    of_type = node_type == c.type_index
    if c.allowed is not None:
        of_type &= c.allowed
    chosen: list[int] = []
    whole, rest = divmod(c.count, c.node_size) if c.count > c.node_size else (0, c.count)
    if whole:
        empty = np.flatnonzero(of_type & (free == capacity) & (capacity == c.node_size))
        if empty.size < whole:
            return ()
        for node in empty[:whole].tolist():
            chosen.extend([node] * c.node_size)
            free[node] = 0
    if rest:
        fits = np.flatnonzero(of_type & (free >= rest))
        if fits.size == 0:
            for node in set(chosen):
                free[node] = capacity[node]
            return ()
        node = int(fits[np.argmin(free[fits])])
        free[node] -= rest
        chosen.extend([node] * rest)
    return tuple(sorted(chosen))
