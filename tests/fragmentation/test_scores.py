"""FGD and the ATC'23 baselines on hand-made node states: each plugin's score and GPU choice
as the paper's rule (and its artifact's integer scores) give them."""

from __future__ import annotations

import math

import numpy as np
import pytest
from builders import cluster_of

from dlsched.cluster.cluster import Node
from dlsched.fragmentation import (
    BestFitScore,
    Demand,
    DotProductScore,
    FgdScore,
    GpuClusteringScore,
    GpuPackingScore,
    NodeView,
    RandomScore,
    TaskMix,
)
from dlsched.fragmentation.fgd import fgd_score
from dlsched.workload.job import JobSpec

WHOLE = TaskMix((Demand(0, 0, 1000, 1),), (1.0,))  # the target workload: one-GPU tasks
HALF = Demand(2000, 0, 500, 1)


def _view(*rows: list[int], cpus: int = 32) -> NodeView:
    """Nodes of 2 V100 with the given milli-GPUs left and 32 CPUs each."""
    view = NodeView.empty(cluster_of(*(Node(f"n{i}", "V100", 2, cpus=cpus, memory_gb=64)
                                       for i in range(len(rows)))))
    view.free[:] = np.array(rows)
    view.refresh()
    return view


def test_fgd_score_is_the_drop_in_fragmentation_through_a_sigmoid() -> None:
    assert fgd_score(np.array([0.0]))[0] == 50
    assert fgd_score(np.array([-500.0]))[0] == math.floor(100 / (1 + math.exp(-0.5)))  # 62
    assert fgd_score(np.array([500.0]))[0] == math.floor(100 / (1 + math.exp(0.5)))    # 37


def test_fgd_puts_a_share_where_it_fills_a_fragment() -> None:
    # Node 0 idle: the share would break a whole GPU (fragmentation +500: score 37).
    # Node 1 has 600 left on GPU 1, a fragment for one-GPU tasks: filling it there removes
    # 500 of it (score 62); on GPU 0 it would break the whole GPU (+500).
    view = _view([1000, 1000], [1000, 600])
    fgd = FgdScore(WHOLE)
    assert fgd.score_nodes(view, HALF, np.array([0, 1])).tolist() == [37.0, 62.0]
    assert fgd.pick(view, HALF, 1) == [1]


def test_fgd_cache_follows_changes_of_the_view() -> None:
    view, fgd = _view([1000, 1000], [1000, 600]), FgdScore(WHOLE)
    fgd.score_nodes(view, HALF, np.array([0, 1]))
    view.take(1, [1], HALF)  # node 1: [1000, 100]; its fragment shrank to 100
    view.take(1, [0], Demand(0, 0, 1000, 1))  # [0, 100]: the share no longer fits there
    fresh = FgdScore(WHOLE).score_nodes(view, HALF, np.array([0]))
    assert fgd.score_nodes(view, HALF, np.array([0])).tolist() == fresh.tolist() == [37.0]


@pytest.mark.parametrize("rows, expected", [
    # idle node: max(33 - idle GPUs, idle); a whole GPU on a used node: 50 - 1; a share on a
    # GPU with 600 left: 100 - 60 // 10
    pytest.param([[1000, 1000], [1000, 0], [600, 0]], [31.0, 49.0, 94.0], id="three-bands"),
])
def test_gpu_packing_bands(rows: list[list[int]], expected: list[float]) -> None:
    assert GpuPackingScore().score_nodes(_view(*rows), HALF, np.arange(len(rows))).tolist() \
        == expected


def test_gpu_clustering_prefers_nodes_of_the_same_kind() -> None:
    view = _view([1000, 1000], [1000, 500], [1000, 500], [1000, 0])
    view.add_tag(1, "share")
    view.add_tag(2, "share")
    view.add_tag(2, "1-gpu")
    view.add_tag(3, "1-gpu")
    # within a band: 25 * (8000 - free) // 8000 with the largest node's 2 GPUs -> 2000 here
    scores = GpuClusteringScore().score_nodes(view, HALF, np.arange(4)).tolist()
    assert scores == [25.0 + 0, 75.0 + 6, 50.0 + 6, 0.0 + 12]


def test_best_fit_and_dot_product() -> None:
    view = _view([1000, 1000], [1000, 0])
    nodes = np.arange(2)
    # BestFit: (1 - (cpu left/32000 + gpu left/2000) / 2) * 100 -> 15 and 40, min-max 0..100
    assert BestFitScore().score_nodes(view, HALF, nodes).tolist() == [0.0, 100.0]
    # DotProd: 100 (1 - (32000*2000/32000^2 + 2000*500/2000^2)/2) and with 1000 GPU left
    assert DotProductScore().score_nodes(view, HALF, nodes).tolist() == [
        math.floor(100 * (1 - (2000 / 32000 + 0.25) / 2)),
        math.floor(100 * (1 - (2000 / 32000 + 0.125) / 2))]


def test_random_is_seeded() -> None:
    view = _view([1000, 1000], [1000, 0], [500, 500])
    first = RandomScore(7).score_nodes(view, HALF, np.arange(3))
    assert first.tolist() == RandomScore(7).score_nodes(view, HALF, np.arange(3)).tolist()


@pytest.mark.parametrize("placement, gpu", [("fgd", 1), ("gpu-packing", 0)])
def test_as_a_scheduler_placement(placement: str, gpu: int) -> None:
    # GPU 0 holds a 0.4 share. FGD, learning the workload from the jobs it has seen (shares of
    # 0.4 and 0.5), keeps GPU 0's 0.6 (usable by both) and opens GPU 1 of the same node
    # (a tie with node b, to the lowest index); GpuPacking fills GPU 0 (the fullest that fits).
    from builders import simulator

    cluster = cluster_of(Node("a", "V100", 2, cpus=16), Node("b", "V100", 2, cpus=16))
    jobs = [JobSpec("s1", 0, 1, 100, gpu_share=0.4), JobSpec("s2", 1, 1, 100, gpu_share=0.5)]
    sim = simulator("fifo", cluster, jobs, placement=placement)
    sim.run()
    assert sim.core.jobs["s1"].allocation == (0,)
    assert sim.core.jobs["s2"].allocation == (gpu,)
