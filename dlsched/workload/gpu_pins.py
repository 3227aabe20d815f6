"""A trace's GPU-type pins read against the cluster it runs on.

A job may name the GPU types it runs on (``JobSpec.gpu_types``): Slurm's ``gres/gpu:a100=4``,
a Kubernetes ``nvidia.com/gpu.product`` selector, a Philly-style trace's column. Those names
come from another system's conventions (Slurm's gres names are lower case by custom) while a
cluster YAML names its types as ``gpu_types.py`` does (``A100``): a pin that differs from the
cluster's type only in case means that type, and is read so (the service's API refuses an
unknown type at submission instead, ``runtime/commands.py``). A pin that names no type of the
cluster at all leaves the job unable to ever run: the run goes on (the job ends ``failed``,
"can never run") and the user is told which types and how many jobs, before it starts.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

from dlsched.cluster.cluster import Cluster
from dlsched.workload.job import JobSpec
from dlsched.workload.trace import Trace


def with_cluster_spelling(trace: Trace, cluster: Cluster) -> Trace:
    """``trace`` with each pinned type that matches one of ``cluster``'s types only up to case
    spelled as the cluster spells it; the trace itself when nothing changes."""
    names = cluster.type_names
    by_lower: dict[str, str | None] = {}
    for name in names:  # two types equal up to case: neither is guessed
        by_lower[name.lower()] = None if name.lower() in by_lower else name
    jobs: list[JobSpec] | None = None
    for index, spec in enumerate(trace.jobs):
        if not spec.gpu_types or all(t in names for t in spec.gpu_types):
            continue
        spelled = tuple(t if t in names else (by_lower.get(t.lower()) or t)
                        for t in spec.gpu_types)
        if spelled != spec.gpu_types:
            if jobs is None:
                jobs = list(trace.jobs)
            jobs[index] = replace(spec, gpu_types=spelled)
    return trace if jobs is None else replace(trace, jobs=tuple(jobs))


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
    types = ", ".join(f"{name!r} ({count} jobs)" for name, count in sorted(missing.items()))
    return [f"{trace.name}: {stranded} jobs ask only for GPU types that no node of cluster "
            f"{cluster_name} has: {types}; the cluster's types: {have}. They can never run "
            f"(name the type in the cluster YAML as the trace does)"]
