"""Counts in messages read as English."""

from __future__ import annotations

from dlsched.cluster.cluster import Cluster, Node
from dlsched.wording import count_of


def test_one_is_singular_and_every_other_count_plural() -> None:
    assert [count_of(n, "node") for n in (0, 1, 2)] == ["0 nodes", "1 node", "2 nodes"]
    assert count_of(1.0, "GPU") == "1 GPU" and count_of(0.5, "GPU") == "0.5 GPUs"
    assert count_of(3, "query", "queries") == "3 queries"


def test_a_one_node_cluster_is_described_in_the_singular() -> None:
    assert Cluster("solo", (Node("n0", "V100", 1),)).describe() == "solo: 1 node, 1 GPU (1 V100)"
