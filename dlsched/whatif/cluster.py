"""The running service's cluster as a cluster YAML file (``dlsched history cluster``), so that
a replay runs on the nodes the history ran on and schedules them as the service did: GPU types
and counts, CPUs, host and GPU memory, racks, NVLink domains, pools and link bandwidths, all
from the API's ``/v1/cluster``. A server older than those fields leaves them at the loader's
defaults (CPUs and memory unaccounted)."""

from __future__ import annotations

from typing import Any

from dlsched.cluster.cluster import Cluster, Node
from dlsched.cluster.loader import dump_cluster_yaml
from dlsched.cluster.topology import Topology


def view_cluster(view: Any) -> Cluster:
    """``view``: the API's ``ClusterView``. Its nodes in the service's order (GPU ids are
    numbered node by node, so the order is kept)."""
    nodes = tuple(Node(node.name, node.gpu_type, len(node.gpus), node.cpus, node.memory_gb,
                       node.rack, node.nvlink_domain, node.pool, node.gpu_memory_gb)
                  for node in view.nodes)
    topology = Topology() if view.topology is None else Topology(**view.topology.model_dump())
    return Cluster(view.name, nodes, topology)


def cluster_yaml(view: Any) -> str:
    return dump_cluster_yaml(view_cluster(view))
