"""``kill -9`` of the service in the middle of a transition (a cancel, a preemption, a resize,
a start waiting for its victims), then a restart on the same database: no job is lost or runs
twice, every job shows the right state, attempts and GPUs, and no worker of the old service
runs on unseen, holding GPUs the new one gives to other jobs (``docs/runtime.md``, "State and
recovery")."""

from __future__ import annotations

import contextlib
import json
import sys
import threading
import time
from pathlib import Path

import pytest
from runtime_helpers import crash, kill_strays, wait_for, worker

from dlsched.runtime.commands import cancel, submit
from dlsched.runtime.executors.processes import alive
from dlsched.runtime.models import SubmitRequest
from dlsched.runtime.recovery import RESTARTED_UNLAUNCHED
from dlsched.runtime.server import local_cluster
from dlsched.runtime.service import STATE_SAVE_SECONDS, Service, ServiceConfig
from dlsched.workload.job import JobStatus

TIRESIAS = {"thresholds": "1"}  # GPU-seconds: a job is demoted after a second on one GPU


def config(root: Path, grace: float, policy: str = "fifo",
           options: dict[str, str] | None = None, gpus: int = 1) -> ServiceConfig:
    return ServiceConfig(local_cluster(gpus, "T4"), root / "data", policy=policy,
                         policy_options=options or {}, grace_seconds=grace, poll_seconds=0.05,
                         retry_backoff=0.0)


def started_pid(out: Path, job_id: str, attempt: int = 1) -> int:
    """The pid of a job's rank-0 worker, once it has started."""
    path = out / f"{job_id}-a{attempt}-r0.json"
    wait_for(path.exists, 15, f"{job_id}'s attempt {attempt} to start")
    return int(json.loads(path.read_text())["pid"])


def test_a_job_cancelled_as_the_service_dies_leaves_no_worker_behind(
        tmp_path: Path, out: Path, services: list[Service]) -> None:
    """Its workers ignore SIGTERM and have 30 s of grace when the service dies: the restart
    left them running (an ended job's attempt was never looked at), on a GPU it gave to the
    next job, and the attempt open forever."""
    old = Service(config(tmp_path, grace=30.0))
    old.start()
    stubborn = submit(old, SubmitRequest(command=worker("stubborn", out), gpus=1)).id
    pid = started_pid(out, stubborn)
    cancel(old, stubborn)
    crash(old)
    assert alive(pid)

    new = Service(config(tmp_path, grace=0.5))
    services.append(new)
    new.start()
    # Stopped before anything else starts (its process group's leader is waited for; the
    # worker itself, a member of the group, dies with it).
    wait_for(lambda: not alive(pid), 1.0, "the cancelled job's worker to be gone")
    attempt = new.store.attempts(stubborn)[-1]
    assert (attempt.end_time is not None, attempt.outcome) == (True, "stopped")
    assert new.store.job(stubborn).status == "cancelled"  # type: ignore[union-attr]
    after = submit(new, SubmitRequest(command=worker("sleep", out, 30), gpus=1)).id
    wait_for(lambda: new.core.jobs[after].status is JobStatus.RUNNING, 10, "the next job")


def test_a_start_waiting_for_its_victim_saves_no_service_it_never_had(
        tmp_path: Path, out: Path, services: list[Service]) -> None:
    """Tiresias preempts a demoted job for a new one, whose start waits while the victim
    ignores SIGTERM. The periodic save wrote the waiting job's service as if it ran (1.3
    GPU-seconds for a job with no attempt, in a run by hand): a restart during the wait
    demoted it below its victim, which then ran first and kept its GPU."""
    old = Service(config(tmp_path, 30.0, "tiresias", TIRESIAS))
    old.start()
    victim = submit(old, SubmitRequest(command=worker("stubborn", out), gpus=1)).id
    started_pid(out, victim)
    wait_for(lambda: old.core.jobs[victim].attained_service(old.clock.now()) > 1.2, 10,
             "the victim to be demoted")
    waiting = submit(old, SubmitRequest(command=worker("sleep", out, 30), gpus=1)).id
    wait_for(lambda: old.core.reason_for(old.core.jobs[waiting]).startswith("waiting for"), 10,
             "the new job to wait for its victim")
    wait_for(lambda: (row := old.store.job(waiting)) and row.status == "running", 5, "a save")
    time.sleep(2.5 * STATE_SAVE_SECONDS)  # saved again while it waits
    crash(old)
    row = old.store.job(waiting)
    assert row is not None and (row.attempts, row.attained_service, row.done_work) == (0, 0, 0)

    new = Service(config(tmp_path, 0.5, "tiresias", TIRESIAS))
    services.append(new)
    new.start()
    wait_for(lambda: new.core.jobs[waiting].status is JobStatus.RUNNING, 10, "its start")
    assert new.core.jobs[victim].status is JobStatus.PREEMPTED
    # It never ran: no "it resumes from its checkpoint" (attempt 1 is its first)
    assert ("requeued", RESTARTED_UNLAUNCHED) in [(e.kind, e.message)
                                                  for e in new.store.events(waiting)]


def test_a_job_that_completed_while_no_service_ran_ends_when_its_workers_did(
        tmp_path: Path, out: Path, services: list[Service]) -> None:
    """Its attempt was closed, and the job finished, at the restart: a 3 s job that
    completed during a 10 s outage showed an 18 s run time and JCT in ``GET /v1/jobs/ID``
    and ``history export``. The wrappers' status files say when the workers exited."""
    old = Service(config(tmp_path, grace=2.0))
    old.start()
    job = submit(old, SubmitRequest(command=worker("sleep", out, 0.5), gpus=1)).id
    started_pid(out, job)
    crash(old)
    status = wait_for(lambda: next((tmp_path / "data" / "jobs" / job).glob("*.exit"), None), 10,
                      "the worker to exit")
    time.sleep(3.0)  # the outage

    new = Service(config(tmp_path, grace=2.0))
    services.append(new)
    new.start()
    row, attempt = new.store.job(job), new.store.attempts(job)[-1]
    assert row is not None and attempt.end_time is not None and row.finish_time is not None
    assert (row.status, attempt.outcome) == ("finished", "succeeded")
    exited = status.stat().st_mtime - new.clock.epoch
    assert row.finish_time == attempt.end_time == pytest.approx(exited, abs=0.01)
    assert new.clock.now() - row.finish_time > 2.5


# Checkpoints for 4 s on SIGTERM, then exits 0 (as dlsched.job does when stopped); touches
# its argument once it can take a SIGTERM.
SLOW_CHECKPOINT = ("import pathlib, signal, sys, time\n"
                   "signal.signal(signal.SIGTERM, lambda *_: (time.sleep(4), sys.exit(0)))\n"
                   "pathlib.Path(sys.argv[1]).touch()\n"
                   "time.sleep(60)")


def test_workers_stopping_for_a_resize_are_not_adopted_as_running(
        tmp_path: Path, out: Path, services: list[Service]) -> None:
    """Optimus grows an elastic job from 1 to 2 GPUs; the service dies while the old attempt
    checkpoints. The restart adopted those workers as the job's running attempt (the job was
    still ``running``), so once they exited 0 after their checkpoint the job was recorded
    finished, its work not done (under a policy that does not resize it again at once: the
    operator restarted with fifo). The stop is recorded now: they are stopped, the attempt
    closed ``stopped``, and the job resumes from its checkpoint."""
    optimus = ServiceConfig(local_cluster(2, "T4"), tmp_path / "data", policy="optimus",
                            policy_options={"elastic": "declared"}, grace_seconds=20.0,
                            poll_seconds=0.05, retry_backoff=0.0)
    old = Service(optimus)
    old.start()
    blocker = submit(old, SubmitRequest(command=worker("sleep", out, 60), gpus=1)).id
    ready = out / "ready"
    command = [sys.executable, "-c", SLOW_CHECKPOINT, str(ready)]
    elastic = submit(old, SubmitRequest(command=command, gpus=1, min_gpus=1, max_gpus=2)).id
    wait_for(ready.exists, 10, "the elastic job to run")
    cancel(old, blocker)
    wait_for(lambda: "resized" in [e.kind for e in old.store.events(elastic)], 10, "a resize")
    crash(old)

    new = Service(config(tmp_path, grace=1.0, gpus=2))  # fifo: no resize of its own
    services.append(new)
    new.start()
    first = new.store.attempts(elastic)[0]
    assert (first.outcome, first.stop_time is not None) == ("stopped", True)
    assert "adopted" not in [e.kind for e in new.store.events(elastic)]
    wait_for(lambda: len(new.store.attempts(elastic)) == 2, 10, "its next attempt")
    time.sleep(1.0)
    assert new.store.job(elastic).status == "running"  # type: ignore[union-attr]


class _Killed(Exception):
    """The service process dies here (``kill -9``)."""


def test_a_kill_9_during_a_sigterm_shutdown_does_not_finish_the_checkpointing_job(
        tmp_path: Path, out: Path, services: list[Service]) -> None:
    """``dlsched serve`` got SIGTERM, told the workers to stop and waited for them to
    checkpoint; a ``kill -9`` then (an impatient operator, systemd's stop timeout) left the
    jobs ``running`` in the store: the restart adopted the checkpointing workers and recorded
    the job finished when they exited 0 (by hand: a 60 s job finished after 11 s)."""
    old = Service(config(tmp_path, grace=20.0))
    old.start()
    ready = out / "ready"
    job = submit(old, SubmitRequest(command=[sys.executable, "-c", SLOW_CHECKPOINT,
                                             str(ready)], gpus=1)).id
    wait_for(ready.exists, 10, "the job to run")
    draining = threading.Event()

    def killed_while_draining(timeout: float) -> list:
        draining.set()
        raise _Killed

    old.executor.drain = killed_while_draining  # type: ignore[method-assign]
    with contextlib.suppress(_Killed):
        old.shutdown()
    assert draining.is_set()
    old.store.close()
    old.dir_lock.release()

    new = Service(config(tmp_path, grace=1.0))
    services.append(new)
    new.start()
    assert "adopted" not in [e.kind for e in new.store.events(job)]
    assert new.store.attempts(job)[0].outcome == "stopped"
    wait_for(lambda: len(new.store.attempts(job)) == 2
             and new.store.job(job).status == "running", 10, "its next attempt")  # type: ignore[union-attr]


def test_an_attempt_whose_workers_died_with_the_service_ends_when_it_was_last_alive(
        tmp_path: Path, out: Path, services: list[Service]) -> None:
    """A reboot: the service and the workers die together, the service comes back 3 s
    later. The attempt was closed at the restart, so the outage counted as run time (the
    ``duration`` ``history export`` sums for the replay's work); it ends now when the old
    service last committed (``alive_at``: at most a second before it died)."""
    old = Service(config(tmp_path, grace=2.0))
    old.start()
    job = submit(old, SubmitRequest(command=worker("sleep", out, 60), gpus=1)).id
    started_pid(out, job)
    time.sleep(1.5 * STATE_SAVE_SECONDS)  # a save while it runs
    crash(old)
    kill_strays(tmp_path)
    last_alive = old.store.alive_at()
    assert last_alive is not None and old.clock.now() - last_alive <= 2 * STATE_SAVE_SECONDS
    time.sleep(3.0)  # the outage

    new = Service(config(tmp_path, grace=2.0))
    services.append(new)
    new.start()
    attempt = new.store.attempts(job)[0]
    assert (attempt.outcome, attempt.end_time) == ("abandoned", last_alive)
    assert new.clock.now() - last_alive > 2.5


def test_an_adopted_job_keeps_the_service_its_workers_had_while_no_service_ran(
        tmp_path: Path, out: Path, services: list[Service]) -> None:
    """The workers ran on through a 3 s outage and were adopted; their service and progress
    counted only from the restart (Tiresias would rank the job as 3 GPU-s younger)."""
    old = Service(config(tmp_path, grace=2.0, gpus=2))
    old.start()
    job = submit(old, SubmitRequest(command=worker("sleep", out, 60), gpus=2)).id
    started_pid(out, job)
    time.sleep(1.5 * STATE_SAVE_SECONDS)
    crash(old)
    time.sleep(3.0)  # the outage; the workers run on

    new = Service(config(tmp_path, grace=2.0, gpus=2))
    services.append(new)
    new.start()
    assert "adopted" in [e.kind for e in new.store.events(job)]
    with new.locked() as now:
        ran = now - new.store.attempts(job)[0].start_time
        adopted = new.core.jobs[job]
        assert adopted.attained_service(now) == pytest.approx(2 * ran, abs=2 * 0.5)
        assert adopted.work_done(now) == pytest.approx(ran, abs=0.5)
