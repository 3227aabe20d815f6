"""Clusters from the public traces' node-list CSVs (``--cluster FILE.csv``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from dlsched.cluster.builtin import resolve_cluster
from dlsched.errors import InputError


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_openb_node_list(tmp_path: Path) -> None:
    path = _write(tmp_path, "openb_node_list.csv", "sn,cpu_milli,memory_mib,gpu,model\n"
                  "openb-node-0000,64000,262144,2,P100\nopenb-node-0001,96000,786432,8,G2\n"
                  "openb-node-0002,32000,131072,0,\n")
    cluster = resolve_cluster(str(path))
    assert cluster.name == "openb_node_list" and cluster.num_gpus == 10
    first, _, cpu = cluster.nodes
    assert (first.name, first.gpu_type, first.cpus, first.memory_gb) == (
        "openb-node-0000", "P100", 64.0, 256.0)
    assert (cpu.num_gpus, cpu.gpu_type) == (0, "")


def test_pai_machine_spec_as_released_without_a_header(tmp_path: Path) -> None:
    path = _write(tmp_path, "pai_machine_spec.csv",
                  "7399a758eb02,CPU,96,512,0\nab12,V100M32,96,384,8\ncd34,MISC,96,512,8\n")
    cluster = resolve_cluster(str(path))
    assert cluster.gpus_by_type() == {"V100M32": 8, "MISC": 8}
    assert cluster.nodes[1].memory_gb == 384 and cluster.nodes[0].gpu_type == ""


def test_spot_node_info_maps_product_names(tmp_path: Path) -> None:
    path = _write(tmp_path, "node_info_df.csv", "gpu_model,gpu_capacity_num,cpu_num,node_name\n"
                  "GPU-series-1,4,192,0\nA100-SXM4-80GB,8,128,3\n")
    cluster = resolve_cluster(str(path))
    assert [(n.name, n.gpu_type, n.num_gpus) for n in cluster.nodes] == [
        ("node-0", "GPU-series-1", 4), ("node-3", "A100-80G", 8)]


@pytest.mark.parametrize("text, where", [
    pytest.param("sn,cpu_milli,memory_mib,gpu,model\nn0,64000,262144,two,P100\n",
                 ":2:gpu", id="bad-number"),
    pytest.param("sn,cpu_milli,memory_mib,gpu,model\nn0,64000,262144,2,\n", ":2:model",
                 id="gpus-without-a-model"),
    pytest.param("sn,cpu_milli,memory_mib,gpu,model\nn0,64000,262144,2,P100\n"
                 "n0,64000,262144,2,P100\n", ":3: node 'n0' is listed twice",
                 id="repeated-node"),
    pytest.param("sn,cpu_milli,memory_mib,gpu,model\nn0,64000,262144,2\n", ":2: expected 5",
                 id="short-row"),
    pytest.param("name,gpus\nn0,8\n", ":1: not a node list", id="unknown-header"),
    pytest.param("sn,cpu_milli,memory_mib,gpu,model\nn0,64000,262144,0,\n", ": no GPU node",
                 id="no-gpu-node"),
    pytest.param("a,CPU,96,512,0\nb,V100,96,384,x\n", ":2:cap_gpu", id="pai-bad-gpus"),
    # 10^8 GPUs on a node ran the core out of memory (a cluster YAML stops at 1,024 a node)
    pytest.param("sn,cpu_milli,memory_mib,gpu,model\nn0,64000,262144,100000000,P100\n",
                 ":2:gpu: 100,000,000 GPUs on one node; the limit is 1,024", id="huge-node"),
    pytest.param("sn,cpu_milli,memory_mib,gpu,model\n"
                 + "".join(f"n{i},1,1,1024,P100\n" for i in range(1025)),
                 ":1026: more than 100,000 nodes or 1,048,576 GPUs in all", id="too-many-gpus"),
])
def test_bad_node_lists_name_the_line_and_field(tmp_path: Path, text: str, where: str) -> None:
    path = _write(tmp_path, "nodes.csv", text)
    with pytest.raises(InputError) as caught:
        resolve_cluster(str(path))
    assert f"{path}{where}" in str(caught.value)


@pytest.mark.data
def test_the_released_lists_are_the_built_in_clusters(shared_data: Path) -> None:
    openb = resolve_cluster(str(shared_data / "traces/alibaba-gpu-2023/"
                                              "openb_node_list_all_node.csv"))
    assert openb.gpus_by_type() == resolve_cluster("alibaba-2023").gpus_by_type()
    assert openb.num_nodes == 1523
    pai = resolve_cluster(str(shared_data / "clusters/alibaba-pai-2020/pai_machine_spec.csv"))
    assert pai.gpus_by_type() == resolve_cluster("alibaba-pai-2020").gpus_by_type()
    spot = resolve_cluster(str(shared_data / "clusters/alibaba-spot-2026/node_info_df.csv"))
    assert (spot.num_nodes, spot.num_gpus) == (4278, 10412)
