"""The cluster model: global GPU numbering, derived index arrays, link levels, validation."""

from __future__ import annotations

import numpy as np
import pytest
from builders import cluster_of, make_cluster

from dlsched.cluster.cluster import Node
from dlsched.cluster.gpu_types import gpu_type
from dlsched.cluster.topology import LinkLevel, Topology

# n0: 2 K80 (rack a), n1: 4 V100 in NVLink pairs (rack a), n2: a CPU-only node, n3: 2 V100
# (rack b). GPUs are numbered node by node: n0 0-1, n1 2-5, n3 6-7.
MIXED = cluster_of(Node("n0", "K80", 2, rack="a"), Node("n1", "V100", 4, rack="a", nvlink_domain=2),
                   Node("n2", "CPU", 0, rack="a"), Node("n3", "V100", 2, rack="b"), name="mixed")


def test_index_arrays() -> None:
    assert MIXED.num_gpus == 8 and MIXED.num_nodes == 4
    assert MIXED.gpu_node.tolist() == [0, 0, 1, 1, 1, 1, 3, 3]
    assert MIXED.node_first_gpu.tolist() == [0, 2, 6, 6]
    assert MIXED.node_gpus.tolist() == [2, 4, 0, 2]
    assert MIXED.type_names == ("K80", "V100")  # nodes without GPUs add no type
    assert MIXED.node_type.tolist() == [0, 1, -1, 1]
    assert MIXED.node_rack.tolist() == [0, 0, 0, 1]
    assert MIXED.gpus_by_type() == {"K80": 2, "V100": 6}
    assert MIXED.describe() == "mixed: 4 nodes, 8 GPUs (2 K80, 6 V100)"


def test_gpu_node_list_is_gpu_node_as_python_ints() -> None:
    # read per GPU in the allocation cycle's loops (``Assignment.keeps``): no numpy scalars
    assert MIXED.gpu_node_list == MIXED.gpu_node.tolist()
    assert all(type(node) is int for node in MIXED.gpu_node_list)


def test_index_arrays_are_read_only() -> None:
    with pytest.raises(ValueError):
        MIXED.gpu_node[0] = 3


LINKS = [
    ("same-gpu", 3, 3, LinkLevel.SAME_GPU),
    ("nvlink-pair", 2, 3, LinkLevel.NVLINK),
    ("across-nvlink-pairs", 3, 4, LinkLevel.PCIE),
    ("pcie-only-node", 0, 1, LinkLevel.PCIE),
    ("same-rack", 1, 2, LinkLevel.RACK),
    ("across-racks", 5, 6, LinkLevel.NETWORK),
]


@pytest.mark.parametrize(("a", "b", "level"), [c[1:] for c in LINKS], ids=[c[0] for c in LINKS])
def test_link_levels(a: int, b: int, level: LinkLevel) -> None:
    assert MIXED.link(a, b) is level
    assert MIXED.link(b, a) is level


def test_bandwidth_falls_with_distance() -> None:
    topology = Topology()
    speeds = [topology.bandwidth(level) for level in LinkLevel]
    assert speeds == sorted(speeds, reverse=True)
    assert topology.bandwidth(LinkLevel.SAME_GPU) == float("inf")


def test_gpu_types() -> None:
    assert MIXED.gpu_type_of(0).name == "K80" and MIXED.gpu_type_of(7).name == "V100"
    assert gpu_type("V100").relative_speed == 1.0
    unknown = gpu_type("Z9000")
    assert (unknown.name, unknown.relative_speed) == ("Z9000", 1.0)


def test_pools() -> None:
    assert make_cluster(nodes=3, pools=["a", "b", "a"]).pools == frozenset({"a", "b"})
    assert make_cluster(nodes=2).pools == frozenset()


def test_racks_from_builder() -> None:
    assert make_cluster(nodes=4, racks=2).node_rack.tolist() == [0, 0, 1, 1]


def test_duplicate_node_names_are_refused() -> None:
    with pytest.raises(ValueError, match="node names are not unique"):
        cluster_of(Node("n", "V100", 1), Node("n", "V100", 1))


def test_negative_gpu_count_is_refused() -> None:
    with pytest.raises(ValueError, match="num_gpus must be >= 0"):
        Node("n", "V100", -1)


def test_empty_cluster() -> None:
    empty = cluster_of()
    assert empty.num_gpus == 0 and empty.num_nodes == 0
    assert np.asarray(empty.gpu_node).size == 0
