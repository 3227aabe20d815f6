"""The baseline placements of the FGD paper (Weng et al., USENIX ATC'23, §6.1 "Baselines"), as
score plugins any policy can use. Each rule follows the paper's artifact
(hkust-adsl/kubernetes-scheduler-simulator, pkg/simulator/plugin/*_score.go), Kubernetes'
integer scores included: equal scores are ties, broken at random by the experiment.

``cpu_scale``/``gpu_scale`` normalise resource vectors: the artifact uses its largest node
(128 CPUs, 8 GPUs, ``MaxSpecCpu``/``MaxSpecGpu``); here, the cluster's largest node.
"""

from __future__ import annotations

import numpy as np

from dlsched.fragmentation.base import SharingScore
from dlsched.fragmentation.view import MILLI, Demand, NodeView, exclusive_gpus

MAX_SCORE = 100


def _scales(view: NodeView) -> tuple[float, float]:
    return view.scales


class RandomScore(SharingScore):
    """Random (ATC'23 §6.1): a node drawn uniformly among those that fit (the artifact's
    ``RandomScore`` PreScore draw), and a random GPU with room for a share."""

    name = "random"

    def __init__(self, seed: int = 0) -> None:
        self.rng = np.random.default_rng(seed)

    def score_nodes(self, view: NodeView, demand: Demand, nodes: np.ndarray) -> np.ndarray:
        return self.rng.random(len(nodes)) * MAX_SCORE

    def pick(self, view: NodeView, demand: Demand, node: int) -> list[int]:
        row = view.free[node]
        if demand.is_share:
            return [int(self.rng.choice(np.flatnonzero(row >= demand.gpu_milli)))]
        return exclusive_gpus(row, demand.num_gpus)


class DotProductScore(SharingScore):
    """DotProd (Tetris-style alignment, ATC'23 §6.1): the smaller the dot product of the
    node's free (CPU, GPU) vector and the task's request, both normalised by the largest node,
    the better: score = floor(100 (1 - <free, request> / 2)) (``dimExtMethod: merge``,
    ``normMethod: max``, plugin/dot_product_score.go); GPUs by best fit."""

    name = "dot-product"

    def score_nodes(self, view: NodeView, demand: Demand, nodes: np.ndarray) -> np.ndarray:
        cpu_scale, gpu_scale = _scales(view)
        dot = view.total[nodes] / gpu_scale * (demand.total_gpu_milli / gpu_scale)
        if cpu_scale:
            dot = dot + view.cpu_left[nodes] / cpu_scale * (demand.cpu_milli / cpu_scale)
        return np.floor(MAX_SCORE * (1.0 - dot / 2.0))


class GpuClusteringScore(SharingScore):
    """GpuClustering (ATC'23 §6.1): put tasks of the same kind (a share, 1, 2, 4, 8 GPUs)
    together: a node hosting only that kind scores 75-100, several kinds including it 50-75,
    an idle node 25-50, other kinds 0-25; within a band, the fewer free milli-GPUs the better
    (plugin/gpu_clustering_score.go, integer arithmetic); a task with no GPU scores 0."""

    name = "gpu-clustering"
    needs_tags = True

    def score_nodes(self, view: NodeView, demand: Demand, nodes: np.ndarray) -> np.ndarray:
        if demand.num_gpus == 0:
            return np.zeros(len(nodes))
        top = int(view.gpus.max()) * MILLI
        within = (MAX_SCORE // 4) * (top - view.total[nodes]) // top
        tags = view.tags[nodes] > 0
        kinds = tags.sum(axis=1)
        if demand.tag in view.tag_names:
            same = tags[:, view.tag_names.index(demand.tag)]
        else:
            same = np.zeros(len(nodes), dtype=bool)
        band = np.where(same, np.where(kinds == 1, 3, 2), np.where(kinds == 0, 1, 0))
        return (within + band * (MAX_SCORE // 4)).astype(float)


class GpuPackingScore(SharingScore):
    """GpuPacking (ATC'23 §6.1): prefer, in order, GPUs already shared (score 50-100, the
    fuller the better), then whole GPUs on partly used nodes (33-50), then idle nodes (0-33)
    (plugin/gpu_packing_score.go, integer arithmetic); a task with no GPU scores 0."""

    name = "gpu-packing"

    def score_nodes(self, view: NodeView, demand: Demand, nodes: np.ndarray) -> np.ndarray:
        if demand.num_gpus == 0:
            return np.zeros(len(nodes))
        idle = view.idle[nodes]
        whole_used, left_pct = self._used(view, demand, nodes)
        score = np.maximum(MAX_SCORE - left_pct // 10, MAX_SCORE // 2)
        score = np.where(whole_used > 0, np.maximum(MAX_SCORE // 2 - whole_used,
                                                    MAX_SCORE // 3), score)
        empty = idle == view.gpus[nodes]
        return np.where(empty, np.maximum(MAX_SCORE // 3 - idle, idle), score).astype(float)

    @staticmethod
    def _used(view: NodeView, demand: Demand, nodes: np.ndarray) -> tuple[np.ndarray, ...]:
        """Per node, of the GPUs the task would take (the fullest that fit): how many are
        wholly free, and the sum of their free percentages."""
        if demand.gpu_milli >= MILLI:  # only wholly free GPUs fit
            return np.full(len(nodes), demand.num_gpus), np.full(len(nodes), 0)
        free = view.free[nodes]
        if demand.num_gpus == 1:  # one GPU: the fullest that fits
            chosen = np.where(free >= demand.gpu_milli, free, MILLI + 1).min(axis=1)
            return (chosen == MILLI).astype(np.int64), chosen * 100 // MILLI
        ordered = np.sort(np.where(np.arange(free.shape[1]) < view.gpus[nodes][:, None],
                                   free, -1), axis=1)
        fits = ordered >= demand.gpu_milli
        used = fits & (np.cumsum(fits, axis=1) <= demand.num_gpus)
        return ((used & (ordered == MILLI)).sum(axis=1),
                (np.where(used, ordered, 0) * 100 // MILLI).sum(axis=1))


class BestFitScore(SharingScore):
    """BestFit (ATC'23 §6.1): the node left with the least free CPU and GPU after placement,
    weighted 1/2 each and normalised by the largest node, then min-max normalised to 0..100
    over the candidates (plugin/best_fit_score.go with ``NormalizeScore``)."""

    name = "cpu-gpu-best-fit"

    def score_nodes(self, view: NodeView, demand: Demand, nodes: np.ndarray) -> np.ndarray:
        cpu_scale, gpu_scale = _scales(view)
        left = (view.total[nodes] - demand.total_gpu_milli) / gpu_scale * 0.5
        if cpu_scale:
            left = left + (view.cpu_left[nodes] - demand.cpu_milli) / cpu_scale * 0.5
        raw = np.floor((1.0 - left) * MAX_SCORE).astype(np.int64)
        low, high = (int(raw.min()), int(raw.max())) if len(raw) else (0, 0)
        if high == low:
            return np.zeros(len(nodes))
        return ((raw - low) * MAX_SCORE // (high - low)).astype(float)
