"""Placing worker counts on nodes as the Pollux artifact's Optimus does (petuum/adaptdl
``osdi21-artifact``, ``simulator/optimus.py``, ``OptimusPolicy.optimize``, "Placements"):

1. a job whose worker count is unchanged keeps its current nodes (as ``fewest_nodes.place``);
2. the other jobs are placed smallest count first (ties in the order given, i.e. submission
   order), each taking as many workers as fit on the node with the most free GPUs, then the
   next such node, until it has all its workers (``free_gpus.most_common(1)``; ties go to the
   lowest node index). Large jobs therefore spread over the emptiest nodes rather than
   packing onto the fewest.

Allocation policies pick this with ``placement="most-free"`` (the ``pollux-osdi21`` setting
runs Optimus so); their default stays ``fewest_nodes.place`` (Optimus §5.2).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from dlsched.scheduling.allocation import Assignment
from dlsched.scheduling.fewest_nodes import place_with
from dlsched.scheduling.state import CycleState
from dlsched.workload.job import Job


def place_most_free(state: CycleState, counts: Mapping[str, int], jobs: Mapping[str, Job],
                    capacity: np.ndarray) -> dict[str, Assignment]:
    """Node assignments for ``counts`` (job id -> workers; 0 means no GPUs)."""
    return place_with(state, counts, jobs, capacity, lambda j: counts[j], most_free_nodes)


def most_free_nodes(count: int, room: np.ndarray, allowed: np.ndarray) -> tuple[int, ...] | None:
    """``count`` workers, each chunk on the allowed node with the most room (lowest index on
    ties); updates ``room``. None (room untouched) when the allowed nodes lack the room."""
    usable = np.where(allowed, room, 0)
    if usable.sum() < count:
        return None
    nodes: list[int] = []
    while len(nodes) < count:
        node = int(np.argmax(usable))  # argmax keeps the lowest index on ties
        take = int(min(usable[node], count - len(nodes)))
        nodes.extend([node] * take)
        usable[node] -= take
        room[node] -= take
    return tuple(nodes)
