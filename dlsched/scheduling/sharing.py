"""Which running jobs hold part of each shared GPU (space sharing: Gavel's co-location,
Gandiva's packing), in arrival order. The core asks it who a job's partners are when the job
starts or leaves (their rates change) and what each worker shares its GPU with (``Placement``).
"""

from __future__ import annotations

from dlsched.workload.job import Job, JobSpec


class SharedGpus:
    def __init__(self) -> None:
        # GPU -> the running jobs holding part of it; empty when nothing is shared (the core
        # reads it for that: a test of the dict, not a ``__bool__`` call, at every start/stop)
        self.by_gpu: dict[int, list[Job]] = {}

    def __bool__(self) -> bool:
        return bool(self.by_gpu)

    def share(self, job: Job) -> list[Job]:
        """Record a job that holds part of its GPUs; the jobs already sharing them. A MIG job
        shares nothing: its instance is its own hardware."""
        if min(job.shares, default=1.0) >= 1.0 or job.spec.mig_profile is not None:
            return []  # every share whole (none: too)
        partners: list[Job] = []
        for gpu in job.allocation:
            holders = self.by_gpu.setdefault(gpu, [])
            partners.extend(other for other in holders if other not in partners)
            holders.append(job)
        return partners

    def unshare(self, job: Job) -> list[Job]:
        """Forget a job's part of its GPUs; the jobs left sharing them."""
        partners: list[Job] = []
        for gpu in job.allocation:
            holders = self.by_gpu.get(gpu)
            if holders is None or job not in holders:
                continue
            holders.remove(job)
            partners.extend(other for other in holders if other not in partners)
            if not holders:
                del self.by_gpu[gpu]
        return partners

    def holders(self, gpu: int) -> tuple[Job, ...]:
        """The running jobs holding part of ``gpu``."""
        return tuple(self.by_gpu.get(gpu, ()))

    def partners_of(self, job: Job) -> tuple[JobSpec | None, ...] | None:
        """Per worker, the spec of the first other job on its GPU; None when none shares."""
        if not self.by_gpu or all(share >= 1.0 for share in job.shares):
            return None
        partners = tuple(next((other.spec for other in self.by_gpu.get(g, ())
                               if other is not job), None) for g in job.allocation)
        return None if all(p is None for p in partners) else partners
