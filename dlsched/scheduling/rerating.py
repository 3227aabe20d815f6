"""Re-rating running jobs whose speed depends on their training progress (Pollux OSDI'21
§3.1, §5.2).

Under the ``goodput`` throughput model a job's speed changes over training: the gradient noise
scale grows, the job re-picks a larger batch, and its goodput on the same GPUs changes. A model
that says so (``progress_dependent = True``) answers ``rate(spec, placement, progress)``. The
core sets a job's rate at launch; after every cycle a ``ProgressRerater`` folds the progress
made at the old rate, sets the rate at the job's current progress and re-arms its completion
through the executor (``rerate`` when it has one). The rate then holds until the next cycle (a
round: 60 s for Pollux and Sia): a piecewise-constant approximation of the continuous curve.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from dlsched.perf.model import Placement, ThroughputModel
from dlsched.scheduling.interfaces import Executor
from dlsched.workload.job import Job

RELATIVE_CHANGE = 1e-6  # a smaller change keeps the rate (and the pending completion event)


@dataclass(frozen=True, slots=True)
class GoodputPoint:
    """One job at one time under a progress-dependent model (Pollux §3): its GPUs, training
    ``progress`` (examples at ``M0``), global ``batch``, statistical ``efficiency`` and
    ``goodput`` (examples at ``M0`` per second) from then until the next point."""

    time: float
    job_id: str
    num_gpus: int
    progress: float
    batch: float
    efficiency: float
    goodput: float


def is_progress_dependent(model: ThroughputModel) -> bool:
    return bool(getattr(model, "progress_dependent", False))


def progress_rate(model: ThroughputModel, job: Job, placement: Placement, now: float) -> float:
    """The job's rate on ``placement`` at its progress at ``now`` (a fraction of its work)."""
    work = job.spec.work
    done = 0.0 if work <= 0 else min(max(job.work_done(now) / work, 0.0), 1.0)
    paused = getattr(model, "rate_after_pause", None)  # a model timing the round ahead
    if paused is not None:
        return float(paused(job.spec, placement, done, max(0.0, job.productive_from - now)))
    return float(model.rate(job.spec, placement, done))  # type: ignore[call-arg]


class ProgressRerater:
    """Re-rates the running jobs after each cycle; keeps a ``GoodputPoint`` per change when
    the model can ``sample`` one."""

    def __init__(self, model: ThroughputModel) -> None:
        self.model = model
        self.rerated = 0
        self.goodput_series: list[GoodputPoint] = []

    def rerate(self, running: Iterable[Job], placement_of: Callable[[Job], Placement],
               executor: Executor, now: float) -> None:
        for job in running:
            if job.run_started is None:
                continue
            placement = placement_of(job)
            rate = progress_rate(self.model, job, placement, now)
            if abs(rate - job.rate) <= RELATIVE_CHANGE * max(job.rate, 1e-300):
                continue
            job.done_work = job.work_done(now)
            job.progress_time = now
            job.rate = rate
            job.epoch += 1
            self.rerated += 1
            getattr(executor, "rerate", executor.start)(job, now)
            self._sample(job, placement, now)

    def _sample(self, job: Job, placement: Placement, now: float) -> None:
        sample = getattr(self.model, "sample", None)
        if sample is None:
            return
        work = job.spec.work
        point = sample(job.spec, placement, job.done_work / work if work else 0.0)
        self.goodput_series.append(GoodputPoint(now, job.job_id, len(job.allocation),
                                                point.progress, point.batch,
                                                point.efficiency, point.goodput))
