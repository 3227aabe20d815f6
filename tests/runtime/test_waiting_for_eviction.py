"""A job started by the policy while the jobs it preempted are still exiting waits for them;
the executor names them and the API and CLI say "waiting for preempted jobs to exit (IDS)"
(docs/runtime.md), until the victims' workers exit and its own start."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from runtime_helpers import Live, kill_strays, records, wait_for, worker
from test_runtime_cli import cli

from dlsched.cluster.cluster import Cluster, Node
from dlsched.perf.model import LinearScaling
from dlsched.runtime.core import RuntimeScheduler
from dlsched.runtime.executors.local import LaunchPlan, LocalExecutor, LocalSettings
from dlsched.scheduling.registry import build_policy
from dlsched.scheduling.scheduler import CoreConfig
from dlsched.tenancy.reasons import Reason
from dlsched.workload.job import Job, JobSpec

WAITING = Reason.WAITING_FOR_EVICTION.value


def _job(job_id: str, gpus: tuple[int, ...]) -> Job:
    job = Job(JobSpec(job_id, 0.0, len(gpus), 100.0))
    job.allocation = gpus
    return job


def test_executor_names_the_stopped_jobs_holding_a_queued_start(
        tmp_path: Path, out: Path) -> None:
    """old0 (GPU 0) and old1 (GPU 1) ignore SIGTERM; new asks GPUs 0-1 and waits for both,
    other (GPU 2) for none; once they are killed (grace 0.5 s) new starts and waits no more."""
    def plan(job_id: str) -> LaunchPlan:
        return LaunchPlan(1, tuple(worker("stubborn" if job_id.startswith("old") else "sleep",
                                          out, 0)),
                          str(tmp_path / job_id), tmp_path / f"{job_id}.log")

    cluster = Cluster("one", (Node("n0", "T4", 4),))
    executor = LocalExecutor(cluster, plan, LocalSettings(0.5, "", None))
    try:
        for job_id, gpu in (("old0", 0), ("old1", 1)):
            executor.start(_job(job_id, (gpu,)), 0.0)
        wait_for(lambda: records(out, "old0") and records(out, "old1"), 10, "stubborn workers")
        assert executor.waiting_for("old0") == ()  # running, not waiting
        for job_id, gpu in (("old1", 1), ("old0", 0)):
            executor.stop(_job(job_id, (gpu,)), 0.0)
        executor.signal_stops()  # as the service does once it has recorded the stops
        executor.start(_job("new", (0, 1)), 0.0)
        executor.start(_job("other", (2,)), 0.0)
        assert executor.waiting_for("new") == ("old0", "old1")
        assert executor.waiting_for("other") == ()  # launched at once
        wait_for(lambda: (executor.poll() or True) and not executor.waiting_for("new"), 5,
                 "the stubborn workers to be killed")
        assert "new" in executor.active_jobs
    finally:
        executor.drain(0.1)
        kill_strays(tmp_path)


def test_api_and_cli_show_the_victims_while_they_exit(
        live: Callable[..., Live], out: Path) -> None:
    """Tiresias (threshold 4 GPU-seconds) preempts the 4-GPU stubborn job for a 2-GPU one; the
    stubborn workers ignore SIGTERM for the 5 s grace period, during which the new job is
    started by the core but has no workers, and says why (every check below must fit in the
    grace: under load they took ~0.7 s, too close to a 1 s grace)."""
    handle = live(policy="tiresias", options={"thresholds": "4"}, grace=5.0)
    http = handle.http
    big = http.post("/v1/jobs", json={"command": worker("stubborn", out), "gpus": 4}).json()["id"]
    wait_for(lambda: len(records(out, big)) == 4, 10, "the stubborn job to run")
    wait_for(lambda: handle.service.core.jobs[big].attained_service(
        handle.service.clock.now()) > 4.4, 10, "the big job to pass the threshold")
    small = http.post("/v1/jobs", json={"command": worker("sleep", out, 0.1),
                                        "gpus": 2}).json()["id"]
    expected = f"{WAITING} ({big})"
    detail = wait_for(lambda: (d := http.get(f"/v1/jobs/{small}").json())["pending_reason"]
                      == expected and d, 5, "the small job to wait for the victim")
    assert detail["status"] == "running" and not records(out, small)
    listed = {j["id"]: j["pending_reason"] for j in http.get("/v1/jobs").json()}
    assert listed[small] == expected
    code, text = cli(handle.url, "jobs", small)
    assert code == 0 and f"why: {expected}" in text
    wait_for(lambda: records(out, small), 30, "the small job's workers after the SIGKILL")
    wait_for(lambda: http.get(f"/v1/jobs/{small}").json()["pending_reason"] == "", 30,
             "the reason to clear once it runs")


class FixedClock:
    time = 0.0

    def now(self) -> float:
        return self.time


class _HeldStarts:
    """An executor whose starts wait while ``holding`` (the victims still exit)."""

    def __init__(self) -> None:
        self.holding: set[str] = set()

    def start(self, job: Job, now: float) -> None:
        pass

    def stop(self, job: Job, now: float) -> None:
        pass

    def waiting_for(self, job_id: str) -> tuple[str, ...]:
        return ("victim",) if job_id in self.holding else ()


def test_a_job_waiting_for_its_victims_accrues_nothing_until_it_launches() -> None:
    # 4 GPUs; A (4 GPUs) ran 0 -> 10 (40 GPU-s). B (2 GPUs) arrives at 10 and preempts it under
    # Tiresias (threshold 1 GPU-s); B's launch waits for A's workers until 15. Through cycles at
    # 11-14 B's service stays 0 (it would be 2-8 GPU-s, past the threshold, if charged from its
    # start); from the launch at 15 it accrues: 2 GPUs x 1 s at 16.
    clock, executor = FixedClock(), _HeldStarts()
    cluster = Cluster("one", (Node("n0", "T4", 4),))
    core = RuntimeScheduler(cluster, build_policy("tiresias", {"thresholds": "1"}),
                            LinearScaling(), clock, executor, CoreConfig(restart_overhead=0.0))
    core.submit(JobSpec("A", 0.0, 4, 1e6))
    core.cycle()
    clock.time = 10.0
    executor.holding.add("B")
    core.submit(JobSpec("B", 10.0, 2, 1e6))
    core.cycle()
    assert set(core.running) == {"B"}
    for t in (11.0, 12.0, 13.0, 14.0):
        clock.time = t
        core.cycle()
        assert core.jobs["B"].attained_service(t) == 0.0
        assert set(core.running) == {"B"}  # A does not preempt it back
    clock.time = 15.0
    executor.holding.clear()
    core.launched("B", 15.0)
    assert core.jobs["B"].attained_service(16.0) == pytest.approx(2.0)
    assert core.jobs["B"].work_done(16.0) == pytest.approx(1.0)  # 1 s at the linear rate


class _Reserving(_HeldStarts):
    """The Ray executor's other wait: nothing to exit, but Ray has not reserved the GPUs."""

    def waiting_for(self, job_id: str) -> tuple[str, ...]:
        return ()

    def unlaunched_reason(self, job_id: str) -> str:
        return "waiting for Ray to reserve its GPUs" if job_id in self.holding else ""


def test_a_job_whose_gpus_are_not_reserved_yet_accrues_nothing_and_says_why() -> None:
    clock, executor = FixedClock(), _Reserving()
    cluster = Cluster("one", (Node("n0", "T4", 4),))
    core = RuntimeScheduler(cluster, build_policy("tiresias", {"thresholds": "1"}),
                            LinearScaling(), clock, executor, CoreConfig(restart_overhead=0.0))
    executor.holding.add("B")
    core.submit(JobSpec("B", 0.0, 2, 1e6))
    core.cycle()
    for t in (1.0, 2.0, 3.0):
        clock.time = t
        core.cycle()
        assert core.jobs["B"].attained_service(t) == 0.0
    assert core.reason_for(core.jobs["B"]) == "waiting for Ray to reserve its GPUs"
    executor.holding.clear()
    core.launched("B", 3.0)
    assert core.reason_for(core.jobs["B"]) == ""
    assert core.jobs["B"].attained_service(4.0) == pytest.approx(2.0)
