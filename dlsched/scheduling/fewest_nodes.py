"""Placing worker counts on nodes: the fewest nodes per job (Optimus, Peng et al. EuroSys'18
§5.2: a job's tasks on the smallest number of servers, which minimizes its cross-server
traffic). Shared by Optimus, AFS, ElasticFlow and Chronus, and by the tenant layer's quota gate
(``tenancy/allocation.py``) when it fills idle GPUs.

Given a target worker count per job, the placement:

1. keeps a running job on its current nodes when its count is unchanged and those nodes still
   have room (no needless checkpoint-restart);
2. places the other jobs largest first (first-fit decreasing): a job that fits on one node
   goes to the node with the least room that fits it (best fit; with power-of-two sizes on
   power-of-two nodes this is buddy allocation, ElasticFlow §4.4), a larger job takes whole
   nodes, the roomiest first, so it spans the fewest nodes.

A job may only use the nodes the core's static filters allow it (``filters.allowed_nodes``:
its ``spec.gpu_types``, its pool, the types the throughput model rates above 0). A job that
does not fit (the counts exceed the room of its allowed nodes) gets no assignment this round.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from dlsched.scheduling.allocation import Assignment
from dlsched.scheduling.plugins.filters import allowed_nodes
from dlsched.scheduling.state import CycleState
from dlsched.workload.job import Job


def place(state: CycleState, counts: Mapping[str, int], jobs: Mapping[str, Job],
          capacity: np.ndarray) -> dict[str, Assignment]:
    """Node assignments for ``counts`` (job id -> workers; 0 means no GPUs)."""
    return place_with(state, counts, jobs, capacity, lambda j: (-counts[j], j), fit_nodes)


Choose = Callable[[int, np.ndarray, np.ndarray], "tuple[int, ...] | None"]


def place_with(state: CycleState, counts: Mapping[str, int], jobs: Mapping[str, Job],
               capacity: np.ndarray, order: Callable[[str], Any],
               choose: Choose) -> dict[str, Assignment]:
    """Jobs whose worker count is unchanged keep their nodes; the others, sorted by ``order``
    (a stable sort: ties keep the order given), get ``choose(count, room, allowed)``."""
    room = capacity.copy()
    out: dict[str, Assignment] = {}
    rest = []
    for job_id, count in counts.items():
        if count <= 0:
            continue
        kept = _keep(state, jobs[job_id], count, room)
        if kept is None:
            rest.append(job_id)
        else:
            out[job_id] = kept
    rest.sort(key=order)
    for job_id in rest:
        nodes = choose(counts[job_id], room, allowed_nodes(state, jobs[job_id]))
        if nodes is not None:
            out[job_id] = Assignment(nodes)
    return out


def _keep(state: CycleState, job: Job, count: int, room: np.ndarray) -> Assignment | None:
    if not job.allocation or len(job.allocation) != count:
        return None
    current = Assignment.of(job, state.cluster)
    per_node = current.per_node()
    if any(room[n] < k for n, k in per_node.items()):
        return None
    for n, k in per_node.items():
        room[n] -= k
    return current


def fit_nodes(count: int, room: np.ndarray, allowed: np.ndarray) -> tuple[int, ...] | None:
    """Best fit on one node, else whole nodes roomiest first; updates ``room``."""
    usable = np.where(allowed, room, 0)
    if usable.sum() < count:
        return None
    single = np.flatnonzero(usable >= count)
    if len(single):
        node = int(single[np.argmin(usable[single])])  # least room; argmin keeps lowest index
        room[node] -= count
        return (node,) * count
    order = np.lexsort((np.arange(len(usable)), -usable))
    nodes: list[int] = []
    for node in order:
        take = int(min(usable[node], count - len(nodes)))
        if take <= 0:
            break
        nodes.extend([int(node)] * take)
        room[node] -= take
    return tuple(nodes)
