"""A trace's GPU-type pins read against the cluster it runs on.

A job may name the GPU types it runs on (``JobSpec.gpu_types``): Slurm's ``gres/gpu:a100=4``,
a Kubernetes ``nvidia.com/gpu.product`` selector, a Philly-style trace's column. Those names
come from another system's conventions (Slurm's gres names are lower case by custom; NVIDIA's
GPU feature discovery labels nodes with the product, ``NVIDIA-A100-SXM4-80GB``) while a cluster
YAML names its types as ``gpu_types.py`` does (``A100-80G``). A pin that names no type of the
cluster is read as the cluster's type that differs from it only in case, else, for a product
label, as the cluster's type of that product (``PRODUCTS``: the model and, where dlsched tells
them apart and the cluster has both, the memory). The service's API refuses an unknown type at
submission instead (``runtime/commands.py``). A pin that still names no type of the cluster
leaves the job unable to ever run: the run goes on (the job ends ``failed``, "can never run")
and the user is told which types and how many jobs, before it starts.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import replace

from dlsched.cluster.cluster import Cluster
from dlsched.wording import jobs_ask, named_counts
from dlsched.workload.job import JobSpec
from dlsched.workload.trace import Trace

# GPU feature discovery's product labels (``nvidia.com/gpu.product``, e.g. Tesla-V100-SXM2-32GB,
# NVIDIA-A100-SXM4-80GB, NVIDIA-H100-80GB-HBM3, NVIDIA-A10G) -> gpu_types.py's names; the
# first rule that matches and names a type of the cluster decides. Matched on the label in upper
# case, words split on - _ and spaces.
PRODUCTS: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(pattern), name) for pattern, name in (
        (r"\bH100\b", "H100"),
        (r"\bA100\b.*\b80GB?\b", "A100-80G"),
        (r"\bA100\b", "A100"),
        (r"\bV100\b.*\b32GB?\b", "V100M32"),
        (r"\bV100\b", "V100"),
        (r"\bA10G?\b", "A10"),
        (r"\bT4\b", "T4"),
        (r"\bP100\b", "P100"),
        (r"\bP40\b", "P40"),
        (r"\bM40\b", "M40"),
        (r"\bK80\b", "K80"),
        (r"\bRTX\W*2080\W*TI\b", "RTX2080Ti"),
        (r"\bRTX\W*6000\b", "RTX6000"),
    ))


def with_cluster_spelling(trace: Trace, cluster: Cluster) -> Trace:
    """``trace`` with each pinned type that names none of ``cluster``'s types read as the
    cluster's type it means (``cluster_type``); the trace itself when nothing changes."""
    names = cluster.type_names
    by_lower: dict[str, str | None] = {}
    for name in names:  # two types equal up to case: neither is guessed
        by_lower[name.lower()] = None if name.lower() in by_lower else name
    jobs: list[JobSpec] | None = None
    for index, spec in enumerate(trace.jobs):
        if not spec.gpu_types or all(t in names for t in spec.gpu_types):
            continue
        spelled = tuple(t if t in names else (cluster_type(t, by_lower) or t)
                        for t in spec.gpu_types)
        if spelled != spec.gpu_types:
            if jobs is None:
                jobs = list(trace.jobs)
            jobs[index] = replace(spec, gpu_types=spelled)
    return trace if jobs is None else replace(trace, jobs=tuple(jobs))


def cluster_type(pin: str, by_lower: dict[str, str | None]) -> str | None:
    """The cluster's type (``by_lower``: its names by their lower case, None where two share
    one) that ``pin`` differs from only in case, else the one of the product ``pin`` labels;
    None when neither is a type of the cluster."""
    same = by_lower.get(pin.lower())
    if same is not None:
        return same
    words = re.sub(r"[-_\s]+", " ", pin.upper())
    for pattern, name in PRODUCTS:  # the most specific type the cluster has (A100-80G, A100)
        found = by_lower.get(name.lower()) if pattern.search(words) else None
        if found is not None:
            return found
    return None


def unknown_pins(trace: Trace, cluster: Cluster, cluster_name: str) -> list[str]:
    """One warning per GPU type that jobs of ``trace`` are pinned to and no node of
    ``cluster`` has, with the number of jobs left with no type they may use."""
    names = set(cluster.type_names)
    missing: Counter[str] = Counter()
    stranded = 0
    for spec in trace.jobs:
        if spec.gpu_types and not names.intersection(spec.gpu_types):
            stranded += 1
            missing.update(t for t in spec.gpu_types if t not in names)
    if not stranded:
        return []
    have = ", ".join(sorted(names)) or "none"
    return [f"{trace.name}: {jobs_ask(stranded)} only for GPU types that no node "
            f"of cluster {cluster_name} has: {named_counts(missing)}; the cluster's types: "
            f"{have}. They can never run (name the type in the cluster YAML as the trace does)"]
