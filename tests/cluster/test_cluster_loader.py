"""Cluster YAML: schema, link levels, round trips and one test per kind of mistake."""

from __future__ import annotations

from pathlib import Path

import pytest

from dlsched.cluster import (
    Cluster,
    LinkLevel,
    Node,
    NodeGroup,
    dump_cluster_yaml,
    load_cluster_yaml,
    parse_cluster_yaml,
)
from dlsched.errors import InputError

EXAMPLE = """\
name: example
topology: {nvlink_gbps: 300, network_gbps: 5}
node_groups:
  - {count: 4, prefix: dgx, gpu_type: V100, gpus: 8, nvlink_domain: 4, nodes_per_rack: 2}
nodes:
  - {name: big, gpu_type: A100, gpus: 8, nvlink_domain: 8, rack: r9, pool: research}
  - {name: login, gpus: 0, cpus: 16}
"""


@pytest.fixture(scope="module")
def example() -> Cluster:
    return parse_cluster_yaml(EXAMPLE, "example.yaml")


def test_example_nodes(example: Cluster) -> None:
    assert [n.name for n in example.nodes] == ["dgx-0", "dgx-1", "dgx-2", "dgx-3", "big", "login"]
    assert [n.rack for n in example.nodes] == ["dgx-rack-0", "dgx-rack-0", "dgx-rack-1",
                                              "dgx-rack-1", "r9", "rack-0"]
    assert example.num_gpus == 40
    assert example.gpus_by_type() == {"A100": 8, "V100": 32}
    assert example.pools == {"research"}
    assert example.nodes[-1] == Node("login", "", 0, cpus=16)


def test_example_topology(example: Cluster) -> None:
    assert example.topology.bandwidth(LinkLevel.NVLINK) == 300
    assert example.topology.bandwidth(LinkLevel.NETWORK) == 5
    assert example.topology.bandwidth(LinkLevel.PCIE) == 16  # the default


@pytest.mark.parametrize(("a", "b", "level"), [
    (0, 0, LinkLevel.SAME_GPU),
    (0, 3, LinkLevel.NVLINK),      # dgx-0, first NVLink domain of 4
    (3, 4, LinkLevel.PCIE),        # dgx-0, across its two domains
    (0, 8, LinkLevel.RACK),        # dgx-0 and dgx-1 share dgx-rack-0
    (0, 16, LinkLevel.NETWORK),    # dgx-0 and dgx-2 are in different racks
    (32, 39, LinkLevel.NVLINK),    # big: one domain of 8
    (31, 32, LinkLevel.NETWORK),   # dgx-3 and big
], ids=["same-gpu", "nvlink", "pcie", "rack", "network", "nvlink-8", "across-entries"])
def test_link_levels(example: Cluster, a: int, b: int, level: LinkLevel) -> None:
    assert example.link(a, b) == level
    assert example.link(b, a) == level


def test_group_names_are_zero_padded_and_prefix_defaults_to_type() -> None:
    nodes = NodeGroup(11, "T4", 4).expand() + NodeGroup(2, "", 0).expand()
    assert [n.name for n in nodes][:2] == ["t4-00", "t4-01"]
    assert [n.name for n in nodes][-3:] == ["t4-10", "cpu-0", "cpu-1"]


def test_round_trip_example(example: Cluster) -> None:
    text = dump_cluster_yaml(example)
    assert parse_cluster_yaml(text) == example
    assert "node_groups:" in text and "- {count: 4, gpu_type: V100" in text


def test_round_trip_keeps_node_order_with_explicit_nodes_first() -> None:
    nodes = (Node("odd", "K80", 2, rack="x"), *NodeGroup(3, "T4", 4, pool="p").expand())
    cluster = Cluster("mixed", nodes)
    text = dump_cluster_yaml(cluster)
    assert "node_groups" not in text
    assert parse_cluster_yaml(text) == cluster


def test_round_trip_of_irregular_names_and_racks() -> None:
    nodes = (*NodeGroup(3, "V100", 8, prefix="a-b", rack="r1").expand(),
             Node("a-b-3", "V100", 8, rack="r2"), Node("solo", "A100", 8, 1.5, 2.25))
    cluster = Cluster("irregular", nodes)
    assert parse_cluster_yaml(dump_cluster_yaml(cluster)) == cluster


def test_load_from_file(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(EXAMPLE)
    assert load_cluster_yaml(path) == parse_cluster_yaml(EXAMPLE)


def test_missing_file_names_it(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="nope.yaml: cannot read"):
        load_cluster_yaml(tmp_path / "nope.yaml")


GROUP = "name: c\nnode_groups:\n  - {count: 2, gpu_type: T4, gpus: 4}\n"
BAD = [
    ("empty", "", 1, None, "the file is empty"),
    ("not-yaml", "name: [", 1, "name", "not valid YAML"),
    ("not-a-mapping", "- 1\n", 1, None, "must be a mapping"),
    ("no-name", "nodes: []\n", 1, None, "missing required key 'name'"),
    ("no-nodes", "name: c\n", 1, None, "has no nodes"),
    ("unknown-top-key", "name: c\nnode_group: []\n", 2, "node_group", "did you mean 'node_groups'"),
    ("duplicate-key", "name: c\nname: d\n", 2, "name", "duplicate key"),
    ("nodes-not-list", "name: c\nnodes: {a: 1}\n", 2, "nodes", "must be a list"),
    ("topology-unknown", "name: c\ntopology: {nvlink: 1}\n", 2, "topology.nvlink", "unknown key"),
    ("topology-zero", "name: c\ntopology: {pcie_gbps: 0}\n", 2, "topology.pcie_gbps", "> 0"),
    ("negative-count", GROUP + "  - {count: -1, gpu_type: T4, gpus: 4, prefix: b}\n",
     4, "node_groups[1].count", ">= 0"),
    ("float-count", GROUP + "  - {count: 2.5, gpu_type: T4, gpus: 4, prefix: b}\n",
     4, "node_groups[1].count", "must be an integer"),
    ("bool-gpus", GROUP + "  - {count: 1, gpu_type: T4, gpus: yes, prefix: b}\n",
     4, "node_groups[1].gpus", "must be an integer"),
    ("negative-memory", GROUP + "  - {count: 1, gpus: 0, memory_gb: -1}\n",
     4, "node_groups[1].memory_gb", ">= 0"),
    ("unknown-group-key", GROUP + "  - {count: 1, gpu_type: T4, gpus: 4, gpu: 1}\n",
     4, "node_groups[1].gpu", "did you mean 'gpus'"),
    ("group-no-gpus", "name: c\nnode_groups:\n  - count: 1\n    gpu_type: T4\n",
     3, "node_groups[0]", "missing required key 'gpus'"),
    ("group-no-gpu-type", "name: c\nnode_groups:\n  - {count: 1, gpus: 4}\n",
     3, "node_groups[0]", "'gpu_type'"),
    ("bad-nvlink-domain", "name: c\nnode_groups:\n  - {count: 1, gpu_type: T4, gpus: 6, "
     "nvlink_domain: 4}\n", 3, "node_groups[0].nvlink_domain", "does not divide"),
    ("rack-and-per-rack", "name: c\nnode_groups:\n  - {count: 1, gpu_type: T4, gpus: 4, "
     "rack: r, nodes_per_rack: 2}\n", 3, "node_groups[0]", "not both"),
    ("zero-per-rack", "name: c\nnode_groups:\n  - {count: 1, gpu_type: T4, gpus: 4, "
     "nodes_per_rack: 0}\n", 3, "node_groups[0].nodes_per_rack", ">= 1"),
    ("group-name-clash", GROUP + "  - {count: 1, gpu_type: T4, gpus: 2}\n",
     4, "node_groups[1]", "'t4-0' is used twice, by node_groups[0] and node_groups[1] (groups: "
     "give each a distinct 'prefix')"),
    ("node-name-clash", GROUP + "nodes:\n  - {name: t4-1, gpus: 0}\n", 5, "nodes[0]",
     "'t4-1' is used twice, by node_groups[0] and nodes[0] (rename nodes[0] or give "
     "node_groups[0] a 'prefix')"),
    # two explicit nodes were told "(groups: give each a distinct 'prefix')"
    ("two-nodes-one-name", "name: c\nnodes:\n  - {name: a, gpus: 0}\n  - {name: a, gpus: 0}\n",
     4, "nodes[1]", "'a' is used twice, by nodes[0] and nodes[1] (each node needs a name of its "
     "own)"),
    ("node-no-name", "name: c\nnodes:\n  - {gpus: 0}\n", 3, "nodes[0]", "'name'"),
    # a group's key under nodes (and back) said only "unknown key 'count'; known keys: ..."
    ("count-in-nodes", "name: c\nnodes:\n  - {name: n, count: 2, gpu_type: T4, gpus: 4}\n",
     3, "nodes[0].count", "('count' is a key of node_groups: move the entry there)"),
    ("name-in-groups", "name: c\nnode_groups:\n  - {name: n, count: 2, gpu_type: T4, gpus: 4}"
     "\n", 3, "node_groups[0].name", "give 'prefix')"),
    ("node-empty-rack", "name: c\nnodes:\n  - {name: a, gpus: 0, rack: ''}\n",
     3, "nodes[0].rack", "non-empty string"),
    ("node-not-mapping", "name: c\nnodes:\n  - a\n", 3, "nodes[0]", "must be a mapping"),
    # YAML 1.1 reads 1e3 as text: "must be a number, got '1e3'" and nothing more
    ("exponent-as-text", GROUP + "  - {count: 1, gpus: 0, memory_gb: 1e3}\n", 4,
     "node_groups[1].memory_gb", "got '1e3' (YAML reads 1e3 as text: write the number in full, "
     "or with a point and a signed exponent, 1.0e+3)"),
    ("integer-exponent-as-text", GROUP + "  - {count: 2e1, gpus: 0}\n", 4,
     "node_groups[1].count", "got '2e1' (YAML reads 2e1 as text: write the number in full)"),
    ("quoted-number", GROUP + "  - {count: 1, gpus: 0, cpus: '64'}\n", 4,
     "node_groups[1].cpus", "got '64' (a quoted number is text: drop the quotes)"),
    # 100,000 nodes of 1,024 GPUs passed both limits and ran the core out of memory
    ("too-many-gpus-in-groups", "name: c\nnode_groups:\n  - {count: 100000, gpu_type: T4, "
     "gpus: 1024}\n", 3, "node_groups[0].count",
     "the cluster would have more than 1,048,576 GPUs (102,400,000 so far)"),
    ("too-many-gpus-with-nodes", "name: c\nnode_groups:\n  - {count: 1024, gpu_type: T4, "
     "gpus: 1024}\nnodes:\n  - {name: a, gpu_type: T4, gpus: 1}\n", 5, "nodes[0].gpus",
     "more than 1,048,576 GPUs (1,048,577 so far)"),
    ("nan-memory", GROUP + "  - {count: 1, gpus: 0, memory_gb: .nan}\n", 4,
     "node_groups[1].memory_gb", "must be a finite number, got nan"),  # was 'must be >= 0'
]


@pytest.mark.parametrize(("text", "line", "field", "message"), [b[1:] for b in BAD],
                         ids=[b[0] for b in BAD])
def test_bad_yaml_names_file_line_and_field(text: str, line: int | None, field: str | None,
                                            message: str) -> None:
    with pytest.raises(InputError, match="bad.yaml") as caught:
        parse_cluster_yaml(text, "bad.yaml")
    assert (caught.value.location.line, caught.value.location.field) == (line, field)
    assert message in caught.value.message


def test_numeric_pool_names_are_strings() -> None:
    cluster = parse_cluster_yaml("name: c\nnodes:\n  - {name: a, gpus: 0, pool: 103959}\n")
    assert cluster.pools == {"103959"}


def test_the_example_in_the_docs_loads() -> None:
    docs = Path(__file__).resolve().parents[2] / "docs" / "clusters.md"
    text = docs.read_text().split("```yaml\n", 1)[1].split("```", 1)[0]
    cluster = parse_cluster_yaml(text, str(docs))
    assert cluster.num_nodes == 16 + 2 + 4 + 1
    assert [n.name for n in cluster.nodes[18:22]] == ["cpu-0", "cpu-1", "cpu-2", "cpu-3"]
    assert cluster.nodes[8].rack == "t4-rack-1"


# A measured host's memory (bytes / 2**30) is written to 0.01 GB; whole and YAML-read values
# are written as they were, so such a cluster still loads back equal.
@pytest.mark.parametrize(("memory", "gpu_memory", "written", "loaded"), [
    (23.540279388427734, 79.15, "memory_gb: 23.54", (23.54, 79.15)),
    (512.0, 80.0, "memory_gb: 512,", (512.0, 80.0)),
    (2.25, 15.999999, "gpu_memory_gb: 16}", (2.25, 16.0)),
    (0.001, 0.0, "memory_gb: 0.001", (0.001, 0.0)),
], ids=["measured", "whole", "gpu-memory", "tiny-kept"])
def test_memory_is_written_to_hundredths_of_a_gb(memory: float, gpu_memory: float,
                                                  written: str, loaded: tuple) -> None:
    cluster = Cluster("host", (Node("solo", "A100", 8, 64, memory, gpu_memory_gb=gpu_memory),))
    text = dump_cluster_yaml(cluster)
    assert written in text, text
    node = parse_cluster_yaml(text).nodes[0]
    assert (node.memory_gb, node.gpu_memory_gb) == loaded
