"""``llm-size``: LLM jobs sized by the policy from their model, placed topology-aware.

An allocation policy (``scheduling/allocation.py``) over the jobs in submission order (FIFO: the
head blocks the queue). Running jobs keep their GPUs. A waiting job with a built-in model and
GPU bounds (``perf/llm/sizes.model_job``) gets the size ``pick_size`` chooses among its feasible
sizes (the planner's, memory checked) that can be placed now: the largest whose per-GPU
throughput is within ``efficiency`` of the best (Or et al., MLSys'20 §3.2). Its configuration's
(TP, PP, DP) decides the gang placement (Narayanan et al., SC'21 §3.3): every tensor-parallel
group of ``tp`` GPUs on one node (its all-reduces stay on NVLink), and every pipeline — ``pp``
such groups, one data-parallel replica — within one rack (its point-to-point activations stay
under one top-of-rack switch), the racks with the most room first so the job spans the fewest.
Other jobs are rigid and take the fewest nodes (``scheduling/fewest_nodes.py``).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping

import numpy as np

from dlsched.perf.llm.sizes import EFFICIENCY, SizeOption, feasible_sizes, pick_size
from dlsched.policies.elastic.speed import node_capacity
from dlsched.policies.fifo import SubmitOrder
from dlsched.scheduling.allocation import Assignment
from dlsched.scheduling.fewest_nodes import place
from dlsched.scheduling.profile import Profile
from dlsched.scheduling.registry import register_policy
from dlsched.scheduling.state import CycleState
from dlsched.workload.job import Job


class LlmSizeAllocator:
    """AllocatePlugin: FIFO; LLM jobs sized by the planner and placed by racks and nodes."""

    name = "llm-size"

    def __init__(self, efficiency: float = EFFICIENCY) -> None:
        if not 0 < efficiency <= 1:
            raise ValueError(f"efficiency must be in (0, 1], got {efficiency}")
        self.efficiency = efficiency

    def allocate(self, state: CycleState) -> Mapping[str, Assignment]:
        cluster, snap = state.cluster, state.snapshot
        room = node_capacity(state)
        out: dict[str, Assignment] = {}
        for job in snap.running:
            out[job.job_id] = Assignment.of(job, cluster)
            for node in out[job.job_id].nodes:
                room[node] -= 1
        for job in sorted(snap.waiting, key=lambda j: (j.spec.submit_time, j.job_id)):
            assignment = self._place(state, job, room)
            if assignment is None:
                break  # FIFO: the head blocks the queue
            out[job.job_id] = assignment
            for node in assignment.nodes:
                room[node] -= 1
        return out

    def _place(self, state: CycleState, job: Job, room: np.ndarray) -> Assignment | None:
        spec = job.spec
        options = self.options(state, job)
        if not options:
            placed = place(state, {job.job_id: spec.num_gpus}, {job.job_id: job}, room)
            return placed.get(job.job_id)
        allowed = _allowed(state, job)
        best = max(o.per_gpu for o in options)
        while options:
            option = pick_size(options, int(room[allowed].sum()), self.efficiency, best)
            if option is None:
                return None
            nodes = gang_nodes(state, option, room, allowed)
            if nodes is not None:
                return Assignment(tuple(nodes))
            options = [o for o in options if o.gpus < option.gpus]
        return None

    @staticmethod
    def options(state: CycleState, job: Job) -> list[SizeOption]:
        spec = job.spec
        if not spec.model or not spec.is_elastic or len(spec.gpu_types) != 1:
            return []
        low = spec.min_gpus or 1
        high = spec.max_gpus or spec.num_gpus
        return feasible_sizes(spec.model, spec.gpu_types[0], low, high)


def _allowed(state: CycleState, job: Job) -> np.ndarray:
    types = job.spec.gpu_types
    return np.array([not types or n.gpu_type in types for n in state.cluster.nodes])


def gang_nodes(state: CycleState, option: SizeOption, room: np.ndarray,
               allowed: np.ndarray) -> list[int] | None:
    """One node per worker: ``dp`` pipelines, each ``pp`` groups of ``tp`` GPUs, every group on
    one node and every pipeline in one rack (fullest racks first); None if they do not fit."""
    config = option.estimate.config
    tp, pp = config.tp, config.pp
    groups: dict[int, list[int]] = defaultdict(list)  # rack -> one node per free group
    rack_of = state.cluster.node_rack
    for node in np.flatnonzero(allowed).tolist():
        groups[int(rack_of[node])].extend([node] * (int(room[node]) // tp))
    racks = sorted(groups, key=lambda r: (-len(groups[r]), r))
    nodes: list[int] = []
    pipelines = 0
    for rack in racks:
        free = groups[rack]
        while pipelines < config.dp and len(free) >= pp:
            for node in free[:pp]:
                nodes.extend([node] * tp)
            del free[:pp]
            pipelines += 1
    return nodes if pipelines == config.dp else None


@register_policy("llm-size")
def llm_size(efficiency: float = EFFICIENCY, placement: str = "consolidated") -> Profile:
    """LLM jobs sized from their model by the planner (the largest size within `efficiency`
    of the best per-GPU throughput), TP groups on one node, pipelines in one rack; FIFO."""
    return Profile("llm-size", SubmitOrder(), plugins=(LlmSizeAllocator(efficiency),),
                   placement=placement, acts_on_running=True)
