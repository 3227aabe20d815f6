"""Retry with exponential backoff after a failed attempt: a PreFilter and wake-up plugin the
service adds to every policy's profile.

Rule (after Kubernetes' Job controller, ``backoffLimit``: "exponential back-off delay (10s, 20s,
40s ...) capped at six minutes"): after the k-th failed attempt of a job (k >= 1; preemptions
and service restarts do not count), the job may not start again before
``failure time + min(cap, base * 2 ** (k - 1))``. Meanwhile it waits in its queue with the
reason ``backing off after k failed attempts``, and the plugin asks for a cycle when the delay
ends. Under strict FIFO a backing-off head job holds its queue, as any head job that cannot
start does. The delays live in memory: a restarted service retries at once.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from dlsched.scheduling.framework import SUCCESS, Status, unschedulable
from dlsched.scheduling.state import CycleState
from dlsched.workload.job import Job


def backoff_delay(failures: int, base: float, cap: float) -> float:
    """Seconds to wait after the ``failures``-th failed attempt (0 when ``base`` is 0)."""
    if failures < 1 or base <= 0:
        return 0.0
    return min(cap, base * 2.0 ** min(failures - 1, 60))


@dataclass
class RetryBackoff:
    base: float
    cap: float
    not_before: dict[str, float] = field(default_factory=dict)
    reasons: dict[str, str] = field(default_factory=dict)
    name: str = "retry-backoff"

    def failed(self, job_id: str, failures: int, now: float) -> float:
        """Note a failed attempt at ``now``; returns the delay."""
        delay = backoff_delay(failures, self.base, self.cap)
        if delay > 0:
            self.not_before[job_id] = now + delay
            self.reasons[job_id] = (f"backing off after {failures} failed attempt"
                                    f"{'s' if failures > 1 else ''}: retries {delay:g} s after "
                                    "the failure")
        return delay

    def forget(self, job_id: str) -> None:
        self.not_before.pop(job_id, None)
        self.reasons.pop(job_id, None)

    # -- PreFilter ------------------------------------------------------------------------
    def pre_filter(self, state: CycleState, job: Job) -> Status:
        until = self.not_before.get(job.job_id)
        if until is None:
            return SUCCESS
        if state.now >= until:
            self.forget(job.job_id)
            return SUCCESS
        return unschedulable(self.name, self.reasons[job.job_id])

    # -- Wake-ups -------------------------------------------------------------------------
    def next_wakeup(self, state: CycleState) -> float | None:
        later = [t for t in self.not_before.values() if t > state.now]
        return min(later) if later else None
