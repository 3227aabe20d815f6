"""Collective and point-to-point communication times (alpha-beta model).

Ring all-reduce moves ``2 (n - 1) / n`` times the message over each rank's link (Patarasuk &
Yuan, JPDC 2009; NCCL's "bus bandwidth"). A hierarchical all-reduce (Horovod / NCCL over
nodes, e.g. Jia et al. 2018) reduce-scatters inside each node over NVLink, all-reduces one
``1/k`` slice per GPU across nodes, each GPU on its own NIC, and all-gathers back. A parameter
server (Li et al., OSDI'14) receives every worker's gradient and sends the new weights back:
with ``S`` servers of bandwidth ``B`` each and ``n`` workers, the servers carry ``2 n M / S``
bytes and each worker ``2 M``, so servers become the bottleneck when ``S < n`` times the
worker-to-server bandwidth ratio (BytePS, Jiang et al., OSDI'20, §3).
"""

from __future__ import annotations

LATENCY_S = 10e-6  # per ring step (NCCL's small-message latency on NVLink / InfiniBand)


def ring_allreduce(message_bytes: float, n: int, bus_gbps: float) -> float:
    if n <= 1 or message_bytes <= 0:
        return 0.0
    return 2 * (n - 1) * LATENCY_S + 2 * (n - 1) / n * message_bytes / (bus_gbps * 1e9)


def ring_reduce_scatter(message_bytes: float, n: int, bus_gbps: float) -> float:
    """Half an all-reduce (also the cost of an all-gather of the same total size)."""
    return ring_allreduce(message_bytes, n, bus_gbps) / 2


def hierarchical_allreduce(message_bytes: float, per_node: int, nodes: int,
                           nvlink_gbps: float, nic_gbps: float) -> float:
    """``per_node`` ranks in each of ``nodes`` nodes; each rank has its own NIC."""
    inside = 2 * ring_reduce_scatter(message_bytes, per_node, nvlink_gbps)
    across = ring_allreduce(message_bytes / max(per_node, 1), nodes, nic_gbps)
    return inside + across


def parameter_server(message_bytes: float, workers: int, servers: int, worker_gbps: float,
                     server_gbps: float) -> float:
    """Push gradients and pull weights through ``servers`` shards: the slower of a worker's
    own link and the servers' aggregate links."""
    if workers <= 1:
        return 0.0
    worker_side = 2 * message_bytes / (worker_gbps * 1e9)
    server_side = 2 * workers * message_bytes / (servers * server_gbps * 1e9)
    return max(worker_side, server_side)


def point_to_point(message_bytes: float, gbps: float) -> float:
    return LATENCY_S + message_bytes / (gbps * 1e9)
