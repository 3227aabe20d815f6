"""Built-in clusters: sizes checked by hand against their sources, and name-or-path resolution."""

from __future__ import annotations

import csv
from collections import Counter
from importlib import resources
from pathlib import Path

import pytest
from shared_data import shared

from dlsched.cluster import BUILTIN_CLUSTERS, dump_cluster_yaml, resolve_cluster
from dlsched.errors import ConfigError

ALIBABA_NODES = "traces/alibaba-gpu-2023/openb_node_list_all_node.csv"

# name, nodes, GPUs by type; totals are summed from the sources in docs/clusters.md.
SIZES = [
    ("philly", 352, {"P100": 2816}),
    ("philly-shared-512", 64, {"P100": 512}),
    ("alibaba-2023", 1523, {"A10": 2, "G2": 4392, "G3": 312, "P100": 265, "T4": 842,
                            "V100M16": 195, "V100M32": 204}),
    ("alibaba-pai-2020", 1897, {"MISC": 2240, "P100": 1596, "T4": 994, "V100": 832,
                                "V100M32": 1080}),
    ("gavel-108", 27, {"K80": 36, "P100": 36, "V100": 36}),
    ("pollux-64", 16, {"T4": 64}),
    ("tiresias-128", 32, {"P100": 128}),
    ("elasticflow-128", 16, {"A100": 128}),
    ("sia-64", 11, {"A100": 16, "RTX2080Ti": 24, "T4": 24}),
    ("tiny-4", 1, {"V100": 4}),
    ("small-16", 2, {"V100": 16}),
    ("megatron-selene", 384, {"A100-80G": 3072}),
    ("llama3-h100", 2048, {"H100": 16384}),
]


@pytest.mark.parametrize(("name", "nodes", "by_type"), SIZES, ids=[s[0] for s in SIZES])
def test_builtin_sizes(name: str, nodes: int, by_type: dict[str, int]) -> None:
    cluster = resolve_cluster(name)
    assert cluster.name == name
    assert cluster.num_nodes == nodes
    assert cluster.gpus_by_type() == by_type
    assert cluster.num_gpus == sum(by_type.values())


def test_every_builtin_is_tested() -> None:
    assert set(BUILTIN_CLUSTERS) == {s[0] for s in SIZES}


def test_builtins_are_cached() -> None:
    assert resolve_cluster("pollux-64") is resolve_cluster("pollux-64")


PHILLY_VCS = {"6214e9": 64, "7f04ca": 32, "11cb48": 16, "b436b2": 64, "ee9e8c": 64,
              "e13805": 16, "6c71a0": 32, "2869ce": 16, "ed69ec": 8, "103959": 8, "0e4a51": 32}


def test_philly_pools_are_the_virtual_clusters() -> None:
    cluster = resolve_cluster("philly")
    assert Counter(n.pool for n in cluster.nodes) == PHILLY_VCS
    assert all(n.num_gpus == 8 and n.nvlink_domain == 0 for n in cluster.nodes)


def test_philly_racks_hold_eight_nodes_of_one_vc() -> None:
    nodes = resolve_cluster("philly").nodes
    racks = Counter(n.rack for n in nodes)
    assert len(racks) == 352 // 8 and set(racks.values()) == {8}
    assert len({(n.rack, n.pool) for n in nodes}) == len(racks)


def test_alibaba_has_cpu_only_nodes_and_shape_names() -> None:
    cluster = resolve_cluster("alibaba-2023")
    assert sum(1 for n in cluster.nodes if n.num_gpus == 0) == 310
    assert cluster.nodes[0].name == "v100m16x1-8c32g-00"
    g2 = [n for n in cluster.nodes if n.gpu_type == "G2"]
    assert len(g2) == 549 and g2[0].name == "g2x8-96c384g-000"
    assert (g2[0].cpus, g2[0].memory_gb, g2[0].num_gpus) == (96, 384, 8)


@pytest.mark.data
def test_alibaba_shapes_match_the_original_node_list() -> None:
    with open(shared(ALIBABA_NODES), newline="") as f:
        original = Counter((r["cpu_milli"], r["memory_mib"], r["gpu"], r["model"])
                           for r in csv.DictReader(f))
    bundled = resources.files("dlsched.data").joinpath("clusters/alibaba-2023-node-shapes.csv")
    with bundled.open(newline="") as f:
        shapes = {(r["cpu_milli"], r["memory_mib"], r["gpu"], r["model"]): int(r["nodes"])
                  for r in csv.DictReader(f)}
    assert shapes == original


PAI_MACHINES = "clusters/alibaba-pai-2020/pai_machine_spec.csv"


def test_pai_has_cpu_only_machines_and_shape_names() -> None:
    cluster = resolve_cluster("alibaba-pai-2020")
    assert sum(1 for n in cluster.nodes if n.num_gpus == 0) == 83
    p100 = [n for n in cluster.nodes if n.gpu_type == "P100"]
    assert len(p100) == 798 and p100[0].name == "p100x2-64c512g-000"
    assert (p100[0].cpus, p100[0].memory_gb, p100[0].num_gpus) == (64, 512, 2)


@pytest.mark.data
def test_pai_shapes_match_the_original_machine_list() -> None:
    with open(shared(PAI_MACHINES), newline="") as f:  # no header: machine, type, cpu, mem, gpu
        original = Counter(tuple(r[1:5]) for r in csv.reader(f))
    bundled = resources.files("dlsched.data").joinpath("clusters/alibaba-pai-2020-node-shapes.csv")
    with bundled.open(newline="") as f:
        shapes = {(r["gpu_type"], r["cap_cpu"], r["cap_mem"], r["cap_gpu"]): int(r["nodes"])
                  for r in csv.DictReader(f)}
    assert shapes == original


def test_sia_dgx_nodes_have_nvlink() -> None:
    nodes = resolve_cluster("sia-64").nodes
    assert [n.name for n in nodes if n.nvlink_domain == 8] == ["dgx-0", "dgx-1"]


@pytest.mark.parametrize("name", ["tiny-4", "small-16", "gavel-108", "sia-64"])
def test_builtins_round_trip_through_yaml(name: str, tmp_path: Path) -> None:
    path = tmp_path / f"{name}.yaml"
    path.write_text(dump_cluster_yaml(resolve_cluster(name)))
    assert resolve_cluster(str(path)) == resolve_cluster(name)


def test_resolve_a_yaml_path(tmp_path: Path) -> None:
    path = tmp_path / "mine.yml"
    path.write_text("name: mine\nnode_groups:\n  - {count: 3, gpu_type: H100, gpus: 8}\n")
    cluster = resolve_cluster(path)
    assert (cluster.name, cluster.num_nodes, cluster.num_gpus) == ("mine", 3, 24)


def test_unknown_name_lists_the_builtins() -> None:
    with pytest.raises(ConfigError, match="unknown cluster 'phily'") as caught:
        resolve_cluster("phily")
    assert all(name in str(caught.value) for name in BUILTIN_CLUSTERS)
