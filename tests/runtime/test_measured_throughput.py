"""``MeasuredThroughput`` (issue 3 item 4) and the runtime core around it: golden rates by
hand, a running job's rate following its reports (through the API), Optimus fitting measured
speeds, and down nodes kept out of every placement."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from runtime_helpers import Live, wait_for, worker
from test_service_e2e import submit, wait_status

from dlsched.cluster.cluster import Cluster, Node
from dlsched.perf.model import LinearScaling, Placement
from dlsched.runtime.core import Restored, RuntimeScheduler
from dlsched.runtime.throughput import MeasuredThroughput
from dlsched.scheduling.registry import build_policy
from dlsched.scheduling.scheduler import CoreConfig
from dlsched.workload.job import Job, JobSpec, JobStatus

SPEC = JobSpec("j", 0.0, 1, 100.0, min_gpus=1, max_gpus=8)


def on(workers: int) -> Placement:
    return Placement.single_node("T4", workers)


# (reports as (workers, samples/s), asked workers, expected rate in work units/s). The first
# size measured is the reference: its latest report = the model's rate there (linear: 1.0 at 1
# worker), so 50 samples/s there -> 50 samples per unit.
CASES = [
    ([], 4, 4.0),  # no report: the model (linear: 4 workers / 1 requested)
    ([(1, 50.0)], 1, 1.0),
    ([(1, 50.0)], 4, 4.0),  # nothing measured at 4: the model x 1-worker efficiency (1.0)
    ([(1, 50.0), (4, 120.0)], 4, 2.4),  # 120 / 50
    ([(1, 50.0), (4, 120.0)], 3, 1.8),  # nearest measured is 4 (efficiency 0.6): 3 x 0.6
    ([(1, 50.0), (4, 120.0)], 2, 2.0),  # nearest measured is 1 (efficiency 1.0): 2 x 1.0
    ([(1, 50.0), (4, 120.0)], 8, 4.8),
    ([(1, 50.0), (1, 25.0)], 1, 1.0),  # the reference size keeps the model's rate
    ([(1, 50.0), (4, 120.0), (1, 60.0)], 4, 2.0),  # its latest report recalibrates: 120 / 60
    ([(1, 50.0), (4, 120.0), (4, 100.0)], 4, 2.0),  # the latest report at a size wins
    ([(2, 60.0), (1, 45.0)], 1, 1.5),  # reference 2 workers (model 2.0): 30 samples per unit
    ([(1, 0.0)], 2, 2.0),  # a zero speed teaches nothing
]


@pytest.mark.parametrize(("reports", "workers", "expected"), CASES,
                         ids=[f"case{i}" for i in range(len(CASES))])
def test_measured_rates_by_hand(reports: list[tuple[int, float]], workers: int,
                                expected: float) -> None:
    model = MeasuredThroughput(LinearScaling())
    for size, speed in reports:
        model.record(SPEC, on(size), speed)
    assert model.rate(SPEC, on(workers)) == pytest.approx(expected)
    other = JobSpec("other", 0.0, 1, 100.0)
    assert model.rate(other, on(workers)) == workers  # per job: others keep the model
    model.forget("j")
    assert model.rate(SPEC, on(workers)) == workers


@dataclass
class Recorder:
    started: list[str] = field(default_factory=list)

    def start(self, job: Job, now: float) -> None:
        self.started.append(job.job_id)

    def stop(self, job: Job, now: float) -> None:
        pass


@dataclass
class FixedClock:
    time: float = 0.0

    def now(self) -> float:
        return self.time


def core(policy: str, options: dict[str, str], nodes: int = 1,
         model: MeasuredThroughput | None = None) -> RuntimeScheduler:
    cluster = Cluster("c", tuple(Node(f"n{i}", "T4", 4) for i in range(nodes)))
    return RuntimeScheduler(cluster, build_policy(policy, options),
                            model or MeasuredThroughput(LinearScaling()), FixedClock(),
                            Recorder(), CoreConfig(restart_overhead=0.0))


@pytest.mark.parametrize(("measured", "workers"), [
    ({}, 4),  # the linear model: every worker helps, Optimus gives all 4
    ({1: 100.0, 2: 80.0, 4: 60.0}, 1),  # measured: more workers are slower, it keeps 1
], ids=["model", "measured"])
def test_optimus_fits_the_measured_speeds(measured: dict[int, float], workers: int) -> None:
    model = MeasuredThroughput(LinearScaling())
    for size, speed in measured.items():
        model.record(SPEC, on(size), speed)
    scheduler = core("optimus", {"elastic": "declared"}, model=model)
    scheduler.submit(SPEC)
    scheduler.cycle()
    assert len(scheduler.jobs["j"].allocation) == workers


def test_down_nodes_are_kept_out_of_placement_and_come_back() -> None:
    scheduler = core("fifo", {}, nodes=2)
    assert scheduler.set_down_nodes(frozenset({0}))
    assert not scheduler.set_down_nodes(frozenset({0}))
    scheduler.submit(JobSpec("a", 0.0, 4, 10.0))
    scheduler.submit(JobSpec("b", 0.0, 4, 10.0))
    scheduler.cycle()
    assert [g // 4 for g in scheduler.jobs["a"].allocation] == [1] * 4
    assert scheduler.jobs["b"].status is JobStatus.PENDING
    assert scheduler.set_down_nodes(frozenset())
    scheduler.cycle()
    assert [g // 4 for g in scheduler.jobs["b"].allocation] == [0] * 4
    # A job larger than the live nodes is still accepted: a down node may come back.
    scheduler.set_down_nodes(frozenset({1}))
    assert scheduler.submit(JobSpec("c", 0.0, 8, 10.0)).status is JobStatus.PENDING


def test_refresh_rate_folds_progress_at_the_old_rate_first() -> None:
    model = MeasuredThroughput(LinearScaling())
    scheduler = core("fifo", {}, model=model)
    scheduler.submit(JobSpec("j", 0.0, 1, 100.0))
    scheduler.cycle()
    clock = scheduler.clock
    assert isinstance(clock, FixedClock)
    clock.time = 10.0
    job = scheduler.jobs["j"]
    model.record(job.spec, on(2), 40.0)  # reference: 2 workers = the model's 2.0, 20 per unit
    assert job.rate == 1.0  # not refreshed yet
    model.record(job.spec, scheduler.placement_of(job), 10.0)  # on its 1 worker: 0.5
    scheduler.refresh_rate("j")
    assert (job.done_work, job.rate) == (10.0, 0.5)
    assert job.work_done(14.0) == 12.0


def test_resubmit_restores_counters_and_the_static_order() -> None:
    scheduler = core("tiresias", {"thresholds": "100"})
    first = scheduler.resubmit(JobSpec("old", 0.0, 4, 1e6), Restored(150.0, 30.0, 2, True))
    scheduler.resubmit(JobSpec("new", 1.0, 4, 1e6), Restored())
    assert (first.attained, first.done_work, first.preemptions) == (150.0, 30.0, 2)
    assert [j.job_id for j in scheduler.waiting.ordered()] == ["new", "old"]  # queue 0 first


def test_reported_speed_sets_the_running_jobs_rate(live: Callable[..., Live],
                                                   out: Path) -> None:
    handle = live()
    job_id = submit(handle, worker("sleep", out, 30), 2)
    wait_status(handle, job_id, "running")
    # Its reference size: the latest report there (40) fixes the conversion; the last was
    # measured at another size (an old attempt's, after a resize) and is not a measurement.
    for speed, size in ((80.0, 2), (40.0, None), (500.0, 1)):
        response = handle.http.post(f"/v1/jobs/{job_id}/progress", json={
            "step": 1, "samples_per_second": speed, "world_size": size})
        assert response.status_code == 204
    service = handle.service
    with service.locked():
        job = service.core.jobs[job_id]
        assert service.throughput.measured(job_id, 2) == 40.0
        assert service.throughput.measured(job_id, 1) is None
        assert job.rate == 1.0  # seconds at its requested size: 1.0 by definition
        service.throughput.record(job.spec, on(4), 60.0)  # as if measured after a resize
        assert service.core.snapshot().throughput.rate(job.spec, on(4)) == pytest.approx(1.5)
    handle.http.delete(f"/v1/jobs/{job_id}")
    wait_for(lambda: service.throughput.measured(job_id, 2) is None, 10, "forgotten at the end")
