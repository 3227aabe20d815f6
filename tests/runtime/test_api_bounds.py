"""Bounded API (issue 12 item 3): integers beyond 64 bits, counts beyond the cluster, NaN and
infinity, oversized bodies and non-JSON bodies are refused with a 4xx naming the problem, and
nothing is stored. A count beyond the cluster is refused before anything is built for the job
(constant time: ``gpus=10**8`` is timed in ``benchmarks/api_schemathesis.py``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from runtime_helpers import Live

from dlsched.runtime import commands
from dlsched.runtime.limits import MAX_BODY_BYTES

BIG = 2**63  # one past int64
OK = {"command": ["true"], "gpus": 1}

BAD = [
    pytest.param({**OK, "gpus": BIG - 1}, 400, "at most 4 GPUs", id="gpus-int64-max"),
    pytest.param({**OK, "gpus": 10**8}, 400, "at most 4 GPUs", id="gpus-1e8"),
    pytest.param({**OK, "gpus": BIG}, 422, "gpus", id="gpus-past-int64"),
    pytest.param({**OK, "priority": BIG}, 422, "priority", id="priority-past-int64"),
    pytest.param({**OK, "priority": -BIG - 1}, 422, "priority", id="priority-below-int64"),
    pytest.param({**OK, "max_gpus": BIG}, 422, "max_gpus", id="max-gpus-past-int64"),
    pytest.param({**OK, "max_gpus": 10**12}, 400, "max_gpus", id="max-gpus-past-cluster"),
    pytest.param({**OK, "command": ["a\u0000b"]}, 422, "command", id="nul-in-argv"),
    pytest.param({**OK, "name": "a\u0000b"}, 422, "name", id="nul-in-name"),
    pytest.param({**OK, "command": ["", "x"]}, 422, "command[0], the program, is empty",
                 id="empty-program"),
    pytest.param({**OK, "gpus": True}, 422, "gpus", id="boolean-gpus"),
    pytest.param({**OK, "priority": False}, 422, "priority", id="boolean-priority"),
    pytest.param({**OK, "env": {"A=B": "x"}}, 422, "env", id="equals-in-env-name"),
]


@pytest.mark.parametrize(("body", "status", "message"), BAD)
def test_out_of_range_submissions(live: Callable[..., Live], monkeypatch: pytest.MonkeyPatch,
                                  body: dict[str, Any], status: int, message: str) -> None:
    def never(*_args: Any) -> int:
        raise AssertionError("the cluster-wide search ran for a count beyond the cluster")

    monkeypatch.setattr(commands, "_most_gpus", never)
    client = live().http
    response = client.post("/v1/jobs", json=body)
    assert (response.status_code, message in response.text) == (status, True), response.text
    assert client.get("/v1/jobs").json() == []


@pytest.mark.parametrize("number", ["NaN", "Infinity", "-Infinity"])
def test_nan_and_infinity_are_422(live: Callable[..., Live], number: str) -> None:
    client = live().http
    raw = f'{{"command": ["true"], "gpus": 1, "work_seconds": {number}}}'
    response = client.post("/v1/jobs", content=raw,
                           headers={"Content-Type": "application/json"})
    assert response.status_code == 422 and "work_seconds" in response.text
    progress = client.post("/v1/jobs/job-000001/progress",
                           content=f'{{"samples_per_second": {number}}}',
                           headers={"Content-Type": "application/json"})
    assert progress.status_code == 422


def test_a_negative_step_is_422(live: Callable[..., Live]) -> None:
    response = live().http.post("/v1/jobs/job-000001/progress", json={"step": -1})
    assert response.status_code == 422 and "step" in response.text


@pytest.mark.parametrize(("path", "raw", "field"), [
    ("/v1/jobs", '{"command": ["true"], "gpus": 1, "name": "\\ud800"}', "name"),
    ("/v1/jobs", '{"command": ["\\udc80"], "gpus": 1}', "command"),
    ("/v1/jobs/job-000001/progress", '{"metrics": {"loss": "\\ud800"}}', "metrics"),
    ("/v1/jobs/job-000001/progress", '{"metrics": {"\\ud800": 1}}', "metrics"),
], ids=["name", "argv", "metric-value", "metric-name"])
def test_a_lone_surrogate_is_422_naming_the_field(live: Callable[..., Live], path: str,
                                                  raw: str, field: str) -> None:
    """JSON may escape half a UTF-16 pair; the 422 echoed it back and UTF-8 could not encode
    it: a 500."""
    client = live().http
    response = client.post(path, content=raw, headers={"Content-Type": "application/json"})
    assert response.status_code == 422 and field in response.text, response.text
    assert client.get("/v1/jobs").json() == []


def test_offset_past_int64_is_422(live: Callable[..., Live]) -> None:
    client = live().http
    assert client.get("/v1/jobs", params={"offset": BIG}).status_code == 422
    assert client.get("/v1/jobs", params={"offset": BIG - 1}).json() == []


def test_an_unknown_status_filter_is_422_naming_it(live: Callable[..., Live]) -> None:
    """Issue 11 item 13: ``?status=runing`` is refused, not answered with an empty list."""
    client = live().http
    client.post("/v1/jobs", json=OK)
    answer = client.get("/v1/jobs", params={"status": "runing"})
    assert answer.status_code == 422
    assert "status" in answer.text
    assert client.get("/v1/jobs", params={"status": "pending"}).status_code == 200


def test_a_body_over_the_limit_is_413(live: Callable[..., Live]) -> None:
    client = live().http
    body = {**OK, "name": "x" * (MAX_BODY_BYTES + 1)}
    assert client.post("/v1/jobs", json=body).status_code == 413

    def chunks() -> Any:  # no Content-Length: counted as it streams in
        yield b'{"command": ["true"], "gpus": 1, "name": "'
        for _ in range(MAX_BODY_BYTES // 65536 + 1):
            yield b"x" * 65536
        yield b'"}'

    response = client.post("/v1/jobs", content=chunks(),
                           headers={"Content-Type": "application/json"})
    assert response.status_code == 413
    assert client.get("/v1/jobs").json() == []


@pytest.mark.parametrize("kind", ["text/plain", "application/x-www-form-urlencoded",
                                  "multipart/form-data; boundary=x", None])
def test_a_body_that_is_not_json_is_415(live: Callable[..., Live], kind: str | None) -> None:
    client = live().http
    headers = {"Content-Type": kind} if kind else {}
    response = client.post("/v1/jobs", content=b'{"command": ["true"], "gpus": 1}',
                           headers=headers)
    assert response.status_code == 415, response.text
    ok = client.post("/v1/jobs", content=b'{"command": ["true"], "gpus": 1}',
                     headers={"Content-Type": "application/json; charset=utf-8"})
    assert ok.status_code == 201


def test_every_answered_status_is_in_the_schema(live: Callable[..., Live]) -> None:
    paths = live().http.get("/openapi.json").json()["paths"]
    submit = set(paths["/v1/jobs"]["post"]["responses"])
    assert {"201", "400", "401", "403", "413", "415", "422"} <= submit
    progress = set(paths["/v1/jobs/{job_id}/progress"]["post"]["responses"])
    assert {"204", "401", "404", "409", "413", "415", "422"} <= progress
    assert "503" in paths["/healthz"]["get"]["responses"]
