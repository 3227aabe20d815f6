"""A small HTTP client of the service (httpx), used by the CLI and by scripts."""

from __future__ import annotations

import re
import time
import uuid
from typing import Any
from urllib.parse import quote

import httpx

from dlsched.errors import DlschedError
from dlsched.runtime.models import (
    ClusterView,
    EventView,
    JobDetail,
    JobSummary,
    ProgressReport,
    QueueView,
    SubmitRequest,
)

DEFAULT_URL = "http://127.0.0.1:8765"


class ClientError(DlschedError):
    """The service refused a request (``status``: its HTTP status; 0: it could not be reached)."""

    def __init__(self, status: int, message: str, field: str | None = None) -> None:
        super().__init__(f"{status}: {message}" if status else message)
        self.status = status
        self.message = message
        # The request field refused first, as a key path (``command[0]``, ``gpus``), when
        # the service names one: a validation error's location, or the field a 400 starts with
        self.field = field


class Client:
    def __init__(self, url: str = DEFAULT_URL, token: str | None = None,
                 timeout: float = 30.0, connect_wait: float = 0.0) -> None:
        """``connect_wait``: seconds to keep retrying while the service refuses connections
        (it is still starting); nothing was sent then, so a retry cannot submit twice."""
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self.url = url
        self.connect_wait = connect_wait
        self.http = httpx.Client(base_url=url, headers=headers, timeout=timeout)

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.http.close()

    def submit(self, request: SubmitRequest | dict[str, Any],
               idempotency_key: str | None = None, tries: int = 3) -> JobSummary:
        """Submit once, even if the request is retried: it carries an ``Idempotency-Key`` (a
        fresh one unless given), and a request that may have reached the service (the
        connection broke) is sent again, up to ``tries`` times, with the same key."""
        body = request.model_dump(exclude_unset=True) if isinstance(request, SubmitRequest) \
            else request
        headers = {"Idempotency-Key": idempotency_key or uuid.uuid4().hex}
        for attempt in range(1, tries + 1):
            try:
                response = self._call("POST", "/v1/jobs", json=body, headers=headers)
                return JobSummary.model_validate(response.json())
            except ClientError as error:
                if error.status != 0 or attempt == tries:
                    raise
                time.sleep(0.5 * attempt)
        raise AssertionError("unreachable")

    def jobs(self, status: str | None = None, queue: str | None = None,
             page: int = 1000) -> list[JobSummary]:
        """Every job (of ``status``, ``queue``), oldest first, ``page`` per request: the API
        answers at most ``limit`` jobs from the oldest, so one request left the newest out
        once a service had run more than that."""
        params: dict[str, Any] = {k: v for k, v in (("status", status), ("queue", queue)) if v}
        jobs: list[JobSummary] = []
        while True:
            rows = self._call("GET", "/v1/jobs", params={**params, "limit": page,
                                                         "offset": len(jobs)}).json()
            jobs += [JobSummary.model_validate(row) for row in rows]
            if len(rows) < page:
                return jobs

    def job(self, job_id: str) -> JobDetail:
        return JobDetail.model_validate(self._call("GET", _job_path(job_id)).json())

    def cancel(self, job_id: str) -> JobDetail:
        return JobDetail.model_validate(self._call("DELETE", _job_path(job_id)).json())

    def events(self, job_id: str) -> list[EventView]:
        rows = self._call("GET", _job_path(job_id, "/events")).json()
        return [EventView.model_validate(row) for row in rows]

    def logs(self, job_id: str, max_bytes: int = 65536) -> str:
        path = _job_path(job_id, "/logs")
        return self._call("GET", path, params={"max_bytes": max_bytes}).text

    def progress(self, job_id: str, report: ProgressReport) -> None:
        self._call("POST", _job_path(job_id, "/progress"), json=report.model_dump())

    def cluster(self) -> ClusterView:
        return ClusterView.model_validate(self._call("GET", "/v1/cluster").json())

    def queues(self) -> list[QueueView]:
        return [QueueView.model_validate(q) for q in self._call("GET", "/v1/queues").json()]

    def health(self) -> dict[str, Any]:
        return self._call("GET", "/healthz").json()

    def _call(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        try:
            response = self._request(method, path, **kwargs)
        except httpx.HTTPError as exc:
            raise ClientError(0, f"cannot reach the dlsched service at {self.url}: {exc}") \
                from None
        if response.status_code >= 400:
            detail = _detail(response)
            raise ClientError(response.status_code, detail, _refused_field(response, detail))
        return response


    def _request(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        deadline = time.monotonic() + self.connect_wait
        while True:
            try:
                return self.http.request(method, path, **kwargs)
            except httpx.ConnectError:
                if time.monotonic() >= deadline:
                    raise
                time.sleep(0.2)


def _job_path(job_id: str, tail: str = "") -> str:
    """A job's URL path, its id one percent-encoded path segment. Pasted as is, an id with
    ``/`` or ``..`` named another endpoint (``jobs ID/events`` read the events as a job) and
    an empty one the list's redirect: tracebacks, not "no job". No job id has a ``/`` (the
    service makes them), and the server decodes ``%2F`` before routing: such an id is
    refused here."""
    if job_id in ("", ".", "..") or "/" in job_id:
        raise ClientError(404, f"no job {job_id!r}")
    return f"/v1/jobs/{quote(job_id, safe='')}{tail}"


def _refused_field(response: httpx.Response, detail: str) -> str | None:
    """The body field a refusal names first: a validation error's ``loc`` (``["body",
    "command", 0]`` -> ``command[0]``), or the name a 400's message starts with (``gpus=5:
    ...``, ``working_dir '/x': ...``)."""
    try:
        errors = response.json().get("detail")
    except (ValueError, AttributeError):
        return None
    if isinstance(errors, list) and errors and isinstance(errors[0], dict):
        loc = [p for p in errors[0].get("loc", ()) if p != "body"]
        path = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in loc).lstrip(".")
        return path or None
    match = re.match(r"([a-z_]+)(?:[=: ]|$)", detail)
    return match.group(1) if match else None


def _detail(response: httpx.Response) -> str:
    try:
        detail = response.json().get("detail", response.text)
    except ValueError:
        return response.text
    if isinstance(detail, list):  # pydantic validation errors
        return "; ".join(f"{'.'.join(str(p) for p in d.get('loc', ()))}: {d.get('msg')}"
                         for d in detail)
    return str(detail)
