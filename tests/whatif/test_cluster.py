"""``dlsched history cluster``: the API's cluster view as a cluster YAML the simulator loads
with the same nodes, GPU types and GPU numbering."""

from __future__ import annotations

import pytest

pytest.importorskip("pydantic")

from dlsched.cluster.loader import parse_cluster_yaml  # noqa: E402
from dlsched.runtime.models import ClusterView, GpuView, NodeView  # noqa: E402
from dlsched.whatif.cluster import cluster_yaml  # noqa: E402


def node(name: str, gpu_type: str, gpus: int, first: int) -> NodeView:
    return NodeView(name=name, gpu_type=gpu_type,
                    gpus=[GpuView(index=i, gpu=first + i, job_id=None) for i in range(gpus)])


def test_the_view_round_trips_through_the_cluster_loader() -> None:
    view = ClusterView(name="lab", policy="fifo", gpus_total=12, gpus_allocated=0.0,
                       nodes=[node("a", "V100", 8, 0), node("b", "T4", 4, 8)])
    cluster = parse_cluster_yaml(cluster_yaml(view), "lab.yaml")
    assert [(n.name, n.gpu_type, n.num_gpus) for n in cluster.nodes] == [
        ("a", "V100", 8), ("b", "T4", 4)]
    assert cluster.num_gpus == 12
