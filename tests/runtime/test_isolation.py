"""Tenants on one machine (issue 12 item 2, ``dlsched/runtime/confine.py``): a job's directories
stay out of the data directory and, for a tenant, inside its ``paths``; the service's files are
0600 in 0700 directories; secrets stay out of what the API shows; the start-up checks refuse or
warn about a service without tokens."""

from __future__ import annotations

import stat
from collections.abc import Callable
from pathlib import Path

import pytest
from runtime_helpers import Live, worker
from test_service_e2e import wait_status

from dlsched.errors import ConfigError
from dlsched.runtime.auth import load_tokens
from dlsched.runtime.exposure import exposure_warnings

A_TOKEN, B_TOKEN = "a" * 20, "b" * 20


def tokens(tmp_path: Path, allowed: Path) -> Path:
    path = tmp_path / "tokens.yaml"
    path.write_text(f"tenants:\n  - name: team-a\n    token: {A_TOKEN}\n    queues: [a]\n"
                    f"    paths: [{allowed}]\n"
                    f"  - name: team-b\n    token: {B_TOKEN}\n    queues: [b]\n")
    return path


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.mark.parametrize(("field", "value", "message"), [
    ("checkpoint_dir", "../../../../tmp/escape-ckpt", "may not contain '..'"),
    ("working_dir", "/tmp/../etc", "may not contain '..'"),
    ("checkpoint_dir", "{data}/jobs/job-000001/checkpoint", "inside the service's data dir"),
    ("checkpoint_dir", "{data}", "inside the service's data dir"),
    ("working_dir", "{data}/jobs", "inside the service's data dir"),
])
def test_directories_outside_the_rules_are_refused(live: Callable[..., Live], field: str,
                                                   value: str, message: str) -> None:
    handle = live()
    data = handle.service.config.data_dir.resolve()
    body = {"command": ["true"], "gpus": 1, field: value.format(data=data)}
    response = handle.http.post("/v1/jobs", json=body)
    assert response.status_code == 400 and message in response.text, response.text
    assert handle.http.get("/v1/jobs").json() == []


def test_a_tenant_uses_only_its_paths(live: Callable[..., Live], tmp_path: Path,
                                      out: Path) -> None:
    allowed = tmp_path / "team-a"
    allowed.mkdir()
    handle = live(token="admin-token-0123456789", tokens=load_tokens(tokens(tmp_path, allowed)))
    a = {"Authorization": f"Bearer {A_TOKEN}"}
    b = {"Authorization": f"Bearer {B_TOKEN}"}
    job = {"command": worker("sleep", out, 0), "gpus": 1}
    inside = handle.http.post("/v1/jobs", headers=a, json={
        **job, "queue": "a", "working_dir": str(allowed), "checkpoint_dir": "ckpt"})
    assert inside.status_code == 201, inside.text
    detail = handle.http.get(f"/v1/jobs/{inside.json()['id']}", headers=a).json()
    assert detail["checkpoint_dir"] == str(allowed.resolve() / "ckpt")
    outside = handle.http.post("/v1/jobs", headers=a, json={
        **job, "queue": "a", "checkpoint_dir": str(tmp_path / "elsewhere")})
    assert outside.status_code == 400 and "outside the directories tenant 'team-a'" in \
        outside.text
    # No paths: only the per-job directory the service makes; the refusal says how.
    refused = handle.http.post("/v1/jobs", headers=b, json={
        **job, "queue": "b", "working_dir": str(allowed)})
    assert refused.status_code == 400 and "tenant 'team-b' has no paths in the tokens file" \
        in refused.text and "dlsched submit --job-dir" in refused.text, refused.text
    own = handle.http.post("/v1/jobs", headers=b, json={**job, "queue": "b"})
    assert own.status_code == 201
    finished = wait_status(handle, own.json()["id"], "finished")
    data = handle.service.config.data_dir.resolve()
    assert finished["checkpoint_dir"] == str(data / "jobs" / own.json()["id"] / "checkpoint")


def test_the_services_files_are_private(live: Callable[..., Live], out: Path) -> None:
    handle = live()
    job_id = handle.http.post("/v1/jobs", json={"command": worker("sleep", out, 0),
                                                "gpus": 1}).json()["id"]
    wait_status(handle, job_id, "finished")
    data = handle.service.config.data_dir
    job_dir = data / "jobs" / job_id
    for directory in (data, data / "jobs", job_dir, job_dir / "checkpoint"):
        assert mode(directory) == 0o700, directory
    files = [data / "dlsched.db", job_dir / "attempt-1.log", job_dir / "attempt-1.rank-0.exit",
             *data.glob("dlsched.db-*")]
    for file in files:
        assert mode(file) == 0o600, file


def test_secrets_stay_out_of_what_the_api_shows(live: Callable[..., Live], out: Path) -> None:
    handle = live()
    secret = "s3cr3t-" + "x" * 12
    job_id = handle.http.post("/v1/jobs", json={"command": worker("sleep", out, 0), "gpus": 1,
                                                "env": {"API_KEY": secret}}).json()["id"]
    wait_status(handle, job_id, "finished")
    shown = [handle.http.get(path).text for path in (
        f"/v1/jobs/{job_id}", f"/v1/jobs/{job_id}/events", "/v1/jobs", f"/v1/jobs/{job_id}/logs")]
    assert not [text for text in shown if secret in text]


@pytest.mark.parametrize(("host", "token", "insecure", "expect"), [
    ("0.0.0.0", False, False, "refused"),
    ("::", False, False, "refused"),
    ("example.org", False, False, "refused"),
    ("0.0.0.0", False, True, "listening on 0.0.0.0:8765 with NO token"),
    ("127.0.0.1", False, False, "no API token configured"),
    ("localhost", False, False, "no API token configured"),
    ("0.0.0.0", True, False, None),
    ("127.0.0.1", True, False, None),
])
def test_start_up_exposure_checks(host: str, token: bool, insecure: bool,
                                  expect: str | None) -> None:
    if expect == "refused":
        with pytest.raises(ConfigError, match="--insecure"):
            exposure_warnings(host, 8765, token, None, insecure)
        return
    warnings = exposure_warnings(host, 8765, token, None, insecure)
    assert (warnings == []) if expect is None else any(expect in w for w in warnings)


def test_a_tokens_file_others_can_read_is_named(tmp_path: Path) -> None:
    path = tokens(tmp_path, tmp_path)
    path.chmod(0o644)
    warnings = exposure_warnings("127.0.0.1", 1, True, path, False)
    assert any("chmod 600" in w for w in warnings)
    assert any("a job can read what that user can" in w for w in warnings)
    path.chmod(0o600)
    assert not any("chmod" in w for w in exposure_warnings("127.0.0.1", 1, True, path, False))


def test_a_start_that_fails_leaves_its_data_directory_private(tmp_path: Path) -> None:
    """The lock is taken before the port is bound: a start that failed there (the port in
    use) had made the data directory 0755 and its ``service.lock`` 0644 (a later start
    tightened the directory, never the lock)."""
    from dlsched.runtime.server import ServeOptions, bind, serve

    busy = bind("127.0.0.1", 0)
    data = tmp_path / "fresh" / "data"
    try:
        with pytest.raises(ConfigError, match="cannot listen"):
            serve(ServeOptions(data, gpus=1, port=busy.getsockname()[1]), announce=False)
    finally:
        busy.close()
    assert mode(data) == 0o700
    assert mode(data / "service.lock") == 0o600
