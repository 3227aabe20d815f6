"""First-in, first-out: jobs start in submission order; the head blocks the queue.

With ``strict=False`` a job that does not fit is skipped and later ones may start (greedy
first-fit, which can starve large jobs).
"""

from __future__ import annotations

from dlsched.scheduling.profile import Profile
from dlsched.scheduling.registry import register_policy
from dlsched.scheduling.state import CycleState
from dlsched.workload.job import Job


class SubmitOrder:
    """QueueSort by submission time, then job id."""

    name = "submit-order"
    static = True

    def sort_key(self, state: CycleState, job: Job) -> tuple[float, str]:
        return (job.spec.submit_time, job.job_id)


@register_policy("fifo")
def fifo(strict: bool = True, placement: str = "consolidated") -> Profile:
    """First-in, first-out; the head of the queue blocks the jobs behind it (strict=true)."""
    return Profile("fifo", SubmitOrder(), placement=placement, strict_fifo=strict)
