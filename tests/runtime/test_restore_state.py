"""After a crash (the loop stops dead, workers left running, nothing shut down: what ``kill -9``
leaves) a new service on the same database restores each job's attained service, done work and
attempt count, so Tiresias (Gu et al., NSDI'19 §3.2, 2D-LAS) ranks the jobs as the old service
did: a job demoted while it ran stays demoted, and the newer job in queue 0 goes first."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from runtime_helpers import kill_strays, wait_for, worker

from dlsched.runtime.commands import submit
from dlsched.runtime.models import SubmitRequest
from dlsched.runtime.server import local_cluster
from dlsched.runtime.service import STATE_SAVE_SECONDS, Service, ServiceConfig
from dlsched.workload.job import JobStatus

THRESHOLD = 1.0  # GPU-seconds: queue 0 below, queue 1 above


def config(root: Path) -> ServiceConfig:
    # min_runtime: a running job is never preempted here, so the demoted job is still running
    # (its service only in the periodic save) when the service dies.
    return ServiceConfig(local_cluster(1, "T4"), root / "data", policy="tiresias",
                         policy_options={"thresholds": str(THRESHOLD), "min_runtime": "600"},
                         grace_seconds=2.0, poll_seconds=0.05, retry_backoff=0.0)


def crash(service: Service) -> None:
    service._stop.set()  # the loop ends after its iteration; nothing is stopped or requeued
    service.wake.set()
    assert service._thread is not None
    service._thread.join(timeout=10)
    service.store.close()
    service.dir_lock.release()  # as the kernel does when a process dies


@pytest.fixture
def services(tmp_path: Path) -> Iterator[list[Service]]:
    started: list[Service] = []
    yield started
    if started:
        started[-1].shutdown()
    kill_strays(tmp_path)


def test_tiresias_priorities_survive_a_restart(tmp_path: Path, out: Path,
                                               services: list[Service]) -> None:
    old = Service(config(tmp_path))
    old.start()
    long = submit(old, SubmitRequest(command=worker("sleep", out, 60), gpus=1,
                                     work_seconds=100.0)).id
    wait_for(lambda: old.core.jobs[long].status is JobStatus.RUNNING, 10, "the first job")
    # Past the threshold, and saved while it runs (no event touches it meanwhile).
    wait_for(lambda: (row := old.store.job(long)) and row.attained_service > THRESHOLD + 0.2,
             THRESHOLD + 3 * STATE_SAVE_SECONDS + 5, "its service to be saved")
    short = submit(old, SubmitRequest(command=worker("sleep", out, 60), gpus=1)).id
    crash(old)
    kill_strays(tmp_path)  # the machine rebooted: no worker left to adopt
    saved = old.store.job(long)
    assert saved is not None and saved.status == "running"

    new = Service(config(tmp_path))
    services.append(new)
    new.start()
    wait_for(lambda: new.core.jobs[short].status is JobStatus.RUNNING, 10, "the newer job")
    with new.locked():
        restored = new.core.jobs[long]
        assert restored.status is JobStatus.PENDING  # queue 1, behind the newer job
        assert restored.attained >= saved.attained_service > THRESHOLD
        assert restored.done_work == pytest.approx(saved.done_work) and saved.done_work > 1.0
        assert new.active[long].attempts == 1  # its next attempt is number 2
    assert [e.kind for e in new.store.events(long)][-1] == "requeued"


def test_a_shutdown_is_no_preemption(tmp_path: Path, out: Path,
                                     services: list[Service]) -> None:
    """SIGTERM's shutdown counted a preemption (a crash counts none): a fifo service's history
    showed preemptions its replay never makes."""
    old = Service(config(tmp_path))
    old.start()
    job = submit(old, SubmitRequest(command=worker("sleep", out, 60), gpus=1)).id
    wait_for(lambda: old.core.jobs[job].status is JobStatus.RUNNING, 10, "the job to start")
    old.shutdown()
    new = Service(config(tmp_path))
    services.append(new)
    new.start()
    row = new.store.job(job)
    assert row is not None and (row.preemptions, new.core.jobs[job].preemptions) == (0, 0)
    assert ("requeued", "the service stopped") in [(e.kind, e.message)
                                                   for e in new.store.events(job)]
