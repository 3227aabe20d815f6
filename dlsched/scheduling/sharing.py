"""Which running jobs hold part of each shared GPU (space sharing: Gavel's co-location,
Gandiva's packing), in arrival order. The core asks it who a job's partners are when the job
starts or leaves (their rates change) and what each worker shares its GPU with (``Placement``).
"""

from __future__ import annotations

from dlsched.workload.job import Job, JobSpec


class SharedGpus:
    def __init__(self) -> None:
        self._holders: dict[int, list[Job]] = {}

    def __bool__(self) -> bool:
        return bool(self._holders)

    def share(self, job: Job) -> list[Job]:
        """Record a job that holds part of its GPUs; the jobs already sharing them. A MIG job
        shares nothing: its instance is its own hardware."""
        if min(job.shares, default=1.0) >= 1.0 or job.spec.mig_profile is not None:
            return []  # every share whole (none: too)
        partners: list[Job] = []
        for gpu in job.allocation:
            holders = self._holders.setdefault(gpu, [])
            partners.extend(other for other in holders if other not in partners)
            holders.append(job)
        return partners

    def unshare(self, job: Job) -> list[Job]:
        """Forget a job's part of its GPUs; the jobs left sharing them."""
        partners: list[Job] = []
        for gpu in job.allocation:
            holders = self._holders.get(gpu)
            if holders is None or job not in holders:
                continue
            holders.remove(job)
            partners.extend(other for other in holders if other not in partners)
            if not holders:
                del self._holders[gpu]
        return partners

    def holders(self, gpu: int) -> tuple[Job, ...]:
        """The running jobs holding part of ``gpu``."""
        return tuple(self._holders.get(gpu, ()))

    def partners_of(self, job: Job) -> tuple[JobSpec | None, ...] | None:
        """Per worker, the spec of the first other job on its GPU; None when none shares."""
        if not self._holders or all(share >= 1.0 for share in job.shares):
            return None
        partners = tuple(next((other.spec for other in self._holders.get(g, ())
                               if other is not job), None) for g in job.allocation)
        return None if all(p is None for p in partners) else partners
