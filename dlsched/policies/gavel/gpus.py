"""Exact GPUs for round targets, so that co-located pairs can be placed (space sharing).

An allocation target may name its GPUs (``Assignment.gpus``); a pair of jobs sharing GPUs
(Gavel OSDI'20 §3.1 "space sharing", Gandiva OSDI'18 §3.2 packing) must name the same ones.
Once one target names GPUs, every target that moves must name them too, or the core could give
a named GPU to another job first. ``name_gpus`` does that: jobs that keep their GPUs keep them,
the others take the lowest-index whole free GPUs on their target nodes.

Pure: arrays in, GPU tuples out.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping

import numpy as np

from dlsched.scheduling.allocation import Assignment


def name_gpus(nodes: Mapping[str, tuple[int, ...]], fixed: Mapping[str, tuple[int, ...]],
              free: np.ndarray, node_first_gpu: np.ndarray, node_gpus: np.ndarray
              ) -> dict[str, tuple[int, ...]]:
    """GPUs for every job of ``nodes`` (one node per worker) that is not in ``fixed`` (jobs
    that keep the GPUs they name); ``free[g]`` is True for a whole GPU nobody keeps (consumed).
    Raises ``ValueError`` when a node has fewer free GPUs than its workers (a planning bug)."""
    named: dict[str, tuple[int, ...]] = {}
    for job_id in sorted(nodes):
        if job_id in fixed:
            continue
        chosen: list[int] = []
        for node, need in sorted(Counter(nodes[job_id]).items()):
            start = int(node_first_gpu[node])
            span = np.flatnonzero(free[start:start + int(node_gpus[node])])[:need] + start
            if len(span) < need:
                raise ValueError(f"{job_id}: node {node} has {len(span)} free GPUs, "
                                 f"{need} planned")
            free[span] = False
            chosen.extend(int(g) for g in span)
        named[job_id] = tuple(sorted(chosen))
    return named


def exact(job_gpus: tuple[int, ...], gpu_node: np.ndarray, share: float) -> Assignment:
    """The target that runs a job on exactly ``job_gpus`` at ``share`` of each."""
    return Assignment(tuple(int(gpu_node[g]) for g in job_gpus), share=share, gpus=job_gpus)
