"""Per-tenant API tokens (``dlsched/runtime/auth.py``): the tokens file and its errors, and a
live service where each tenant submits to, sees and cancels only its own queues' jobs, an admin
sees everything, and a job's workers may only report that job's progress."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import httpx
import pytest
from runtime_helpers import Live, records, wait_for, worker
from test_service_e2e import wait_status

from dlsched.errors import InputError
from dlsched.runtime.auth import load_tokens
from dlsched.runtime.views import HIDDEN

A_TOKEN, B_TOKEN, ADMIN = "a" * 20, "b" * 20, "admin-token-0123456789"
GOOD = f"""tenants:
  - name: team-a
    token: {A_TOKEN}
    queues: [a, shared]
  - name: team-b
    token_file: b.token
    queues: [b]
  - name: ops
    token: {"o" * 16}
    admin: true
"""


def write(tmp_path: Path, text: str) -> Path:
    (tmp_path / "b.token").write_text(B_TOKEN + "\n")
    path = tmp_path / "tokens.yaml"
    path.write_text(text)
    return path


def test_a_tokens_file_maps_tokens_to_tenants_and_queues(tmp_path: Path) -> None:
    table = load_tokens(write(tmp_path, GOOD))
    a, b, ops = (table.identify(t) for t in (A_TOKEN, B_TOKEN, "o" * 16))
    assert a is not None and (a.tenant, a.queues) == ("team-a", frozenset({"a", "shared"}))
    assert b is not None and (b.tenant, b.queues) == ("team-b", frozenset({"b"}))
    assert ops is not None and ops.queues is None and ops.may_use("anything")
    assert table.identify("c" * 20) is None
    worker_token = table.worker_token("job-000007")
    workers = table.identify(worker_token)
    assert workers is not None and workers.job_id == "job-000007"
    assert not workers.may_use("a")
    assert table.identify("job-000008." + worker_token.partition(".")[2]) is None


@pytest.mark.parametrize(("text", "where", "message"), [
    ("tenants: []\n", "tokens.yaml:1:tenants", "must be a non-empty list"),
    ("users: []\n", "tokens.yaml:1:users", "expected one key, 'tenants'"),
    ("tenants:\n  - name: x\n    token: " + "x" * 16 + "\n    queue: [a]\n",
     "tokens.yaml:4:tenants[0].queue", "unknown key"),
    ("tenants:\n  - name: x\n    token: short\n    queues: [a]\n",
     "tokens.yaml:3:tenants[0].token", "at least 16 characters"),
    ("tenants:\n  - name: x\n    queues: [a]\n", "tokens.yaml:2:tenants[0].token",
     "exactly one of token and token_file"),
    ("tenants:\n  - name: x\n    token: " + "x" * 16 + "\n", "tokens.yaml:2:tenants[0].queues",
     "a list of queue names"),
    ("tenants:\n  - {name: x, token: " + "x" * 16 + ", queues: [a]}\n"
     "  - {name: x, token: " + "y" * 16 + ", queues: [b]}\n", "tokens.yaml:3:tenants[1].name",
     "appears twice"),
    ("tenants:\n  - {name: x, token: " + "x" * 16 + ", queues: [a]}\n"
     "  - {name: y, token: " + "x" * 16 + ", queues: [b]}\n", "tokens.yaml:3:tenants[1].token",
     "share a token"),
], ids=["empty", "wrong-key", "unknown-field", "short-token", "no-token", "no-queues",
        "duplicate-name", "duplicate-token"])
def test_bad_tokens_files_name_file_line_and_field(tmp_path: Path, text: str, where: str,
                                                   message: str) -> None:
    with pytest.raises(InputError) as error:
        load_tokens(write(tmp_path, text))
    assert str(error.value).startswith(str(tmp_path / where) + ": ")
    assert message in str(error.value)


def client(handle: Live, token: str | None) -> httpx.Client:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return httpx.Client(base_url=handle.url, headers=headers, timeout=30)


def test_tenants_see_and_cancel_only_their_own_queues(
        live: Callable[..., Live], out: Path, tmp_path: Path) -> None:
    handle = live(token=ADMIN, tokens=load_tokens(write(tmp_path, GOOD)))
    a, b, admin, nobody = (client(handle, t) for t in (A_TOKEN, B_TOKEN, ADMIN, None))
    job = {"command": worker("sleep", out, 30), "gpus": 1}
    assert a.post("/v1/jobs", json={**job, "queue": "b"}).status_code == 403
    a_job = a.post("/v1/jobs", json={**job, "queue": "a"}).json()["id"]
    b_job = b.post("/v1/jobs", json={**job, "queue": "b"}).json()["id"]
    assert nobody.get("/v1/jobs").status_code == 401
    assert [j["id"] for j in a.get("/v1/jobs").json()] == [a_job]
    assert [j["id"] for j in admin.get("/v1/jobs").json()] == [a_job, b_job]
    assert a.get("/v1/jobs", params={"queue": "b"}).status_code == 403
    for method, path in (("GET", ""), ("DELETE", ""), ("GET", "/events"), ("GET", "/logs")):
        assert b.request(method, f"/v1/jobs/{a_job}{path}").status_code == 404
    wait_status(handle, a_job, "running")
    assert [q["name"] for q in a.get("/v1/queues").json()] == ["a", "shared"]
    held = {g["job_id"] for g in b.get("/v1/cluster").json()["nodes"][0]["gpus"]}
    assert held == {None, HIDDEN, b_job}
    assert a.delete(f"/v1/jobs/{a_job}").json()["status"] == "cancelled"
    assert admin.delete(f"/v1/jobs/{b_job}").json()["status"] == "cancelled"


def test_workers_get_a_token_that_only_reports_their_jobs_progress(
        live: Callable[..., Live], out: Path, tmp_path: Path) -> None:
    handle = live(token=ADMIN, tokens=load_tokens(write(tmp_path, GOOD)))
    a = client(handle, A_TOKEN)
    first, second = (a.post("/v1/jobs", json={"command": worker("sleep", out, 30), "gpus": 1,
                                              "queue": "a"}).json()["id"] for _ in range(2))
    token = wait_for(lambda: records(out, first), 15, "the worker to start")[0]["DLSCHED_TOKEN"]
    assert token not in (A_TOKEN, ADMIN) and token.startswith(f"{first}.")
    workers = client(handle, token)
    report = {"step": 3, "samples_per_second": 1.5}
    assert workers.post(f"/v1/jobs/{first}/progress", json=report).status_code == 204
    assert workers.post(f"/v1/jobs/{second}/progress", json=report).status_code == 404
    assert workers.get("/v1/jobs").json() == []
    assert workers.get(f"/v1/jobs/{first}").status_code == 404
    for job_id in (first, second):
        a.delete(f"/v1/jobs/{job_id}")
