"""Fragmentation Gradient Descent (Weng et al., "Beware of Fragmentation: Scheduling
GPU-Sharing Workloads with Fragmentation Gradient Descent", USENIX ATC'23, §4, Alg. 1).

A task goes where it makes the fragmentation of the cluster grow least: for each node that
fits it (and, for a share of one GPU, each GPU of the node with room), the change
Delta = F_n(M) after placement - F_n(M) before, with F the fragmentation measure for the target
workload M (``measure.py``); the node (and GPU) with the smallest Delta wins. As in the
artifact (plugin/fgd_score.go), the score is Kubernetes' integer
floor(100 sigmoid(-Delta / 1000)), so nearly equal changes tie; a share takes the first GPU of
the node with the best score; whole GPUs are the lowest wholly free ones.

Without a target workload, the plugin takes the task types of the jobs it has scored so far,
weighted by how many jobs had each (each job counted once; re-derived after 1, 2, 4, ...,
1024 jobs, then every 1024).

Scores are cached per node and task shape: a node's entry is recomputed only when its free
GPUs or CPUs changed since (content compared, so the cache is right whoever changed them).
"""

from __future__ import annotations

import numpy as np

from dlsched.fragmentation.base import SharingScore, packed_gpus
from dlsched.fragmentation.measure import TaskMix, fragmentation
from dlsched.fragmentation.view import MILLI, Demand, NodeView, exclusive_gpus
from dlsched.scheduling.state import CycleState
from dlsched.workload.job import Job

MAX_SCORE = 100
RELEARN = 1024  # jobs between two re-derivations of a learned workload, past the first 1024


def fgd_score(delta_milli: np.ndarray) -> np.ndarray:
    """floor(100 sigmoid(-Delta/1000)): 50 for no change, higher when fragmentation drops."""
    return np.floor(MAX_SCORE / (1.0 + np.exp(delta_milli / MILLI)))


class FgdScore(SharingScore):
    """FGD (ATC'23 §4.2): the node whose fragmentation for the target workload grows least."""

    name = "fgd"

    def __init__(self, mix: TaskMix | None = None) -> None:
        self.mix = mix
        self._learning = mix is None
        self._learned: dict[str, Demand] = {}  # job id -> its task type (no mix given)
        self._reset()

    def _reset(self) -> None:
        self._seen: tuple[np.ndarray, np.ndarray] | None = None  # contents last seen
        self._tracked: NodeView | None = None  # the view whose versions are the epochs
        self._epoch = np.zeros(0, dtype=np.int64)
        self._by_shape: dict[Demand, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}

    # -- the node view interface ----------------------------------------------------------
    def score_nodes(self, view: NodeView, demand: Demand, nodes: np.ndarray) -> np.ndarray:
        scores = self._entry(view, demand, nodes)[1]
        return scores[nodes].astype(float)

    def pick(self, view: NodeView, demand: Demand, node: int) -> list[int]:
        if demand.is_share:
            _, _, gpus = self._entry(view, demand, np.array([node]))
            return [int(gpus[node])]
        if demand.gpu_milli >= MILLI:
            return exclusive_gpus(view.free[node], demand.num_gpus)
        return packed_gpus(view.free[node], demand)

    def score(self, state: CycleState, job: Job, nodes: np.ndarray, capacity: np.ndarray,
              need: int) -> np.ndarray:
        if self._learning:
            self._learn(job)
        return super().score(state, job, nodes, capacity, need)

    # -- caches -----------------------------------------------------------------------------
    def _learn(self, job: Job) -> None:
        """Count the job's task type; re-derive the mix (which empties the caches) when the
        count reaches a power of two, then every ``RELEARN`` jobs: the mix settles quickly,
        and recomputing every node's scores for each new job would not scale."""
        if job.job_id in self._learned:
            return
        self._learned[job.job_id] = Demand.of_job(job)
        seen = len(self._learned)
        if self.mix is None or (seen & (seen - 1)) == 0 or seen % RELEARN == 0:
            self.mix = TaskMix.of(self._learned.values(), coverage=1.0)
            self._reset()

    def _advance(self, view: NodeView) -> None:
        """Bring the per-node epochs up to date: the view's own change counts when it keeps
        them (the experiment's view), else a bump for every node whose free GPUs or CPUs
        differ from when last seen (a view rebuilt from each scheduler cycle)."""
        if view.versions is not None:
            if self._tracked is not view:
                self._reset()
                self._tracked = view
            self._epoch = view.versions
            return
        if self._seen is None or self._seen[0].shape != view.free.shape:
            self._reset()
            self._seen = (view.free.copy(), view.cpu_left.copy())
            self._epoch = np.ones(len(view.gpus), dtype=np.int64)
            return
        free, cpu = self._seen
        changed = (free != view.free).any(axis=1) | (cpu != view.cpu_left)
        if changed.any():
            self._epoch[changed] += 1
            free[changed] = view.free[changed]
            cpu[changed] = view.cpu_left[changed]

    def _entry(self, view: NodeView, demand: Demand, nodes: np.ndarray
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(epoch, score, best GPU) per node for this task shape, fresh for ``nodes``."""
        if self.mix is None:
            raise ValueError("FGD needs a target workload: give a TaskMix or score jobs first")
        self._advance(view)
        entry = self._by_shape.get(demand)
        if entry is None:
            size = len(view.gpus)
            entry = self._by_shape[demand] = (np.zeros(size, dtype=np.int64),
                                              np.zeros(size), np.zeros(size, dtype=np.int64))
        epochs, scores, gpus = entry
        stale = nodes[epochs[nodes] != self._epoch[nodes]]
        if len(stale):
            if demand.is_share:
                scores[stale], gpus[stale] = self._share_scores(view, demand, stale)
            else:
                scores[stale] = self._whole_scores(view, demand, stale)
            epochs[stale] = self._epoch[stale]
        return entry

    def _whole_scores(self, view: NodeView, demand: Demand, nodes: np.ndarray) -> np.ndarray:
        """Scores once the task takes its GPUs (the fullest that fit, as the artifact's
        ``NodeResource.Sub``; for whole GPUs, any wholly free ones) and CPUs on each node."""
        now = view.free[nodes]
        after = now.copy()
        if demand.gpu_milli >= MILLI:
            idle = now == MILLI
            after[idle & (np.cumsum(idle, axis=1) <= demand.num_gpus)] = 0
        elif demand.num_gpus:
            for row, node in zip(after, nodes.tolist(), strict=True):
                row[packed_gpus(view.free[node], demand)] -= demand.gpu_milli
        cpu = view.cpu_left[nodes]
        values = self._fragmentation(view, np.vstack([now, after]),
                                     np.concatenate([cpu, cpu - demand.cpu_milli]),
                                     np.tile(view.gpu_type[nodes], 2))
        return fgd_score(values[len(nodes):] - values[:len(nodes)])

    def _share_scores(self, view: NodeView, demand: Demand, nodes: np.ndarray
                      ) -> tuple[np.ndarray, np.ndarray]:
        """Per node, the best score over its GPUs with room for the share (the first such GPU
        on ties, as the artifact), and that GPU."""
        free = view.free[nodes]
        rows, cols = np.nonzero(free >= demand.gpu_milli)  # every (node, GPU) option
        options = free[rows]
        options[np.arange(len(rows)), cols] -= demand.gpu_milli
        cpu, types = view.cpu_left[nodes], view.gpu_type[nodes]
        values = self._fragmentation(view, np.vstack([free, options]),
                                     np.concatenate([cpu, cpu[rows] - demand.cpu_milli]),
                                     np.concatenate([types, types[rows]]))
        score = np.full(free.shape, -1.0)
        score[rows, cols] = fgd_score(values[len(nodes):] - values[:len(nodes)][rows])
        best = score.argmax(axis=1)
        return score[np.arange(len(nodes)), best], best

    def _fragmentation(self, view: NodeView, free: np.ndarray, cpu: np.ndarray,
                       gpu_type: np.ndarray) -> np.ndarray:
        assert self.mix is not None
        return fragmentation(free, cpu, gpu_type, self.mix, view.type_names)
