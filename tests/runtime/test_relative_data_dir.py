"""`dlsched serve --data-dir ./data` (a relative path, as docs/runtime.md's quick start gives):
an attempt's log is named by an absolute path. A Ray worker actor opens the log in the Ray
node's own working directory, so a relative name put it beside wherever `ray start` ran, and
`dlsched logs` then found nothing; the local executor, seeing the job's checkpoint
directory (absolute) apart from its log's, made it 0755 instead of 0700; the recorded path must also
survive a restart of the service from another directory."""

from __future__ import annotations

from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from runtime_helpers import kill_strays, wait_for, worker

from dlsched.runtime.api import create_app
from dlsched.runtime.server import local_cluster
from dlsched.runtime.service import Service, ServiceConfig


def test_a_relative_data_dir_names_each_log_by_an_absolute_path(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "out"
    out.mkdir()
    monkeypatch.chdir(tmp_path)
    service = Service(ServiceConfig(local_cluster(1, "T4"), Path("data"), poll_seconds=0.05))
    service.start()
    try:
        client = TestClient(create_app(service))
        job_id = client.post("/v1/jobs", json={"command": worker("sleep", out, 0),
                                               "gpus": 1}).json()["id"]
        wait_for(lambda: client.get(f"/v1/jobs/{job_id}").json()["status"] == "finished",
                 30, f"{job_id} to finish")
        attempts = service.store.attempts(job_id)
        assert Path(attempts[-1].log_path).is_absolute(), attempts[-1].log_path
        job_dir = tmp_path / "data" / "jobs" / job_id
        assert attempts[-1].log_path == str(job_dir / "attempt-1.log")
        # the default checkpoint directory is the job's own, private as the rest (0700)
        assert (job_dir / "checkpoint").stat().st_mode & 0o777 == 0o700
        elsewhere = tmp_path / "elsewhere"
        elsewhere.mkdir()
        monkeypatch.chdir(elsewhere)  # the log is still found from another directory
        assert f"worker {job_id}-a1-r0" in client.get(f"/v1/jobs/{job_id}/logs").text
    finally:
        service.shutdown()
        kill_strays(tmp_path)
