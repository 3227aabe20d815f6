"""``kill -9`` the service (a real `serve` process) with jobs queued and running; a restart on
the same SQLite file stops the orphaned workers, requeues their jobs, and every job completes
exactly once (one completion line each, never two attempts at once)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from runtime_helpers import kill_strays, records, wait_for, worker

from dlsched.runtime.executors.processes import alive

JOBS = 8
STEPS = 12  # 0.1 s each


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
        info = wait_for(lambda: _info(data / "service.json"), 30, "the service to start")
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


def _info(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


@pytest.fixture
def service_process(tmp_path: Path) -> Iterator[ServiceProcess]:
    handle = ServiceProcess(tmp_path)
    yield handle
    handle.stop_all()
    kill_strays(tmp_path)


def statuses(url: str) -> dict[str, str]:
    return {j["id"]: j["status"] for j in httpx.get(f"{url}/v1/jobs", timeout=30).json()}


def test_kill_9_then_restart_runs_every_job_exactly_once(
        service_process: ServiceProcess, out: Path) -> None:
    url = service_process.start()
    ids = [httpx.post(f"{url}/v1/jobs", timeout=30,
                      json={"command": worker("steps", out, STEPS), "gpus": 1 + i % 2}).json()["id"]
           for i in range(JOBS)]
    steps_files = out.parent / "data" / "jobs"
    wait_for(lambda: any(int(p.read_text() or 0) >= 3
                         for p in steps_files.glob("*/checkpoint/step-r0")),
             20, "jobs to run and make progress")
    running = [job_id for job_id, status in statuses(url).items() if status == "running"]
    assert running
    first = service_process.procs[0]
    os.kill(first.pid, signal.SIGKILL)
    first.wait(timeout=10)
    orphans = [r["pid"] for job_id in running for r in records(out, job_id)]
    assert any(alive(pid) for pid in orphans)  # the workers outlived their service

    url = service_process.start()
    assert not any(alive(pid) for pid in orphans)  # stopped before anything restarted
    wait_for(lambda: set(statuses(url).values()) == {"finished"}, 45, "every job to finish")
    for job_id in ids:
        done = (out / f"{job_id}.done").read_text().splitlines()
        assert len(done) == 1, (job_id, done)
    assert not list(out.glob("*.double"))
    details = [httpx.get(f"{url}/v1/jobs/{job_id}", timeout=30).json() for job_id in ids]
    interrupted = [d for d in details if d["attempt_history"][0]["outcome"] == "abandoned"]
    assert interrupted  # the jobs that ran through the crash
    for detail in interrupted:
        assert detail["attempt_history"][-1]["outcome"] == "succeeded"
        events = httpx.get(f"{url}/v1/jobs/{detail['id']}/events", timeout=30).json()
        assert "requeued" in [e["kind"] for e in events]
