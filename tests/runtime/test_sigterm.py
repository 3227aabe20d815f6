"""A real ``dlsched serve`` process (issue 11 items 2 and 3): SIGTERM (systemd, Kubernetes,
``kill``) stops it as SIGINT does, its workers get SIGTERM and are gone within the grace period,
its jobs are recorded as preempted and a restart resumes them; a second service on the same
data directory or database refuses to start."""

from __future__ import annotations

import signal
import socket
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from runtime_helpers import job_statuses, kill_strays, records, service_info, wait_for, worker

from dlsched.runtime.executors.processes import alive

GRACE = 3.0


class Serve:
    """``dlsched serve`` processes on one data directory and database."""

    def __init__(self, root: Path) -> None:
        self.root, self.data, self.db = root, root / "data", root / "state.db"
        self.procs: list[subprocess.Popen[bytes]] = []

    def spawn(self, data: Path | None = None) -> subprocess.Popen[bytes]:
        log = open(self.root / f"serve-{len(self.procs)}.log", "wb")  # noqa: SIM115
        proc = subprocess.Popen(
            [sys.executable, "-m", "dlsched.cli", "serve", "--gpus", "4", "--port", "0",
             "--data-dir", str(data or self.data), "--db", f"sqlite:///{self.db}",
             "--grace-seconds", str(GRACE)], stdout=log, stderr=subprocess.STDOUT)
        self.procs.append(proc)
        return proc

    def start(self) -> tuple[subprocess.Popen[bytes], str]:
        (self.data / "service.json").unlink(missing_ok=True)
        proc = self.spawn()
        info = wait_for(lambda: service_info(self.data / "service.json"), 30,
                        "the service to start")
        wait_for(lambda: httpx.get(f"{info['url']}/healthz", timeout=30).status_code == 200, 30)
        return proc, info["url"]

    def output(self, proc: subprocess.Popen[bytes]) -> str:
        return (self.root / f"serve-{self.procs.index(proc)}.log").read_text()

    def stop_all(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait(timeout=10)


@pytest.fixture
def serve(tmp_path: Path) -> Iterator[Serve]:
    handle = Serve(tmp_path)
    yield handle
    handle.stop_all()
    kill_strays(tmp_path)


def test_the_token_warning_names_the_port_port_0_chose(serve: Serve) -> None:
    """``--port 0``: the warning said "anyone who can reach 127.0.0.1:0", a port no one can
    reach, instead of the one the service listens on."""
    proc, url = serve.start()
    warning = next(line for line in serve.output(proc).splitlines() if "no API token" in line)
    assert f"reach {url.removeprefix('http://')} can" in warning


def test_sigterm_stops_workers_in_their_grace_and_a_restart_resumes_them(
        serve: Serve, out: Path) -> None:
    proc, url = serve.start()
    ids = [httpx.post(f"{url}/v1/jobs", timeout=30, json={
        "command": worker("preemptible", out, 120), "gpus": 1}).json()["id"] for _ in range(4)]
    wait_for(lambda: all(records(out, job_id) for job_id in ids), 30, "4 jobs to run")
    pids = [r["pid"] for job_id in ids for r in records(out, job_id)]

    stopped_at = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=GRACE + 20) == 0, serve.output(proc)
    assert time.monotonic() - stopped_at < GRACE + 10  # loaded CI machine: generous margin
    assert not any(alive(pid) for pid in pids)
    assert all((out / f"{job_id}-a1-r0.sigterm").exists() for job_id in ids)
    assert "stopped (SIGTERM): 4 running jobs" in serve.output(proc)
    with sqlite3.connect(serve.db) as db:
        saved = dict(db.execute("select id, status from jobs").fetchall())
    assert saved == dict.fromkeys(ids, "preempted")

    _, url = serve.start()
    wait_for(lambda: set(job_statuses(url).values()) == {"finished"}, 30, "the jobs to resume")
    for job_id in ids:
        assert (out / f"{job_id}-a2-r0.resumed").read_text() == f"{job_id}-a1-r0"
        events = httpx.get(f"{url}/v1/jobs/{job_id}/events", timeout=30).json()
        assert any(e["kind"] == "requeued" and e["message"] == "the service stopped"
                   for e in events)


def test_a_second_ctrl_c_does_not_cut_the_shutdown_short(serve: Serve, out: Path) -> None:
    """The second SIGINT raised KeyboardInterrupt inside the shutdown: exit 130, and a worker
    that ignores SIGTERM was never killed after its grace."""
    proc, url = serve.start()
    job_id = httpx.post(f"{url}/v1/jobs", timeout=30, json={
        "command": worker("stubborn", out), "gpus": 1}).json()["id"]
    pid = wait_for(lambda: records(out, job_id), 30, "the job to run")[0]["pid"]
    proc.send_signal(signal.SIGINT)
    time.sleep(0.5)  # the shutdown has begun: the worker has its SIGTERM and its grace
    proc.send_signal(signal.SIGINT)
    assert proc.wait(timeout=GRACE + 20) == 0, serve.output(proc)
    assert not alive(pid)
    assert "stopped (SIGINT): 1 running job stopped" in serve.output(proc)
    with sqlite3.connect(serve.db) as db:
        assert db.execute("select status from jobs").fetchall() == [("preempted",)]


def test_a_second_service_on_the_same_data_or_database_refuses_to_start(
        serve: Serve, tmp_path: Path) -> None:
    first, url = serve.start()
    for data in (serve.data, tmp_path / "other-data"):  # same data dir; same --db file
        second = serve.spawn(data)
        assert second.wait(timeout=60) == 1
        output = " ".join(serve.output(second).split())
        assert f"another dlsched service (pid {first.pid}) is using" in output, output
        assert "Traceback" not in output
    assert httpx.get(f"{url}/healthz", timeout=30).status_code == 200  # the first is unharmed
    first.send_signal(signal.SIGTERM)
    assert first.wait(timeout=30) == 0
    third, _ = serve.start()  # the lock went with the first service
    assert third.poll() is None


def test_on_ipv6_loopback_the_url_in_service_json_reaches_the_service(tmp_path: Path) -> None:
    """``--host ::1`` wrote ``http://::1:PORT``: no URL, for scripts nor for the workers'
    progress reports (``DLSCHED_SERVICE_URL``)."""
    try:
        with socket.socket(socket.AF_INET6) as probe:
            probe.bind(("::1", 0))
    except OSError:
        pytest.skip("no IPv6 loopback here")
    data = tmp_path / "data"
    proc = subprocess.Popen([sys.executable, "-m", "dlsched.cli", "serve", "--gpus", "1",
                             "--host", "::1", "--port", "0", "--data-dir", str(data)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        info = wait_for(lambda: service_info(data / "service.json"), 30, "the service")
        assert info["url"].startswith("http://[::1]:")
        wait_for(lambda: httpx.get(f"{info['url']}/healthz", timeout=30).status_code == 200, 30)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)


def test_service_json_names_a_running_service_only(serve: Serve) -> None:
    """``DATA_DIR/service.json`` (where the service listens, for scripts) stayed after a
    clean stop, naming a URL and pid no service had: a script that waited for the file found
    the old one (these tests unlink it before each start for that reason)."""
    first, url = serve.start()
    second = serve.spawn(serve.data)  # refused: the data directory is in use
    assert second.wait(timeout=60) == 1
    assert service_info(serve.data / "service.json") == {"url": url, "pid": first.pid}
    first.send_signal(signal.SIGTERM)
    assert first.wait(timeout=30) == 0, serve.output(first)
    assert not (serve.data / "service.json").exists()
