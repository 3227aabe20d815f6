"""Built-in clusters by name; sizes, sources and modelling choices are in docs/clusters.md.

Each builder is small, reads its bundled table (``dlsched/data/clusters``) only when called and
is cached: a ``Cluster`` is immutable, so every caller may share one instance.
"""

from __future__ import annotations

import csv
import functools
from collections.abc import Callable, Iterator
from importlib import resources
from pathlib import Path

from dlsched.cluster.cluster import Cluster
from dlsched.cluster.loader import NodeGroup, load_cluster_yaml
from dlsched.cluster.topology import Topology
from dlsched.errors import ConfigError
from dlsched.wording import did_you_mean

BUILTIN_CLUSTERS: dict[str, Callable[[], Cluster]] = {}


def builtin(name: str) -> Callable[[Callable[[], Cluster]], Callable[[], Cluster]]:
    """Register a cached cluster builder under ``name``."""
    def register(build: Callable[[], Cluster]) -> Callable[[], Cluster]:
        if name in BUILTIN_CLUSTERS:
            raise ValueError(f"built-in cluster {name} registered twice")
        cached = functools.cache(build)
        BUILTIN_CLUSTERS[name] = cached
        return cached
    return register


def resolve_cluster(name_or_path: str | Path) -> Cluster:
    """A built-in cluster by name, or a cluster from a YAML file, a node-list CSV
    (``node_list.py``: the node lists of the Alibaba traces) or Slurm's ``sinfo`` or
    ``scontrol`` output (``sinfo.py``, told from its content)."""
    build = BUILTIN_CLUSTERS.get(str(name_or_path))
    if build is not None:
        return build()
    path = Path(name_or_path)
    if path.suffix.lower() not in (".yaml", ".yml") and path.is_file():
        from dlsched.cluster.sinfo import load_sinfo, looks_like_sinfo

        if looks_like_sinfo(path):
            return load_sinfo(path)
    if path.suffix.lower() == ".csv" and path.exists():
        from dlsched.cluster.node_list import load_node_list

        return load_node_list(path)
    if path.suffix in (".yaml", ".yml") or path.exists():
        return load_cluster_yaml(path)
    known = ", ".join(sorted(BUILTIN_CLUSTERS))
    raise ConfigError(f"unknown cluster '{name_or_path}': not a built-in ({known}), "
                      "a YAML file, a node-list CSV or sinfo output"
                      + did_you_mean(name_or_path, BUILTIN_CLUSTERS))


def _grouped(name: str, groups: list[NodeGroup], topology: Topology | None = None) -> Cluster:
    nodes = tuple(node for group in groups for node in group.expand())
    return Cluster(name, nodes, topology or Topology())


def _bundled_rows(filename: str) -> Iterator[dict[str, str]]:
    table = resources.files("dlsched.data").joinpath("clusters", filename)
    with table.open(newline="") as f:
        yield from csv.DictReader(f)


@builtin("philly")
def philly() -> Cluster:
    """Microsoft Philly (Jeon et al., ATC'19): 11 virtual clusters, 352 servers of 8 P100.

    One pool per VC; racks of 8 servers inside a VC; no NVLink (PCIe only).
    """
    groups = [NodeGroup(int(row["node num"]), "P100", 8, prefix=f"vc{row['vc']}",
                        nodes_per_rack=8, pool=row["vc"])
              for row in _bundled_rows("philly_vc_nodes.csv")]
    return _grouped("philly", groups)


@builtin("philly-shared-512")
def philly_shared_512() -> Cluster:
    """The Philly trace's hardware under contention: 64 servers of 8 P100 in one shared pool.

    No VC pools, so every job competes for the same 512 GPUs (FIFO runs the whole Philly table
    at ~73% utilization); racks of 8 servers, PCIe only, as in ``philly``.
    """
    return _grouped("philly-shared-512", [NodeGroup(64, "P100", 8, prefix="p100",
                                                    nodes_per_rack=8)])


@builtin("alibaba-2023")
def alibaba_2023() -> Cluster:
    """Alibaba GPU cluster 2023 ("openb", Weng et al., ATC'23): 1,523 nodes, 6,212 GPUs.

    Built from the bundled per-shape node counts; one rack, no NVLink (the trace has neither).
    """
    return _grouped("alibaba-2023", [_shape_group(row) for row in
                                     _bundled_rows("alibaba-2023-node-shapes.csv")])


def _shape_group(row: dict[str, str]) -> NodeGroup:
    """Nodes of one shape, named after it, e.g. ``g2x8-96c384g-000`` or ``cpu-32c256g-00``."""
    cpus, memory_gb = int(row["cpu_milli"]) / 1000, int(row["memory_mib"]) / 1024
    gpus, model = int(row["gpu"]), row["model"]
    kind = f"{model.lower()}x{gpus}" if gpus else "cpu"
    prefix = f"{kind}-{cpus:g}c{memory_gb:g}g"
    return NodeGroup(int(row["nodes"]), model, gpus, prefix, cpus, memory_gb)


@builtin("alibaba-pai-2020")
def alibaba_pai_2020() -> Cluster:
    """Alibaba PAI 2020 (Weng et al., "MLaaS in the Wild", NSDI'22): 1,897 machines, 6,742
    GPUs (MISC, P100, T4, V100, V100M32; 83 CPU-only machines), from the bundled per-shape
    machine counts of its ``pai_machine_spec``; one rack, no NVLink (the trace has neither)."""
    groups = []
    for row in _bundled_rows("alibaba-pai-2020-node-shapes.csv"):
        gpus, cpus, memory_gb = int(row["cap_gpu"]), int(row["cap_cpu"]), int(row["cap_mem"])
        model = row["gpu_type"] if gpus else ""
        kind = f"{model.lower()}x{gpus}" if gpus else "cpu"
        groups.append(NodeGroup(int(row["nodes"]), model, gpus, f"{kind}-{cpus}c{memory_gb}g",
                                cpus, memory_gb))
    return _grouped("alibaba-pai-2020", groups)


@builtin("gavel-108")
def gavel_108() -> Cluster:
    """Gavel's simulated heterogeneous cluster (OSDI'20): 36 each of K80, P100, V100, 4 a node."""
    return _grouped("gavel-108", [NodeGroup(9, t, 4) for t in ("K80", "P100", "V100")])


@builtin("tiresias-128")
def tiresias_128() -> Cluster:
    """The Tiresias artifact's simulated cluster (NSDI'19, SymbioticLab/Tiresias
    ``simulator/n32g4.csv``): 32 nodes of 4 GPUs (its simulator has no GPU types)."""
    return _grouped("tiresias-128", [NodeGroup(32, "P100", 4)])


@builtin("elasticflow-128")
def elasticflow_128() -> Cluster:
    """ElasticFlow's testbed (ASPLOS'23 §6.1; pkusys/ElasticFlow ``cluster_specs/n16g8.csv``):
    16 Azure ND96asr A100 v4 VMs of 8 A100 (NVLink) each, 128 GPUs."""
    return _grouped("elasticflow-128", [NodeGroup(16, "A100", 8, prefix="nd96", cpus=96,
                                                  memory_gb=900, nvlink_domain=8)])


@builtin("pollux-64")
def pollux_64() -> Cluster:
    """Pollux's testbed (OSDI'21): 16 AWS g4dn.12xlarge, 4 T4, 48 vCPUs and 192 GB each."""
    return _grouped("pollux-64", [NodeGroup(16, "T4", 4, cpus=48, memory_gb=192)])


@builtin("sia-64")
def sia_64() -> Cluster:
    """Sia's default simulated heterogeneous cluster (SOSP'23): 24 T4, 16 A100, 24 RTX 2080 Ti.

    Prefixes are the Sia profile names (``aws``, ``dgx``, ``rtx``).
    """
    return _grouped("sia-64", [
        NodeGroup(6, "T4", 4, prefix="aws", cpus=48, memory_gb=192),
        NodeGroup(2, "A100", 8, prefix="dgx", cpus=256, memory_gb=1024, nvlink_domain=8),
        NodeGroup(3, "RTX2080Ti", 8, prefix="rtx"),
    ])


@builtin("tiny-4")
def tiny_4() -> Cluster:
    """One node with 4 V100 on PCIe: for tests and examples."""
    return _grouped("tiny-4", [NodeGroup(1, "V100", 4, prefix="node", cpus=32, memory_gb=128)])


@builtin("small-16")
def small_16() -> Cluster:
    """Two nodes with 8 NVLinked V100 each (like AWS p3.16xlarge): for tests and examples."""
    return _grouped("small-16", [NodeGroup(2, "V100", 8, prefix="node", cpus=64,
                                           memory_gb=488, nvlink_domain=8)])


@builtin("megatron-selene")
def megatron_selene() -> Cluster:
    """NVIDIA Selene as Megatron-LM used it (Narayanan et al., SC'21, §5): DGX A100 80 GB
    nodes of 8 GPUs on NVSwitch (NVLink 3: 300 GB/s per GPU each way), 8 x 200 Gb/s HDR
    InfiniBand per node (25 GB/s per GPU) in a fat tree; 384 nodes, the 3,072 GPUs of the
    largest run; racks of 4 DGX."""
    return _grouped("megatron-selene", [
        NodeGroup(384, "A100-80G", 8, prefix="dgx", cpus=256, memory_gb=2048, nvlink_domain=8,
                  nodes_per_rack=4)],
        Topology(nvlink_gbps=300.0, pcie_gbps=32.0, rack_gbps=25.0, network_gbps=25.0))


@builtin("llama3-h100")
def llama3_h100() -> Cluster:
    """Meta's Llama 3 training cluster (Llama Team 2024, §3.3.1): 16,384 H100 80 GB in nodes of
    8 on NVLink 4 (450 GB/s per GPU each way), one 400 Gb/s RoCE NIC per GPU (50 GB/s); racks
    of 2 nodes; the aggregation layer between pods is 1:7 oversubscribed (~7 GB/s per GPU)."""
    return _grouped("llama3-h100", [
        NodeGroup(2048, "H100", 8, prefix="h100", cpus=224, memory_gb=2048, nvlink_domain=8,
                  nodes_per_rack=2)],
        Topology(nvlink_gbps=450.0, pcie_gbps=64.0, rack_gbps=50.0, network_gbps=7.1))
