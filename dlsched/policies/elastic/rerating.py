"""Re-rating running jobs as their training progresses (Pollux OSDI'21 §3.1, §5.2).

Under the ``goodput`` throughput model a job's speed changes over training: the gradient noise
scale ``φ`` grows, the job re-picks a larger batch, and its goodput on the same GPUs changes
(``perf/goodput/throughput_model.py``). A model that says so (``progress_dependent = True``)
answers ``rate(spec, placement, progress)``; the scheduler core sets a job's rate once, at
launch, so the simulator must re-rate running jobs every round for the run to be faithful.

``progress_rate`` is that rate (pure). ``ReratingScheduler`` applies it after every cycle:
it folds the progress made so far at the old rate, sets the new one and re-arms the job's
completion (the old completion event goes stale with the job's ``epoch``). The rate then holds
until the next cycle (a round: 60 s for Pollux and Sia), a piecewise-constant approximation.

It is a stand-in for a hook in ``scheduling/scheduler.py`` (owned elsewhere): ``enable``
swaps it into a ``Simulator`` before ``run``. It touches only jobs the model re-rates.
"""

from __future__ import annotations

from typing import Any

from dlsched.perf.model import Placement, ThroughputModel
from dlsched.scheduling.decisions import CycleResult
from dlsched.scheduling.scheduler import CoreConfig, Scheduler
from dlsched.sim.executor import SimExecutor
from dlsched.sim.result import GoodputPoint
from dlsched.sim.simulator import Simulator
from dlsched.workload.job import Job

RELATIVE_CHANGE = 1e-6  # a smaller change keeps the rate (and the pending completion event)


def is_progress_dependent(model: ThroughputModel) -> bool:
    return bool(getattr(model, "progress_dependent", False))


def progress_rate(model: ThroughputModel, job: Job, placement: Placement, now: float) -> float:
    """The job's rate on ``placement`` at its progress at ``now`` (a fraction of its work)."""
    work = job.spec.work
    done = 0.0 if work <= 0 else min(max(job.work_done(now) / work, 0.0), 1.0)
    return float(model.rate(job.spec, placement, done))  # type: ignore[call-arg]


class ReratingScheduler(Scheduler):
    """The core, plus a re-rating of every running job after each cycle (module docstring).
    ``goodput_series`` gets a ``GoodputPoint`` per re-rating when the model can ``sample``."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.rerated = 0  # re-ratings applied (for tests and benchmarks)
        self.goodput_series: list[GoodputPoint] = []

    def cycle(self) -> CycleResult:
        result = super().cycle()
        if is_progress_dependent(self.throughput):
            now = self.clock.now()
            for job in self.running.values():
                self._rerate(job, now)
        return result

    def _rerate(self, job: Job, now: float) -> None:
        rate = progress_rate(self.throughput, job, self.placement_of(job), now)
        if abs(rate - job.rate) <= RELATIVE_CHANGE * max(job.rate, 1e-300):
            return
        job.done_work = job.work_done(now)
        job.progress_time = now
        job.rate = rate
        job.epoch += 1
        self.rerated += 1
        getattr(self.executor, "rerate", self.executor.start)(job, now)
        self._sample(job, now)

    def _sample(self, job: Job, now: float) -> None:
        sample = getattr(self.throughput, "sample", None)
        if sample is None:
            return
        work = job.spec.work
        point = sample(job.spec, self.placement_of(job), job.done_work / work if work else 0.0)
        self.goodput_series.append(GoodputPoint(now, job.job_id, len(job.allocation),
                                                point.progress, point.batch, point.efficiency,
                                                point.goodput))


def enable(sim: Simulator) -> Simulator:
    """Swap a ``ReratingScheduler`` into a simulator that has not run yet."""
    if sim.core.jobs:
        raise ValueError("enable re-rating before the simulation runs")
    old = sim.core
    sim.core = ReratingScheduler(old.cluster, old.profile, old.throughput, sim.clock,
                                 SimExecutor(sim.events),
                                 CoreConfig(restart_overhead=sim.config.restart_overhead))
    return sim
