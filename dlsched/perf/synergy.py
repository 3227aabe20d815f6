"""CPU- and memory-sensitive throughput (Synergy, Mohan et al., "Looking Beyond GPUs for DNN
Scheduling on Multi-Tenant Clusters", OSDI'22).

A job's speed depends on the host CPUs and memory each of its GPUs gets, not only on its GPUs
(Synergy §2: image and speech models decode and augment on the CPU). The bundled profile
(``dlsched/data/profiles/synergy``) gives, for 12 models, the relative throughput on a grid of
CPUs (1-24) and host memory (20.8-250 GB) per GPU, 1.0 at the GPU-proportional share of an
8-GPU / 24-CPU / 500-GB server (3 CPUs, 62.5 GB).

Model ``synergy``: work is counted in seconds at the requested GPUs with the GPU-proportional
share (``WorkUnit.REFERENCE_SECONDS``); ``rate = workers / requested * T(cpus, memory)`` with
``T`` the model's profile interpolated bilinearly between grid points and held at the grid's
edges. ``cpus`` and ``memory`` are the placement's ``host`` share (what a policy gave each
worker); without one, the job runs at the profile's reference point (``T = 1``). Profiles are of
one-GPU jobs; a multi-GPU job is assumed to have the same per-GPU sensitivity. The model name
(``spec.model``) is matched case-insensitively; a model without a profile is an error naming it.
"""

from __future__ import annotations

import csv
import functools
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources

import numpy as np

from dlsched.perf.model import Placement
from dlsched.workload.job import HostShare, JobSpec

REFERENCE = HostShare(3.0, 62.5)  # GPU-proportional on 8 GPUs / 24 CPUs / 500 GB: T = 1


@dataclass(frozen=True)
class SensitivityProfile:
    """Relative throughput of one model on a grid: ``table[i, j]`` at ``cpus[i]`` CPUs and
    ``memory_gb[j]`` GB of host memory per GPU."""

    model: str
    cpus: np.ndarray
    memory_gb: np.ndarray
    table: np.ndarray

    def throughput(self, host: HostShare) -> float:
        """``T`` at ``host`` (bilinear between grid points, held beyond the grid)."""
        by_memory = [np.interp(host.cpus, self.cpus, self.table[:, j])
                     for j in range(len(self.memory_gb))]
        return float(np.interp(host.memory_gb, self.memory_gb, by_memory))

    def best_case_demand(self) -> HostShare:
        """Synergy's optimistic profiling (§4.1): the CPU curve is profiled with all memory
        (the dataset cached), and the demand is the fewest CPUs that reach its peak; then the
        least memory that keeps that throughput at those CPUs."""
        peak_row = self.table[:, -1]
        i = int(np.flatnonzero(peak_row >= peak_row.max() - 1e-9)[0])
        j = int(np.flatnonzero(self.table[i] >= peak_row[i] - 1e-9)[0])
        return HostShare(float(self.cpus[i]), float(self.memory_gb[j]))


def _profile_text() -> str:
    path = resources.files("dlsched") / "data" / "profiles" / "synergy"
    return (path / "cpu_mem_sensitivity.csv").read_text()


@functools.cache
def load_profiles() -> Mapping[str, SensitivityProfile]:
    """Model name (lower-case) -> its one-GPU profile."""
    points: dict[str, dict[tuple[float, float], float]] = {}
    for row in csv.DictReader(_profile_text().splitlines()):
        if int(row["gpus"]) != 1:
            continue
        grid = points.setdefault(row["model"].casefold(), {})
        grid[(float(row["cpus"]), float(row["mem_gb"]))] = float(row["relative_throughput"])
    profiles = {}
    for model, grid in sorted(points.items()):
        cpus = np.array(sorted({c for c, _ in grid}))
        memory = np.array(sorted({m for _, m in grid}))
        table = np.array([[grid[(c, m)] for m in memory] for c in cpus])
        profiles[model] = SensitivityProfile(model, cpus, memory, table)
    return profiles


class SynergyThroughputs:
    """Speed from CPUs and memory per GPU; see the module docstring for the rules."""

    name = "synergy"

    def profile(self, spec: JobSpec) -> SensitivityProfile:
        profile = load_profiles().get((spec.model or "").casefold())
        if profile is None:
            raise KeyError(f"job {spec.job_id}: synergy profiles have no model "
                           f"{spec.model!r} (known: {', '.join(load_profiles())})")
        return profile

    def rate(self, spec: JobSpec, placement: Placement) -> float:
        if not placement.gpu_types:
            return 0.0
        host = placement.host if placement.host is not None else REFERENCE
        scale = placement.num_workers / max(spec.num_gpus, 1)
        return scale * self.profile(spec).throughput(host)

    def reference_rate(self, spec: JobSpec) -> float:
        self.profile(spec)  # an unknown model is an error here too
        return 1.0
