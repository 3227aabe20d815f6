"""GPU use now, per GPU type: the one accounting that ``GET /v1/cluster`` and ``/metrics``
both report, so the two never disagree (``docs/runtime.md``, "GPU accounting").

- ``allocated``: the compute the running jobs hold, each worker its share of its GPU: a whole
  GPU 1, a fraction its ``gpu_share``, a MIG instance its compute slices / 7 (``docs/mig.md``).
  The queues' ``gpus_allocated`` and the utilization chart count the same way.
- ``in_use``: GPUs holding at least one worker, whole or in part; ``partly_used``: those of
  them with compute left over (fractions, MIG instances).
- ``mig_slices_used`` / ``mig_slices``: compute slices held by MIG instances, and all the
  slices of the MIG-capable GPUs (7 each).

The core books a GPU in MIG mode whole (no whole-GPU or fractional job lands there): it is in
use, but not all its compute is allocated. Counting it as one whole GPU allocated in one
endpoint and as its slices in the other made ``/v1/cluster`` and ``/metrics`` disagree.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from dlsched.cluster.cluster import Cluster
from dlsched.mig.profiles import COMPUTE_SLICES, mig_gpu_type
from dlsched.workload.job import Job

WHOLE = 1.0 - 1e-9  # a GPU whose shares add up to this is fully used


@dataclass(frozen=True)
class GpuUsage:
    """One GPU type's use (see the module docstring)."""

    total: int
    allocated: float
    in_use: int
    partly_used: int
    mig_slices_used: int
    mig_slices: int


def held_shares(jobs: list[Job]) -> dict[int, float]:
    """Each GPU that holds a worker: the shares of its compute the workers hold."""
    held: dict[int, float] = defaultdict(float)
    for job in jobs:
        for gpu, share in zip(job.allocation, job.shares, strict=True):
            held[int(gpu)] += share
    return held


def mig_slices_held(jobs: list[Job]) -> dict[int, int]:
    """Each GPU's compute slices held by MIG instances (a MIG worker's share is slices / 7)."""
    slices: dict[int, int] = defaultdict(int)
    for job in jobs:
        if job.spec.mig_profile:
            for gpu, share in zip(job.allocation, job.shares, strict=True):
                slices[int(gpu)] += round(share * COMPUTE_SLICES)
    return slices


def gpu_usage(cluster: Cluster, jobs: list[Job]) -> dict[str, GpuUsage]:
    """Per GPU type of ``cluster`` (every type, idle ones too), the use of the running
    ``jobs``."""
    held, slices = held_shares(jobs), mig_slices_held(jobs)
    used: dict[str, list[float]] = defaultdict(list)
    mig_used: dict[str, int] = defaultdict(int)
    for gpu, share in held.items():
        gpu_type = cluster.nodes[int(cluster.gpu_node[gpu])].gpu_type
        used[gpu_type].append(share)
        mig_used[gpu_type] += slices.get(gpu, 0)
    return {gpu_type: GpuUsage(
        total=total, allocated=round(sum(used[gpu_type]), 6), in_use=len(used[gpu_type]),
        partly_used=sum(share < WHOLE for share in used[gpu_type]),
        mig_slices_used=mig_used[gpu_type],
        mig_slices=COMPUTE_SLICES * total if mig_gpu_type(gpu_type) is not None else 0)
        for gpu_type, total in cluster.gpus_by_type().items()}


def cluster_usage(by_type: dict[str, GpuUsage]) -> GpuUsage:
    """The whole cluster's use: the sum over its GPU types."""
    items = list(by_type.values())
    return GpuUsage(total=sum(u.total for u in items),
                    allocated=round(sum(u.allocated for u in items), 6),
                    in_use=sum(u.in_use for u in items),
                    partly_used=sum(u.partly_used for u in items),
                    mig_slices_used=sum(u.mig_slices_used for u in items),
                    mig_slices=sum(u.mig_slices for u in items))
