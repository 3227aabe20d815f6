"""Shortest job first and shortest remaining time first.

Both use ORACLE durations: the job's true total work divided by its speed at its requested size on
the reference GPU (``ThroughputModel.reference_rate``), which no real scheduler knows in advance.
They are upper-bound baselines, as in the Tiresias and Gandiva papers' comparisons.
"""

from __future__ import annotations

from dlsched.scheduling.plugins.preemption import Preemption
from dlsched.scheduling.profile import Profile
from dlsched.scheduling.registry import register_policy
from dlsched.scheduling.state import CycleState
from dlsched.workload.job import Job


def oracle_seconds(state: CycleState, job: Job, remaining: bool) -> float:
    rate = state.snapshot.throughput.reference_rate(job.spec)
    work = job.remaining_work(state.now) if remaining else job.spec.work
    return work / rate if rate > 0 else float("inf")


class ShortestFirst:
    """QueueSort by oracle duration (total, or remaining when ``remaining``), then FIFO."""

    def __init__(self, remaining: bool) -> None:
        self.remaining = remaining
        self.name = "shortest-remaining" if remaining else "shortest-total"
        self.static = False

    def sort_key(self, state: CycleState, job: Job) -> tuple[float, float, str]:
        return (oracle_seconds(state, job, self.remaining), job.spec.submit_time, job.job_id)


@register_policy("sjf")
def sjf(placement: str = "consolidated") -> Profile:
    """Shortest job first by oracle duration, non-preemptive; a job that does not fit is skipped."""
    return Profile("sjf", ShortestFirst(remaining=False), placement=placement)


@register_policy("srtf")
def srtf(placement: str = "consolidated", min_runtime: float = 0.0) -> Profile:
    """Shortest remaining time first by oracle duration, preempting longer-remaining jobs."""
    order = ShortestFirst(remaining=True)
    return Profile("srtf", order, plugins=(Preemption(order, min_runtime),), placement=placement)
