"""After a crash (the loop stops dead, workers left running, nothing shut down: what ``kill -9``
leaves) a new service on the same database restores each job's attained service, done work and
attempt count, so Tiresias (Gu et al., NSDI'19 §3.2, 2D-LAS) ranks the jobs as the old service
did: a job demoted while it ran stays demoted, and the newer job in queue 0 goes first."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from runtime_helpers import crash, kill_strays, wait_for, worker

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
        assert restored.status is JobStatus.PREEMPTED  # queue 1, behind the newer job
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


def test_a_preempted_job_stays_preempted_across_a_restart(tmp_path: Path, out: Path,
                                                           services: list[Service]) -> None:
    """Session 25: after ``kill -9`` and a restart, a job Tiresias had preempted (stopped,
    waiting to resume from its checkpoint) was listed as ``pending``, as if it had never run;
    a job that was running and whose workers died with the service was ``pending`` too, where
    a SIGTERM shutdown leaves it ``preempted``."""
    options = {"thresholds": str(THRESHOLD)}
    old = Service(replace(config(tmp_path), policy_options=options))
    old.start()
    first = submit(old, SubmitRequest(command=worker("sleep", out, 60), gpus=1)).id
    wait_for(lambda: old.core.jobs[first].attained_service(old.clock.now()) > THRESHOLD, 10,
             "the first job to be demoted")
    second = submit(old, SubmitRequest(command=worker("sleep", out, 60), gpus=1)).id
    # and launched (its attempt begun): "running" is committed when the core starts it, the
    # launch waits for the first job's workers to exit after the SIGTERM that follows
    wait_for(lambda: (row := old.store.job(second)) and row.status == "running"
             and row.attempts == 1
             and (first_row := old.store.job(first)) and first_row.status == "preempted",
             10, "the second job to preempt the first and launch")
    crash(old)
    kill_strays(tmp_path)  # the machine rebooted: the second job's workers died too

    new = Service(replace(config(tmp_path), policy_options=options))
    services.append(new)
    new.start()
    rows = {job_id: new.store.job(job_id) for job_id in (first, second)}
    assert {job_id: (row.status, row.preemptions, row.attempts)  # type: ignore[union-attr]
            for job_id, row in rows.items()} == {first: ("preempted", 1, 1),
                                                 second: ("preempted", 0, 1)}
    preempted_at = next(e.time for e in new.store.events(first) if e.kind == "preempted")
    with new.locked() as now:
        assert {new.core.jobs[j].status for j in rows} == {JobStatus.PREEMPTED}
        # Waiting since its preemption (Kueue's requeue backoff counts from it), the other
        # since the restart put it back in its queue.
        assert new.core.jobs[first].queued_since == preempted_at
        assert preempted_at < new.core.jobs[second].queued_since <= now
    wait_for(lambda: new.core.jobs[second].status is JobStatus.RUNNING, 10, "a resume")
