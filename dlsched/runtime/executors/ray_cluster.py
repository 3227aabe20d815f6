"""The dlsched ``Cluster`` of a Ray cluster: one node per live Ray node that has GPUs.

A node's GPU count is its ``GPU`` resource; its GPU type is the name in a ``gpu_type:<T>``
custom resource (start nodes with ``ray start --num-gpus 4 --resources '{"gpu_type:V100": 4}'``),
``generic`` when there is none. Its CPUs and host memory are Ray's ``CPU`` and ``memory``
resources (what a worker's bundle asks for ``cpus_per_gpu`` and ``memory_gb_per_gpu``), so the
core books them as Ray will. Nodes are named ``node-<first 8 hex digits of the Ray node
id>`` and ordered by address, then id. The Ray node id of each node is kept: the executor pins
placement-group bundles to it (``ray.io/node-id`` label selector).
"""

from __future__ import annotations

import socket
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from dlsched.cluster.cluster import Cluster, Node
from dlsched.errors import ConfigError

GPU_TYPE_PREFIX = "gpu_type:"
MIG_PREFIX = "mig-"  # a node's MIG instances: ``mig-3g.20gb: 2`` (executors/sharing.py)
DEFAULT_GPU_TYPE = "generic"
CONNECT_TIMEOUT = 5.0  # seconds to reach the Ray head's GCS port before ray.init


@dataclass(frozen=True)
class RayNode:
    name: str
    node_id: str
    address: str
    gpu_type: str
    num_gpus: int
    cpus: float = 0.0
    memory_gb: float = 0.0  # Ray's ``memory`` resource (bytes) in GiB
    mig_profiles: frozenset[str] = frozenset()  # from its ``mig-<profile>`` resources


@dataclass(frozen=True)
class RayCluster:
    """A dlsched cluster and, node by node in the same order, the Ray nodes behind it."""

    cluster: Cluster
    nodes: tuple[RayNode, ...]

    def node_of_gpu(self, gpu: int) -> RayNode:
        return self.nodes[int(self.cluster.gpu_node[gpu])]

    def mig_problem(self, profile: str, gpu_type: str | None) -> str | None:
        """Why no worker of a ``profile`` MIG job could ever be reserved (its bundle asks
        ``mig-<profile>``, which only nodes started with that resource offer), or None."""
        if any(offered == profile or offered.startswith(f"{profile}.")  # a size: any family
               for node in self.nodes if gpu_type is None or node.gpu_type == gpu_type
               for offered in node.mig_profiles):
            return None
        kind = f" of type {gpu_type}" if gpu_type else ""
        return (f"mig_profile={profile}: no node{kind} of the Ray cluster offers the resource "
                f"{MIG_PREFIX}{profile} (start MIG nodes with ray start --resources "
                f"'{{\"{MIG_PREFIX}{profile}\": N}}')")


def node_from_ray(info: Mapping[str, Any]) -> RayNode | None:
    """One entry of ``ray.nodes()`` as a dlsched node (None: dead, or no GPUs)."""
    resources: Mapping[str, float] = info.get("Resources") or {}
    node_id = str(info.get("NodeID", ""))
    gpus = float(resources.get("GPU", 0.0))
    if not info.get("Alive", False) or gpus <= 0:
        return None
    where = f"Ray node {node_id} ({info.get('NodeManagerAddress', '?')})"
    if gpus != int(gpus):
        raise ConfigError(f"{where}: resource GPU: a whole number is needed, got {gpus:g}")
    types = [key[len(GPU_TYPE_PREFIX):] for key in resources if key.startswith(GPU_TYPE_PREFIX)]
    if len(types) > 1:
        raise ConfigError(f"{where}: resource gpu_type: one type per node, got "
                          f"{', '.join(sorted(types))}")
    if types and not types[0]:
        raise ConfigError(f"{where}: resource gpu_type: the type name after ':' is empty")
    return RayNode(f"node-{node_id[:8]}", node_id, str(info.get("NodeManagerAddress", "")),
                   types[0] if types else DEFAULT_GPU_TYPE, int(gpus),
                   float(resources.get("CPU", 0.0)), float(resources.get("memory", 0.0)) / 2**30,
                   frozenset(key[len(MIG_PREFIX):] for key, count in resources.items()
                             if key.startswith(MIG_PREFIX) and count > 0))


def cluster_from_ray_nodes(infos: Iterable[Mapping[str, Any]],
                           name: str = "ray") -> RayCluster:
    nodes = sorted((n for n in map(node_from_ray, infos) if n is not None),
                   key=lambda n: (n.address, n.node_id))
    if not nodes:
        raise ConfigError("the Ray cluster has no live node with GPUs (start nodes with "
                          "--num-gpus and a gpu_type:<T> resource)")
    cluster = Cluster(name, tuple(Node(n.name, n.gpu_type, n.num_gpus, n.cpus, n.memory_gb)
                                  for n in nodes))
    return RayCluster(cluster, tuple(nodes))


def connect(address: str | None) -> RayCluster:
    """Join an existing Ray cluster as a driver (or reuse this process's connection) and
    describe its GPU nodes."""
    try:
        import ray
    except ImportError:
        raise ConfigError("the Ray executor needs Ray: pip install 'dlsched[ray]'") from None
    if not ray.is_initialized():
        if not address:
            raise ConfigError("--executor ray needs --ray-address (e.g. 10.0.0.1:6379 or auto)")
        check_reachable(address)
        try:
            ray.init(address=address, log_to_driver=False, namespace="dlsched")
        except (ConnectionError, RuntimeError, ValueError) as exc:
            raise ConfigError(f"--ray-address {address}: cannot connect: {exc}") from None
    return cluster_from_ray_nodes(ray.nodes())


def check_reachable(address: str, timeout: float = CONNECT_TIMEOUT) -> None:
    """Fail at once, in one line, when nothing listens at ``HOST:PORT``: ``ray.init`` would
    retry for minutes, printing Ray's own warnings. ``auto`` and ``ray://`` are left to Ray."""
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit() or "://" in address:
        return
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=timeout).close()
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise ConfigError(f"--ray-address {address}: cannot connect: {reason} (is the Ray "
                          f"head running there? ray start --head)") from None
