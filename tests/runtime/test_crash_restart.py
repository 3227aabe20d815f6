"""``kill -9`` the service (a real `serve` process) with jobs queued and running; a restart on
the same SQLite file adopts the workers that still run, records as finished the jobs whose
workers completed meanwhile, requeues the rest, and every job completes exactly once (one
completion line each) though the jobs do not guard themselves. The benchmark at scale is
``benchmarks/crash_10k.py``."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from runtime_helpers import job_statuses, kill_strays, service_info, wait_for, worker

from dlsched.runtime.recovery import COMPLETED

JOBS = 8


class ServiceProcess:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.procs: list[subprocess.Popen[bytes]] = []

    def start(self) -> str:
        data = self.root / "data"
        (data / "service.json").unlink(missing_ok=True)
        log = open(self.root / f"serve-{len(self.procs)}.log", "wb")  # noqa: SIM115
        proc = subprocess.Popen(
            [sys.executable, "-m", "dlsched.runtime.cli", "serve", "--gpus", "4", "--port", "0",
             "--data-dir", str(data), "--db", f"sqlite:///{self.root / 'state.db'}",
             "--grace-seconds", "3"], stdout=log, stderr=subprocess.STDOUT)
        self.procs.append(proc)
        info = wait_for(lambda: service_info(data / "service.json"), 30, "the service to start")
        assert info["pid"] == proc.pid
        wait_for(lambda: httpx.get(f"{info['url']}/healthz", timeout=30).status_code == 200, 30)
        return info["url"]

    def stop_all(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                try:
                    proc.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    proc.kill()


@pytest.fixture
def service_process(tmp_path: Path) -> Iterator[ServiceProcess]:
    handle = ServiceProcess(tmp_path)
    yield handle
    handle.stop_all()
    kill_strays(tmp_path)


def kill_9(service_process: ServiceProcess) -> None:
    proc = service_process.procs[-1]
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)


def test_kill_9_twice_runs_every_unguarded_job_exactly_once(
        service_process: ServiceProcess, out: Path) -> None:
    """Jobs that do not guard themselves (no checkpoint, no marker: a second run appends a
    second line), and a submission retried across a crash with the same Idempotency-Key."""
    url = service_process.start()
    seconds = [0.3, 1.0, 3.0, 15.0]  # the long ones run through a restart
    ids = [httpx.post(f"{url}/v1/jobs", timeout=30, json={
        "command": worker("once", out, seconds[i % 4]), "gpus": 1 + (i % 3 == 0)}).json()["id"]
           for i in range(JOBS)]
    keyed = {"command": worker("once", out, 0.5), "gpus": 1}
    first = httpx.post(f"{url}/v1/jobs", json=keyed, timeout=30,
                       headers={"Idempotency-Key": "retry-me"}).json()["id"]
    wait_for(lambda: "running" in job_statuses(url).values(), 30, "a job to run")
    kill_9(service_process)
    url = service_process.start()
    retried = httpx.post(f"{url}/v1/jobs", json=keyed, timeout=30,
                         headers={"Idempotency-Key": "retry-me"})
    assert (retried.status_code, retried.json()["id"]) == (201, first)
    assert retried.headers["Idempotent-Replayed"] == "true"
    wait_for(lambda: "running" in job_statuses(url).values(), 30, "a job to run again")
    kill_9(service_process)
    url = service_process.start()
    wait_for(lambda: set(job_statuses(url).values()) == {"finished"}, 120, "every job to finish")
    assert len(job_statuses(url)) == JOBS + 1  # the retry made no second job
    for job_id in [*ids, first]:
        done = (out / f"{job_id}.done").read_text().splitlines()
        assert len(done) == 1, (job_id, done)
    kinds = [(e["kind"], e["message"]) for job_id in ids
             for e in httpx.get(f"{url}/v1/jobs/{job_id}/events", timeout=30).json()]
    # Jobs ran through a crash: their workers were adopted, or completed while none ran.
    assert any(kind == "adopted" or (kind == "finished" and message == COMPLETED)
               for kind, message in kinds)
