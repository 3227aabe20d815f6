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
from dlsched.mig.profiles import (
    COMPUTE_SLICES,
    UnknownMigProfile,
    mig_gpu_type,
    mig_profile,
)
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
        family = _mig_family(cluster, request.gpu_type)
        assert family is not None
        profile = mig_profile(request.mig_profile, family)
        fields.update(mig_profile=profile.name, gpu_share=profile.compute / COMPUTE_SLICES)
    return fields


def _mig_problem(cluster: Cluster, request: SubmitRequest) -> str | None:
    name = request.mig_profile
    family = _mig_family(cluster, request.gpu_type)
    if family is None:
        kind = f" of type {request.gpu_type}" if request.gpu_type else ""
        return (f"mig_profile={name}: this cluster has no MIG-capable GPU{kind} (A100, "
                f"H100)")
    try:
        mig_profile(name or "", family)
    except UnknownMigProfile as exc:
        return f"mig_profile={name}: {exc}"
    if request.gpus != 1 or (request.max_gpus or 1) != 1:
        return (f"mig_profile={name}: a MIG job runs one worker on one instance (gpus must be "
                f"1, got {request.gpus})")
    for field in ("gpu_share", "gpu_memory_gb"):
        if getattr(request, field) != SubmitRequest.model_fields[field].default:
            return f"{field}: a MIG job's share and memory are its profile's; drop {field}"
    return None


def _mig_family(cluster: Cluster, gpu_type: str | None) -> str | None:
    types = [gpu_type] if gpu_type else list(cluster.gpus_by_type())
    families = [f for f in (mig_gpu_type(t) for t in types) if f is not None]
    return families[0] if families else None


def _nodes_of(cluster: Cluster, gpu_type: str | None) -> np.ndarray:
    return np.array([i for i, node in enumerate(cluster.nodes)
                     if gpu_type is None or node.gpu_type == gpu_type], dtype=np.int64)
