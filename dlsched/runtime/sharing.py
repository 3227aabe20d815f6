"""A submission's sharing fields (``gpu_share``, ``gpu_memory_gb``, ``mig_profile``,
``cpus_per_gpu``, ``memory_gb_per_gpu``): checked against the cluster before anything is
stored (the first impossible one, named, becomes a 400), then turned into ``JobSpec`` fields.

A MIG job runs one worker on one instance (a CUDA process sees a single MIG instance), asks
the instance's share of the GPU's compute (``compute slices / 7``) and memory, and only GPUs of
a MIG-capable type (A100, H100) can hold it (``dlsched/mig``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dlsched.cluster.cluster import Cluster
from dlsched.mig.offered import unoffered_reason
from dlsched.mig.profiles import UnknownMigProfile, mig_gpu_type, mig_profile, profile_share
from dlsched.runtime.models import SubmitRequest


def problem(cluster: Cluster, request: SubmitRequest) -> str | None:
    """The first sharing field this cluster can never honour, as ``field=value: why``."""
    if request.mig_profile is not None:
        return _mig_problem(cluster, request)
    nodes = _nodes_of(cluster, request.gpu_type)
    for field, value, capacity, what in (
            ("cpus_per_gpu", request.cpus_per_gpu, cluster.node_cpus[nodes], "CPUs"),
            ("memory_gb_per_gpu", request.memory_gb_per_gpu, cluster.node_memory_gb[nodes],
             "GiB of host memory"),
            ("gpu_memory_gb", request.gpu_memory_gb,
             cluster.gpu_memory_gb[np.isin(cluster.gpu_node, nodes)], "GiB of GPU memory")):
        if value > 0 and len(capacity) and (capacity > 0).all() and value > capacity.max():
            return (f"{field}={value:g}: more {what} than any node of this cluster has "
                    f"(the most: {capacity.max():g})")
    return None


def spec_fields(cluster: Cluster, request: SubmitRequest) -> dict[str, Any]:
    """The ``JobSpec`` keyword arguments of the sharing fields (after ``problem``)."""
    fields: dict[str, Any] = {"gpu_share": request.gpu_share,
                              "gpu_memory_gb": request.gpu_memory_gb,
                              "cpus_per_gpu": request.cpus_per_gpu,
                              "memory_gb_per_gpu": request.memory_gb_per_gpu}
    if request.mig_profile is not None:
        names = _offered_names(cluster, request.gpu_type, request.mig_profile)
        assert names
        # One full name where every type that offers it agrees (3g on A100 nodes: 3g.20gb);
        # the size alone where they differ (3g on A100 and H100 nodes: either instance).
        name = names[0] if len(set(names)) == 1 else request.mig_profile.strip().casefold()
        fields.update(mig_profile=name, gpu_share=profile_share(name))
    return fields


def _mig_problem(cluster: Cluster, request: SubmitRequest) -> str | None:
    name = request.mig_profile
    types = _mig_types(cluster, request.gpu_type)
    if not types:
        kind = f" of type {request.gpu_type}" if request.gpu_type else ""
        return (f"mig_profile={name}: this cluster has no MIG-capable GPU{kind} (A100, "
                f"H100)")
    if not _offered_names(cluster, request.gpu_type, name or ""):
        return f"mig_profile={name}: {unoffered_reason(tuple(types), name or '')}"
    if request.gpus != 1 or (request.max_gpus or 1) != 1:
        return (f"mig_profile={name}: a MIG job runs one worker on one instance (gpus must be "
                f"1, got {request.gpus})")
    for field in ("gpu_share", "gpu_memory_gb"):
        if getattr(request, field) != SubmitRequest.model_fields[field].default:
            return f"{field}: a MIG job's share and memory are its profile's; drop {field}"
    return None


def _mig_types(cluster: Cluster, gpu_type: str | None) -> list[str]:
    """The MIG-capable types of the cluster (of ``gpu_type`` only, when the job names it)."""
    types = [gpu_type] if gpu_type else list(cluster.gpus_by_type())
    return [t for t in types if mig_gpu_type(t) is not None]


def _offered_names(cluster: Cluster, gpu_type: str | None, name: str) -> list[str]:
    """The full name of profile ``name`` on each MIG-capable type that offers it: the first
    type's family alone refused an H100 profile (3g.40gb) on a cluster listing A100 nodes
    first, and named a size (7g) after the A100's instance only, leaving the H100 idle."""
    names = []
    for kind in _mig_types(cluster, gpu_type):
        family = mig_gpu_type(kind)
        assert family is not None
        try:
            names.append(mig_profile(name, family).name)
        except UnknownMigProfile:
            continue
    return names


def _nodes_of(cluster: Cluster, gpu_type: str | None) -> np.ndarray:
    return np.array([i for i, node in enumerate(cluster.nodes)
                     if gpu_type is None or node.gpu_type == gpu_type], dtype=np.int64)
