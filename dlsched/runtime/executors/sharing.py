"""What a worker of a fractional-GPU or MIG job gets, as a device plugin would give it: the
environment (local executor) and the Ray resources (Ray executor). ``docs/sharing.md``, runtime.

Per worker, on top of the contract (``base.py``):

- a **MIG** job: ``CUDA_VISIBLE_DEVICES=MIG-<uuid>``, the instance's UUID (a CUDA process sees
  exactly that instance; NVIDIA MIG user guide, "CUDA device enumeration"). On a machine
  without MIG the UUID is made up, stable per (node, GPU, start slice, profile), in the
  ``MIG-xxxxxxxx-xxxx-...`` form; ``DLSCHED_MIG_PROFILE`` and ``DLSCHED_MIG_START`` name the
  instance. MIG isolates compute and memory in hardware: no MPS variable is set.
- a **fraction** of a GPU (``gpu_share`` < 1, shared through MPS):
  ``CUDA_MPS_ACTIVE_THREAD_PERCENTAGE`` = the share in percent (the MPS client's limit on the
  SMs it may use; NVIDIA MPS docs, section 5.2), and a memory limit.
- a **GPU memory limit** (any job that asks ``gpu_memory_gb``, and a fraction without one
  gets its share of the GPU's memory): ``CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=<MiB>M`` (MPS's
  per-client device-memory limit, for the worker's only visible device 0),
  ``DLSCHED_GPU_MEMORY_GB`` and ``DLSCHED_GPU_MEMORY_FRACTION``: the fraction of the GPU's
  memory, which ``dlsched.job.torch.device_for`` hands to PyTorch's
  ``torch.cuda.set_per_process_memory_fraction`` when CUDA is present.
- CPUs and host memory per GPU: ``DLSCHED_CPUS`` and ``DLSCHED_MEMORY_GB`` (what was booked
  for the worker), and ``OMP_NUM_THREADS`` = the whole CPUs (unless the job's env sets it).

``DLSCHED_GPU_SHARE`` is always set for such a job (1 for a whole GPU).
"""

from __future__ import annotations

import math
import uuid
from dataclasses import dataclass

from dlsched.cluster.cluster import Cluster
from dlsched.workload.job import Job

MIG_NAMESPACE = uuid.UUID("5c1e2d3a-9b7f-4e21-8d0c-6a1f0b2e4d77")  # dlsched's, for fake UUIDs
GPU_SHARE = "DLSCHED_GPU_SHARE"
GPU_MEMORY_GB = "DLSCHED_GPU_MEMORY_GB"
GPU_MEMORY_FRACTION = "DLSCHED_GPU_MEMORY_FRACTION"
MPS_THREADS = "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"
MPS_MEMORY = "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"
RAY_FRACTION_DIGITS = 4  # Ray keeps fractional resources to 1/10,000


@dataclass(frozen=True)
class MigSlot:
    """The MIG instance a worker runs on: its profile and first memory slice."""

    profile: str
    start: int


@dataclass(frozen=True)
class Sharing:
    """What one job's workers ask for beyond a whole GPU (None of it: ``Sharing.of`` gives
    None and the executors behave as before)."""

    share: float = 1.0
    gpu_memory_gb: float = 0.0
    cpus: float = 0.0
    memory_gb: float = 0.0
    mig: tuple[MigSlot, ...] = ()  # per rank, for a MIG job

    @classmethod
    def of(cls, job: Job, mig: tuple[MigSlot, ...] = ()) -> Sharing | None:
        spec = job.spec
        host = job.host
        cpus = host.cpus if host is not None else spec.cpus_per_gpu
        memory = host.memory_gb if host is not None else spec.memory_gb_per_gpu
        if spec.gpu_share >= 1.0 and not (spec.gpu_memory_gb or cpus or memory or mig):
            return None
        return cls(spec.gpu_share, spec.gpu_memory_gb, cpus, memory, mig)

    def env(self, cluster: Cluster, gpu: int, rank: int) -> dict[str, str]:
        """The variables of the worker of rank ``rank`` on (global) GPU ``gpu``."""
        env = {GPU_SHARE: f"{self.share:g}"}
        if self.mig:
            slot = self.mig[rank]
            env.update({"CUDA_VISIBLE_DEVICES": mig_uuid(cluster, gpu, slot),
                        "DLSCHED_MIG_PROFILE": slot.profile,
                        "DLSCHED_MIG_START": str(slot.start)})
        else:
            env.update(self._share_env(cluster, gpu))
        if self.cpus > 0:
            env["DLSCHED_CPUS"] = f"{self.cpus:g}"
            env["OMP_NUM_THREADS"] = str(max(1, math.floor(self.cpus)))
        if self.memory_gb > 0:
            env["DLSCHED_MEMORY_GB"] = f"{self.memory_gb:g}"
        return env

    def _share_env(self, cluster: Cluster, gpu: int) -> dict[str, str]:
        env: dict[str, str] = {}
        if self.share < 1.0:
            env[MPS_THREADS] = str(max(1, round(100 * self.share)))
        total = float(cluster.gpu_memory_gb[gpu])
        limit = self.gpu_memory_gb or (self.share * total if self.share < 1.0 else 0.0)
        if limit > 0:
            env[GPU_MEMORY_GB] = f"{limit:g}"
            if total > 0:
                env[GPU_MEMORY_FRACTION] = f"{min(1.0, limit / total):.6g}"
            if self.share < 1.0:
                env[MPS_MEMORY] = f"0={max(1, math.floor(limit * 1024))}M"
        return env

    def ray_bundle(self) -> dict[str, float]:
        """The Ray resources of one worker's bundle: a fractional ``GPU`` (Ray schedules
        fractions of a GPU, down to 1/10,000), ``CPU`` and ``memory`` (bytes) when asked, and
        for a MIG worker the custom resource ``mig-<profile>`` (one instance; a node offers
        it as ``ray start --resources '{"mig-3g.20gb": 2}'``, like the NVIDIA device plugin's
        ``nvidia.com/mig-3g.20gb``) beside its compute slices' share of the GPU."""
        bundle: dict[str, float] = {}
        if self.mig:
            profile = self.mig[0].profile
            bundle[f"mig-{profile}"] = 1.0
            bundle["GPU"] = round(int(profile[0]) / 7, RAY_FRACTION_DIGITS)
        else:
            bundle["GPU"] = round(self.share, RAY_FRACTION_DIGITS) if self.share < 1.0 else 1.0
        if self.cpus > 0:
            bundle["CPU"] = self.cpus
        if self.memory_gb > 0:
            bundle["memory"] = float(math.ceil(self.memory_gb * 2**30))
        return bundle


def add_sharing_env(env: dict[str, str], sharing: Sharing | None, cluster: Cluster, gpu: int,
                    rank: int, job_env: dict[str, str] | None = None) -> dict[str, str]:
    """``env`` (a worker's full environment) with ``sharing``'s variables: they win over
    anything else, except ``OMP_NUM_THREADS`` when the job's own env sets it."""
    if sharing is None:
        return env
    extra = sharing.env(cluster, gpu, rank)
    if "OMP_NUM_THREADS" in (job_env or {}):
        extra.pop("OMP_NUM_THREADS", None)
    env.update(extra)
    return env


def mig_uuid(cluster: Cluster, gpu: int, slot: MigSlot) -> str:
    """A made-up MIG device UUID, stable for one instance (node, GPU index, start, profile)."""
    node = int(cluster.gpu_node[gpu])
    index = gpu - int(cluster.node_first_gpu[node])
    name = f"{cluster.nodes[node].name}/{index}/{slot.start}/{slot.profile}"
    return f"MIG-{uuid.uuid5(MIG_NAMESPACE, name)}"
