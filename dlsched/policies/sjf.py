"""Shortest job first and shortest remaining time first.

Both use ORACLE durations: the job's true total work divided by its speed at its requested size on
the reference GPU (``ThroughputModel.reference_rate``), which no real scheduler knows in advance.
They are upper-bound baselines, as in the Tiresias and Gandiva papers' comparisons.
"""

from __future__ import annotations

from dlsched.perf.model import ThroughputModel
from dlsched.scheduling.plugins.preemption import Preemption, RankRule
from dlsched.scheduling.profile import Profile
from dlsched.scheduling.registry import at_least, register_policy
from dlsched.scheduling.state import CycleState
from dlsched.workload.job import Job, JobStatus


def oracle_seconds(state: CycleState, job: Job, remaining: bool) -> float:
    return _seconds(state.snapshot.throughput, job, remaining, state.now)


def _seconds(model: ThroughputModel, job: Job, remaining: bool, now: float) -> float:
    rate = model.reference_rate(job.spec)
    work = job.remaining_work(now) if remaining else job.spec.work
    return work / rate if rate > 0 else float("inf")


class ShortestFirst:
    """QueueSort by oracle duration (total, or remaining when ``remaining``), then FIFO.

    The key is ``static`` (the core keeps the queue sorted, issue 14): a job's total work never
    changes, and its remaining work does not change while it waits (progress stops; the core
    files a job again when a failure takes back work). The core passes the run's throughput
    model (``use_throughput``) to rate jobs it files without a cycle state."""

    def __init__(self, remaining: bool) -> None:
        self.remaining = remaining
        self.name = "shortest-remaining" if remaining else "shortest-total"
        self.static = True
        # Running jobs' keys: fixed for SJF; SRTF's only fall as jobs run (its preemption
        # keeps running jobs in a heap of past keys, scheduling/plugins/running_ranks.py).
        self.running_static = not remaining
        self.running_keys_fall = remaining
        self._model: ThroughputModel | None = None
        self.rank_rule = RankRule("srtf" if remaining else "sjf", "no more remaining time",
                                  "more remaining time, or as much and submitted later")

    def use_throughput(self, model: ThroughputModel) -> None:
        self._model = model

    def sort_key(self, state: CycleState | None, job: Job) -> tuple[float, float, str]:
        if state is not None:
            seconds = oracle_seconds(state, job, self.remaining)
        elif self._model is None:
            raise ValueError(f"{self.name}: a key without a cycle state needs the run's "
                             "throughput model (use_throughput)")
        else:  # a waiting job (the core's sorted queue): ``now`` does not move its work
            seconds = _seconds(self._model, job, self.remaining, job.progress_time)
        return (seconds, job.spec.submit_time, job.job_id)

    def key_now(self, job: Job, now: float) -> tuple[float, float, str]:
        """The key at ``now`` without a cycle state, running jobs too (a reason read between
        cycles: ``Preemption.wait_detail``)."""
        if self._model is None:
            raise ValueError(f"{self.name}: a key without a cycle state needs the run's "
                             "throughput model (use_throughput)")
        progress = now if job.status is JobStatus.RUNNING else job.progress_time
        return (_seconds(self._model, job, self.remaining, progress), job.spec.submit_time,
                job.job_id)


@register_policy("sjf")
def sjf(placement: str = "consolidated") -> Profile:
    """Shortest job first by oracle duration, non-preemptive; a job that does not fit is skipped."""
    return Profile("sjf", ShortestFirst(remaining=False), placement=placement)


@register_policy("srtf")
def srtf(placement: str = "consolidated", min_runtime: float = 0.0) -> Profile:
    """Shortest remaining time first by oracle duration, preempting longer-remaining jobs."""
    at_least(0, min_runtime=min_runtime)
    order = ShortestFirst(remaining=True)
    return Profile("srtf", order, plugins=(Preemption(order, min_runtime),), placement=placement)
