"""The GPU cluster: nodes, GPU types and topology."""

from dlsched.cluster.builtin import BUILTIN_CLUSTERS, resolve_cluster
from dlsched.cluster.cluster import Cluster, Node
from dlsched.cluster.gpu_types import GPU_TYPES, GpuType, gpu_type
from dlsched.cluster.loader import (
    NodeGroup,
    dump_cluster_yaml,
    load_cluster_yaml,
    parse_cluster_yaml,
)
from dlsched.cluster.topology import LinkLevel, Topology

__all__ = [
    "BUILTIN_CLUSTERS",
    "GPU_TYPES",
    "Cluster",
    "GpuType",
    "LinkLevel",
    "Node",
    "NodeGroup",
    "Topology",
    "dump_cluster_yaml",
    "gpu_type",
    "load_cluster_yaml",
    "parse_cluster_yaml",
    "resolve_cluster",
]
