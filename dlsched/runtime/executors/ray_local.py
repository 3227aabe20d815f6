"""A multi-node Ray cluster on this one machine, with fake GPUs: for tests, benchmarks and
trying the Ray executor without a cluster (``ray.cluster_utils.Cluster``).

The settings are the ones measured to avoid trouble on small shared machines
(``shared/RAY_NOTES.md``): a short private ``RAY_TMPDIR`` (socket paths are limited to 107
characters), token authentication off, no usage statistics, no dashboard (no fixed ports), a
small object store per node. It never runs ``ray stop`` (that would kill every Ray process on
the host): it shuts down its own cluster only.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

RAY_ENV = {"RAY_AUTH_MODE": "disabled", "RAY_USAGE_STATS_ENABLED": "0",
           "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0",
           # A dead node is noticed in ~5 s instead of ~15 s (RAY_NOTES.md, node loss); 5 missed
           # checks of 1 s each, so a busy machine does not make a live node look dead.
           "RAY_health_check_period_ms": "1000", "RAY_health_check_timeout_ms": "1000",
           "RAY_health_check_failure_threshold": "5"}
OBJECT_STORE_BYTES = 80 * 2**20


def node_args(gpu_type: str, gpus: int, cpus: int) -> dict[str, Any]:
    return {"num_cpus": cpus, "num_gpus": gpus, "resources": {f"gpu_type:{gpu_type}": gpus},
            "object_store_memory": OBJECT_STORE_BYTES}


@contextmanager
def local_ray_cluster(gpu_types: Sequence[str], gpus_per_node: int = 4,
                      cpus_per_node: int = 4) -> Iterator[Any]:
    """One node per entry of ``gpu_types`` (the first is the head), each with
    ``gpus_per_node`` fake GPUs of that type; this process is connected as a driver. Yields the
    ``ray.cluster_utils.Cluster`` (``.address``; tests kill a node with ``remove_node``).
    Environment variables it sets are restored on exit."""
    import ray
    from ray.cluster_utils import Cluster

    tmp = tempfile.mkdtemp(prefix="dlr", dir="/tmp")
    saved = {name: os.environ.get(name) for name in [*RAY_ENV, "RAY_TMPDIR"]}
    os.environ.update({**RAY_ENV, "RAY_TMPDIR": tmp})
    cluster = None
    try:
        head, *others = gpu_types
        cluster = Cluster(initialize_head=True, head_node_args={
            **node_args(head, gpus_per_node, cpus_per_node), "include_dashboard": False})
        for gpu_type in others:
            cluster.add_node(**node_args(gpu_type, gpus_per_node, cpus_per_node))
        cluster.wait_for_nodes()
        ray.init(address=cluster.address, log_to_driver=False, namespace="dlsched")
        yield cluster
    finally:
        ray.shutdown()
        if cluster is not None:
            cluster.shutdown()
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        shutil.rmtree(tmp, ignore_errors=True)
