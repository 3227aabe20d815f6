"""Nodes and clusters. GPUs are numbered globally 0..G-1, node by node."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from dlsched.cluster.gpu_types import GpuType, gpu_type
from dlsched.cluster.topology import LinkLevel, Topology
from dlsched.wording import count_of


@dataclass(frozen=True, slots=True)
class Node:
    """A machine. ``nvlink_domain`` GPUs share an NVLink island (0: PCIe only).

    ``pool`` is an optional node group (a Philly virtual cluster, a Kueue node label).
    ``cpus`` and ``memory_gb`` (host memory, GiB) are what jobs' workers may ask for on the
    node; 0 leaves that resource unaccounted. ``gpu_memory_gb`` is each GPU's memory (0: the
    GPU type's, see ``gpu_types.py``).
    """

    name: str
    gpu_type: str
    num_gpus: int
    cpus: float = 0.0
    memory_gb: float = 0.0
    rack: str = "rack-0"
    nvlink_domain: int = 0
    pool: str | None = None
    gpu_memory_gb: float = 0.0

    def __post_init__(self) -> None:
        if self.num_gpus < 0:
            raise ValueError(f"node {self.name}: num_gpus must be >= 0")
        for name in ("cpus", "memory_gb", "gpu_memory_gb"):
            if not getattr(self, name) >= 0:
                raise ValueError(f"node {self.name}: {name} must be >= 0")

    @property
    def memory_per_gpu(self) -> float:
        """Each GPU's memory in GiB (0: unknown)."""
        return self.gpu_memory_gb or gpu_type(self.gpu_type).memory_gb


@dataclass(frozen=True)
class Cluster:
    """An immutable cluster description with index arrays derived once.

    ``gpu_node[g]`` is the node of GPU ``g``; ``node_first_gpu[n]`` its first GPU;
    ``node_type[n]`` an integer code into ``type_names``.
    """

    name: str
    nodes: tuple[Node, ...]
    topology: Topology = field(default_factory=Topology)
    gpu_node: np.ndarray = field(init=False, repr=False, compare=False)
    node_first_gpu: np.ndarray = field(init=False, repr=False, compare=False)
    node_gpus: np.ndarray = field(init=False, repr=False, compare=False)
    node_type: np.ndarray = field(init=False, repr=False, compare=False)
    node_rack: np.ndarray = field(init=False, repr=False, compare=False)
    type_names: tuple[str, ...] = field(init=False, repr=False, compare=False)
    pools: frozenset[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        names = [n.name for n in self.nodes]
        if len(set(names)) != len(names):
            raise ValueError(f"cluster {self.name}: node names are not unique")
        counts = np.array([n.num_gpus for n in self.nodes], dtype=np.int64)
        first = np.concatenate([[0], np.cumsum(counts)[:-1]]) if len(counts) else counts
        types = tuple(sorted({n.gpu_type for n in self.nodes if n.num_gpus > 0}))
        racks = sorted({n.rack for n in self.nodes})
        rack_index = {r: i for i, r in enumerate(racks)}
        type_index = {t: i for i, t in enumerate(types)}
        self._set("node_gpus", _frozen(counts))
        self._set("node_first_gpu", _frozen(first.astype(np.int64)))
        self._set("gpu_node", _frozen(np.repeat(np.arange(len(counts)), counts)))
        self._set("node_type", _frozen(np.array(
            [type_index.get(n.gpu_type, -1) for n in self.nodes], dtype=np.int64)))
        self._set("node_rack", _frozen(np.array([rack_index[n.rack] for n in self.nodes],
                                                dtype=np.int64)))
        self._set("type_names", types)
        self._set("pools", frozenset(n.pool for n in self.nodes if n.pool is not None))

    def _set(self, name: str, value: object) -> None:
        object.__setattr__(self, name, value)

    # Computed on first use and kept (the cluster is immutable).
    @cached_property
    def num_gpus(self) -> int:
        return int(self.node_gpus.sum())

    @cached_property
    def num_nodes(self) -> int:
        return len(self.nodes)

    @cached_property
    def gpu_node_list(self) -> list[int]:
        """``gpu_node`` as a Python list (per-GPU reads in loops: no numpy scalar each)."""
        return self.gpu_node.tolist()

    def gpu_name(self, gpu: int) -> str:
        """Cluster-wide GPU ``gpu`` as ``node:index`` (``n1:1`` is GPU 3 when n0 has two),
        as the dashboard's node rows and ``dlsched status`` number a node's GPUs."""
        node = int(self.gpu_node[gpu])
        return f"{self.nodes[node].name}:{gpu - int(self.node_first_gpu[node])}"

    @cached_property
    def node_cpus(self) -> np.ndarray:
        """CPUs per node (0: not accounted)."""
        return _frozen(np.array([n.cpus for n in self.nodes], dtype=np.float64))

    @cached_property
    def node_memory_gb(self) -> np.ndarray:
        """Host memory per node in GiB (0: not accounted)."""
        return _frozen(np.array([n.memory_gb for n in self.nodes], dtype=np.float64))

    @cached_property
    def gpu_memory_gb(self) -> np.ndarray:
        """Memory of each GPU in GiB (0: unknown, not accounted)."""
        per_node = np.array([n.memory_per_gpu for n in self.nodes], dtype=np.float64)
        return _frozen(per_node[self.gpu_node] if len(per_node) else per_node)

    def gpus_by_type(self) -> dict[str, int]:
        """GPUs per type, by type name (a fresh dict: the cluster never changes)."""
        return dict(self._gpus_by_type)

    @cached_property
    def _gpus_by_type(self) -> dict[str, int]:
        counts: Counter[str] = Counter()
        for n in self.nodes:
            if n.num_gpus:
                counts[n.gpu_type] += n.num_gpus
        return dict(sorted(counts.items()))

    @cached_property
    def largest_node_by_type(self) -> dict[str, int]:
        """The most GPUs a node of each type has."""
        out: dict[str, int] = {}
        for n in self.nodes:
            out[n.gpu_type] = max(out.get(n.gpu_type, 0), n.num_gpus)
        return out

    def gpu_type_of(self, gpu: int) -> GpuType:
        return gpu_type(self.nodes[int(self.gpu_node[gpu])].gpu_type)

    def link(self, a: int, b: int) -> LinkLevel:
        """The slowest link between two GPUs."""
        if a == b:
            return LinkLevel.SAME_GPU
        na, nb = int(self.gpu_node[a]), int(self.gpu_node[b])
        if na != nb:
            same_rack = self.node_rack[na] == self.node_rack[nb]
            return LinkLevel.RACK if same_rack else LinkLevel.NETWORK
        domain = self.nodes[na].nvlink_domain
        first = int(self.node_first_gpu[na])
        if domain and (a - first) // domain == (b - first) // domain:
            return LinkLevel.NVLINK
        return LinkLevel.PCIE

    def describe(self) -> str:
        types = ", ".join(f"{c} {t}" for t, c in self.gpus_by_type().items())
        return (f"{self.name}: {count_of(self.num_nodes, 'node')}, "
                f"{count_of(self.num_gpus, 'GPU')} ({types})")


def _frozen(array: np.ndarray) -> np.ndarray:
    array.flags.writeable = False
    return array
