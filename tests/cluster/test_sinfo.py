"""Clusters from Slurm's ``sinfo``/``scontrol`` output (``--cluster FILE``, told from its
content: ``cluster/sinfo.py``), with host lists and GRES strings (``cluster/hostlist.py``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dlsched.cluster.builtin import resolve_cluster
from dlsched.cluster.hostlist import expand_hostlist, gpu_kinds_of_gres, gpus_of_gres
from dlsched.cluster.loader import dump_cluster_yaml, parse_cluster_yaml
from dlsched.cluster.sinfo import looks_like_sinfo
from dlsched.errors import ClusterWarning, InputError

# ``sinfo -N -o "%N %c %m %G %P"`` on a small cluster: gpu01 in two partitions (gpu is the
# default: starred), a CPU node, an untyped GRES and an autodetected (NVML) type name.
SINFO_N = """NODELIST CPUS MEMORY GRES PARTITION
cpu01 32 128000 (null) cpu
gpu01 64 512000 gpu:a100:8(S:0-1) gpu*
gpu01 64 512000 gpu:a100:8(S:0-1) debug
gpu02 64 512000 gpu:a100:8(S:0-1) gpu*
old01 16 64000 gpu:4 legacy
nv01 128 1024000 gpu:nvidia_a100-sxm4-80gb:8,nic:1 big
"""


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_sinfo_per_node_lines(tmp_path: Path) -> None:
    cluster = resolve_cluster(str(_write(tmp_path, "mycluster.sinfo", SINFO_N)))
    assert cluster.name == "mycluster"
    assert [n.name for n in cluster.nodes] == ["cpu01", "gpu01", "gpu02", "old01", "nv01"]
    cpu, gpu01, _, old, nv = cluster.nodes
    assert (cpu.num_gpus, cpu.gpu_type, cpu.cpus, cpu.pool) == (0, "", 32.0, "cpu")
    assert (gpu01.gpu_type, gpu01.num_gpus, gpu01.cpus, gpu01.memory_gb, gpu01.pool) == (
        "A100", 8, 64.0, 512000 / 1024, "gpu")  # first partition, star dropped
    assert (old.gpu_type, old.num_gpus) == ("generic", 4)
    assert (nv.gpu_type, nv.num_gpus) == ("A100-80G", 8)
    assert cluster.gpus_by_type() == {"A100": 16, "A100-80G": 8, "generic": 4}
    # a cluster YAML written from it loads back equal (``history cluster``'s contract)
    assert parse_cluster_yaml(dump_cluster_yaml(cluster)) == cluster


def test_sinfo_grouped_lines_with_pipes_and_host_lists(tmp_path: Path) -> None:
    text = ("HOSTNAMES|CPUS|MEMORY|GRES|PARTITION|STATE\n"
            "dgx[01-03,07]|256|2048000|gpu:h100:8|train*|idle\n"
            "r[1-2]n[1-2]|48|192000|gpu:t4:4|infer|mix\n")
    cluster = resolve_cluster(str(_write(tmp_path, "c.txt", text)))
    assert [n.name for n in cluster.nodes] == ["dgx01", "dgx02", "dgx03", "dgx07",
                                               "r1n1", "r1n2", "r2n1", "r2n2"]
    assert cluster.gpus_by_type() == {"H100": 32, "T4": 16}


def test_sinfo_json_modern_and_scontrol_nodes(tmp_path: Path) -> None:
    modern = {"meta": {}, "errors": [], "warnings": [], "sinfo": [
        {"nodes": {"nodes": ["gpu[01-02]"]}, "partition": {"name": "gpu"},
         "cpus": {"minimum": 64, "maximum": 64}, "gres": {"total": "gpu:a100:8"},
         "memory": {"minimum": 512000, "maximum": 512000}},
        {"nodes": {"nodes": ["gpu01"]}, "partition": {"name": "debug"},
         "cpus": {"minimum": 64, "maximum": 64}, "gres": {"total": "gpu:a100:8"},
         "memory": {"minimum": 512000, "maximum": {"set": True, "number": 512000}}}]}
    cluster = resolve_cluster(str(_write(tmp_path, "s.json", json.dumps(modern, indent=1))))
    assert [(n.name, n.num_gpus, n.cpus, n.pool) for n in cluster.nodes] == [
        ("gpu01", 8, 64.0, "gpu"), ("gpu02", 8, 64.0, "gpu")]
    nodes = {"meta": {}, "errors": [], "nodes": [
        {"name": "a1", "cpus": 32, "real_memory": 256000, "gres": "gpu:v100:4",
         "partitions": ["p1", "p2"]},
        {"name": "c1", "cpus": 8, "real_memory": 16000, "gres": "", "partitions": []}]}
    cluster = resolve_cluster(str(_write(tmp_path, "n.json", json.dumps(nodes))))
    assert [(n.name, n.gpu_type, n.num_gpus, n.pool) for n in cluster.nodes] == [
        ("a1", "V100", 4, "p1"), ("c1", "", 0, None)]


@pytest.mark.parametrize(("text", "where", "words"), [
    ("NODELIST CPUS MEMORY GRES\nn1 64 1000 gpu:a100:x\n", ":2:GRES:", "not a GPU GRES"),
    ("NODELIST CPUS MEMORY GRES\nn1 6x4 1000 gpu:2\n", ":2:CPUS:", "not a number: '6x4'"),
    ("NODELIST CPUS MEMORY GRES\nn[1-2] 64+ 1000 gpu:2\n", ":2:CPUS:", "sinfo -N"),
    ("NODELIST CPUS MEMORY GRES\nn[3-1] 64 1000 gpu:2\n", ":2:NODELIST:", "ends before"),
    ("NODELIST CPUS MEMORY GRES\nn1 64 1000\n", ":2:", "expected 4 fields"),
    ("NODELIST CPUS MEMORY GRES P\nn1 64 1 gpu:a100:4,gpu:v100:2 a\nn1 64 1 gpu:a100:6 b\n",
     ":3:", "node 'n1' is listed with other resources at "),
    ("NODELIST CPUS MEMORY GRES P\nn1 64 1 gpu:2 a\nn1 32 1 gpu:2 b\n", ":3:",
     "other resources at "),
    ("PARTITION AVAIL TIMELIMIT NODES STATE NODELIST\ngpu up infinite 2 idle n[1-2]\n",
     ":1:", "no GRES column"),
    ("NODELIST GRES\nn1 (null)\n", ":", "no node with GPUs"),
    ("NODELIST GRES\nn1 gpu:2\n" + "x" * 300 + " gpu:2\n", ":3:", "node name is 300 "),
    # 10^8 GPUs on a node, or 10 M over a host list: the core ran out of memory
    ("NODELIST GRES\nn1 gpu:a100:99999999\n", ":2:GRES:",
     "99,999,999 GPUs on node 'n1'; the limit is 1,024"),
    ("NODELIST GRES\nn[0001-9999] gpu:a100:1024\n", ":",
     "10,238,976 GPUs in all; the limit is 1,048,576"),
], ids=["bad-gres", "bad-cpus", "grouped-nodes-differ", "bad-range", "short-line",
        "two-gpu-types-then-one", "node-listed-twice-differently", "default-sinfo", "no-gpus",
        "long-name", "huge-node", "too-many-gpus"])
def test_sinfo_text_errors_name_file_line_and_field(tmp_path: Path, text: str, where: str,
                                                    words: str) -> None:
    path = _write(tmp_path, "bad.sinfo", text)
    with pytest.raises(InputError) as error:
        resolve_cluster(str(path))
    assert f"{path}{where}" in str(error.value) and words in str(error.value)


def test_sinfo_json_errors_name_the_key_and_its_line(tmp_path: Path) -> None:
    doc = {"meta": {}, "errors": [], "sinfo": [
        {"nodes": {"nodes": ["n1"]}, "gres": {"total": "gpu:a100:8"}},
        {"nodes": {"nodes": ["n2"]}, "gres": {"total": "gpu:a100:eight"}}]}
    path = _write(tmp_path, "bad.json", json.dumps(doc, indent=2))
    with pytest.raises(InputError) as error:
        resolve_cluster(str(path))
    line = next(i for i, t in enumerate(path.read_text().splitlines(), 1) if "eight" in t)
    assert str(error.value).startswith(f"{path}:{line}:sinfo[1].gres.total: not a GPU GRES")
    doc["sinfo"][1] = {"nodes": {"nodes": ["n[1-4]"]}, "cpus": {"minimum": 32, "maximum": 64}}
    path.write_text(json.dumps(doc, indent=2))
    with pytest.raises(InputError, match=r"sinfo\[1\]\.cpus\.minimum: 32 to 64"):
        resolve_cluster(str(path))


def test_a_cluster_yaml_is_not_taken_for_sinfo(tmp_path: Path) -> None:
    path = _write(tmp_path, "c.yaml", "name: c\nnodes: [{name: NODELIST, gpus: 2, "
                                      "gpu_type: V100}]\n")
    assert resolve_cluster(str(path)).num_gpus == 2
    as_json = _write(tmp_path, "c.json", '{"name": "c", "nodes": [{"name": "n", "gpus": 2, '
                                         '"gpu_type": "V100"}]}')
    assert not looks_like_sinfo(as_json) and resolve_cluster(str(as_json)).num_gpus == 2


@pytest.mark.parametrize(("hosts", "want"), [
    ("n1", ["n1"]), ("n[1-3]", ["n1", "n2", "n3"]), ("n[08-10]", ["n08", "n09", "n10"]),
    ("a[1,3],b2", ["a1", "a3", "b2"]), ("r[1-2]-n[0-1]", ["r1-n0", "r1-n1", "r2-n0", "r2-n1"]),
    ("gpu-[001-002]x", ["gpu-001x", "gpu-002x"]),
], ids=["one", "range", "padded", "lists", "two-brackets", "suffix"])
def test_host_lists(hosts: str, want: list[str]) -> None:
    assert expand_hostlist(hosts) == want


@pytest.mark.parametrize(("gres", "want"), [
    ("(null)", (0, "")), ("gpu:8", (8, "")), ("gpu:a100:8", (8, "a100")),
    ("gpu:a100:8(S:0-1)", (8, "a100")), ("gpu:a100:4(S:0),gpu:a100:4(S:1)", (8, "a100")),
    ("nic:2,gpu:t4:1(IDX:0),mps:100", (1, "t4")), ("shard:8", (0, "")),
], ids=["null", "untyped", "typed", "sockets", "same-type-twice", "others", "no-gpu"])
def test_gres(gres: str, want: tuple[int, str]) -> None:
    assert gpus_of_gres(gres) == want


@pytest.mark.parametrize(("gres", "want"), [
    ("(null)", ()), ("gpu:8", (("", 8),)), ("gpu:a100:4,gpu:v100:2", (("a100", 4), ("v100", 2))),
    ("gpu:a100:2(S:0),gpu:v100:2(S:1),gpu:a100:2(S:1)", (("a100", 4), ("v100", 2))),
    ("gpu:a100:4,gpu:2", (("a100", 4), ("", 2))),
], ids=["null", "untyped", "two-types", "per-socket", "typed-and-untyped"])
def test_gpu_kinds_of_gres(gres: str, want: tuple[tuple[str, int], ...]) -> None:
    assert gpu_kinds_of_gres(gres) == want


# A node with GPUs of two types (``%G`` ``gpu:a100:4,gpu:v100:2``) was refused; a dlsched node
# has one GPU type, so it is read as one node per type, NAME:TYPE, its CPUs and memory shared
# out by GPU count, with one warning naming the first such node's line and how many more.
MIXED_TYPES = """NODELIST CPUS MEMORY GRES PARTITION
mix01 60 614400 gpu:a100:4(S:0),gpu:v100:2(S:1) gpu*
mix01 60 614400 gpu:a100:4(S:0),gpu:v100:2(S:1) debug
mix02 60 614400 gpu:a100:4,gpu:v100:2 gpu
one01 32 256000 gpu:a100:8 gpu
"""


def test_a_node_with_two_gpu_types_is_one_node_per_type(tmp_path: Path) -> None:
    path = _write(tmp_path, "mixed.sinfo", MIXED_TYPES)
    with pytest.warns(ClusterWarning) as caught:
        cluster = resolve_cluster(str(path))
    assert [(n.name, n.gpu_type, n.num_gpus, n.cpus, n.memory_gb, n.pool)
            for n in cluster.nodes] == [
        ("mix01:a100", "A100", 4, 40.0, 400.0, "gpu"),
        ("mix01:v100", "V100", 2, 20.0, 200.0, "gpu"),
        ("mix02:a100", "A100", 4, 40.0, 400.0, "gpu"),
        ("mix02:v100", "V100", 2, 20.0, 200.0, "gpu"),
        ("one01", "A100", 8, 32.0, 256000 / 1024, "gpu")]
    assert len(caught) == 1
    text = str(caught[0].message)
    assert text.startswith(f"{path}:2:GRES: node 'mix01' has GPUs of 2 types (4 a100, 2 v100) "
                           "and 1 more such node: a dlsched node has one GPU type")
    assert parse_cluster_yaml(dump_cluster_yaml(cluster)) == cluster


def test_a_scontrol_node_with_two_gpu_types(tmp_path: Path) -> None:
    nodes = {"meta": {}, "errors": [], "nodes": [
        {"name": "m1", "cpus": 12, "real_memory": 12000, "gres": "gpu:h100:2,gpu:4",
         "partitions": ["p"]}]}
    with pytest.warns(ClusterWarning, match="m1:h100, ...") as caught:
        cluster = resolve_cluster(str(_write(tmp_path, "n.json", json.dumps(nodes, indent=1))))
    assert [(n.name, n.gpu_type, n.num_gpus, n.cpus) for n in cluster.nodes] == [
        ("m1:h100", "H100", 2, 4.0), ("m1:generic", "generic", 4, 8.0)]
    assert ":nodes[0].gres: node 'm1' has GPUs of 2 types (2 h100, 4 untyped)" in str(
        caught[0].message)
