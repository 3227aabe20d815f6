"""What the training model needs to know about GPUs and a cluster's links.

Peak dense 16-bit tensor FLOP/s and HBM bandwidth are the vendors' data sheets (A100: 312
TFLOP/s, 2.0 TB/s for the 80 GB part; H100 SXM: 989 TFLOP/s, 3.35 TB/s). ``gemm_efficiency``
and ``gemm_half_flops`` describe how close a matrix multiply gets to peak: efficiency
``e * F / (F + F0)`` for a GEMM of ``F`` FLOPs, fitted to Vidur's measured Llama-2 MLP GEMMs
(``perf/llm/calibrate.py``; Agrawal et al., MLSys'24). ``nvlink_bus_fraction`` is the share of
the NVLink bandwidth NCCL's all-reduce reaches (bus bandwidth), fitted to Vidur's all-reduce
timings on DGX A100 and H100 nodes.
"""

from __future__ import annotations

from dataclasses import dataclass

from dlsched.cluster.cluster import Cluster
from dlsched.errors import ConfigError


@dataclass(frozen=True, slots=True)
class GpuSpec:
    name: str
    peak_flops: float  # dense bf16/fp16 tensor FLOP/s
    memory_gb: float
    hbm_gbps: float
    gemm_efficiency: float
    gemm_half_flops: float
    nvlink_bus_fraction: float


GPU_SPECS: dict[str, GpuSpec] = {g.name: g for g in (
    GpuSpec("V100", 125e12, 32, 900, 0.716, 5.98e9, 0.789),  # A100 fit: no V100 profile
    GpuSpec("A100", 312e12, 40, 1555, 0.716, 5.98e9, 0.789),
    GpuSpec("A100-80G", 312e12, 80, 2039, 0.716, 5.98e9, 0.789),
    GpuSpec("H100", 989e12, 80, 3350, 0.724, 8.08e9, 1.105),
)}


def gpu_spec(name: str) -> GpuSpec:
    spec = GPU_SPECS.get(name)
    if spec is None:
        known = ", ".join(sorted(GPU_SPECS))
        raise ConfigError(f"GPU type {name}: no peak FLOP/s known for the training model "
                          f"(known: {known})")
    return spec


@dataclass(frozen=True, slots=True)
class Fabric:
    """A homogeneous GPU cluster as the training model sees it: nodes of ``gpus_per_node``
    GPUs on one NVLink switch, each GPU with its own share of the node's network
    (``nic_gbps`` GB/s per GPU: DGX A100 has 8 x 200 Gb/s HCAs, one per GPU)."""

    gpu: GpuSpec
    gpus_per_node: int
    nodes: int
    nvlink_gbps: float  # per GPU, one direction
    nic_gbps: float  # per GPU, one direction
    nodes_per_rack: int

    @property
    def num_gpus(self) -> int:
        return self.gpus_per_node * self.nodes

    @property
    def nvlink_bus_gbps(self) -> float:
        return self.nvlink_gbps * self.gpu.nvlink_bus_fraction


def fabric_of(cluster: Cluster) -> Fabric:
    """The training view of a dlsched cluster (the nodes of its largest GPU type the model
    knows: sia-64's 16 A100, not its 24 RTX 2080 Ti): NVLink bandwidth from
    ``topology.nvlink_gbps`` when nodes have an NVLink domain (else PCIe), the per-GPU network
    share from ``topology.rack_gbps``."""
    if not cluster.type_names:
        raise ConfigError(f"cluster {cluster.name} has no GPUs")
    by_type = cluster.gpus_by_type()
    known = [t for t in by_type if t in GPU_SPECS and by_type[t] > 0]
    if not known:
        return _no_known_type(cluster.name, by_type)
    gpu_name = max(known, key=lambda t: by_type[t])
    nodes = [n for n in cluster.nodes if n.gpu_type == gpu_name and n.num_gpus > 0]
    per_node = max(n.num_gpus for n in nodes)
    top = cluster.topology
    nvlink = top.nvlink_gbps if any(n.nvlink_domain for n in nodes) else top.pcie_gbps
    racks: dict[str, int] = {}
    for n in nodes:
        racks[n.rack] = racks.get(n.rack, 0) + 1
    return Fabric(gpu_spec(gpu_name), per_node, len(nodes), nvlink, top.rack_gbps,
                  max(racks.values()))


def _no_known_type(cluster: str, by_type: dict[str, int]) -> Fabric:
    types = ", ".join(sorted(t for t in by_type if by_type[t] > 0))
    raise ConfigError(f"cluster {cluster}: none of its GPU types ({types}) has peak FLOP/s known "
                      f"to the training model (known: {', '.join(sorted(GPU_SPECS))})")
