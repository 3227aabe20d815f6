"""The shape every GPU-sharing placement score shares: a scheduler Score plugin (``score``,
``choose_gpus``) over a ``CycleState``, built on two functions of a ``NodeView`` that the FGD
experiment's fast loop calls directly: ``score_nodes`` (0..100 per candidate node, higher is
better) and ``pick`` (the GPUs of one node a task gets). Ties between nodes are the caller's:
the scheduler takes the lowest node index, the experiment a random one (as Kubernetes'
``selectHost`` does in the artifact)."""

from __future__ import annotations

import numpy as np

from dlsched.fragmentation.view import Demand, NodeView, exclusive_gpus, tightest_gpu
from dlsched.scheduling.state import CycleState
from dlsched.workload.job import Job


class SharingScore:
    """Base class: subclasses define ``name``, ``score_nodes`` and, when they choose GPUs
    otherwise than best fit, ``pick``."""

    name = "sharing"
    needs_tags = False  # whether ``score_nodes`` reads the kinds of tasks on each node

    def score_nodes(self, view: NodeView, demand: Demand, nodes: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def pick(self, view: NodeView, demand: Demand, node: int) -> list[int]:
        """Best fit for a share (the fullest GPU that fits), else the lowest wholly free GPUs
        (the artifact's default ``gpuSelMethod: best``, plugin/open_gpu_share.go)."""
        row = view.free[node]
        if demand.is_share:
            return [tightest_gpu(row, demand.gpu_milli)]
        if demand.gpu_milli >= 1000:
            return exclusive_gpus(row, demand.num_gpus)
        return packed_gpus(row, demand)

    # -- the scheduler's Score extension point -------------------------------------------
    def score(self, state: CycleState, job: Job, nodes: np.ndarray, capacity: np.ndarray,
              need: int) -> np.ndarray:
        """Scores for placing ``min(need, capacity)`` of the job's workers on each node."""
        view = self._view(state)
        workers = np.minimum(capacity, need)
        out = np.zeros(len(nodes))
        for count in np.unique(workers).tolist():
            chosen = workers == count
            out[chosen] = self.score_nodes(view, Demand.of_job(job, int(count)), nodes[chosen])
        return out

    def choose_gpus(self, state: CycleState, job: Job, node: int, count: int) -> list[int]:
        """The cluster GPUs ``count`` workers of the job get on ``node``."""
        view = self._view(state)
        first = int(state.cluster.node_first_gpu[node])
        return [first + g for g in self.pick(view, Demand.of_job(job, count), node)]

    def _view(self, state: CycleState) -> NodeView:
        if not self.needs_tags:
            return NodeView.of_cycle(state)
        held = [(job, job.allocation) for job in state.snapshot.running
                if job.job_id not in state.evicted]
        held += [(job, state.started[job.job_id]) for job in state.snapshot.waiting
                 if job.job_id in state.started]
        return NodeView.of_cycle(state, held)


def packed_gpus(row: np.ndarray, demand: Demand) -> list[int]:
    """``num_gpus`` GPUs with room, the fullest first (the artifact's ``NodeResource.Sub``)."""
    order = np.argsort(row, kind="stable")
    fits = order[row[order] >= demand.gpu_milli]
    return fits[:demand.num_gpus].tolist()
