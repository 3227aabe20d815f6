"""Reporter: the right request to a local stand-in service; never raises, never blocks.

The body matches the service's `ProgressReport` (numeric metrics only)."""

from __future__ import annotations

import math
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from job_helpers import ProgressServer, free_port

from dlsched.job import JobContext, Reporter


@pytest.fixture
def service() -> Iterator[ProgressServer]:
    server = ProgressServer()
    yield server
    server.close()


def context(url: str | None, token: str | None = None, rank: int = 0,
            job_id: str = "job-7") -> JobContext:
    env = {"DLSCHED_JOB_ID": job_id, "RANK": str(rank), "WORLD_SIZE": "2"}
    if url:
        env["DLSCHED_SERVICE_URL"] = url
    if token:
        env["DLSCHED_TOKEN"] = token
    return JobContext.from_env(env)



CLOSE_WAIT = 30.0  # close()'s own bound (the HTTP timeout + 0.5 s) is short on a loaded machine


@contextmanager
def reporting(ctx: JobContext, **options: float) -> Iterator[Reporter]:
    """A reporter closed with a long wait, so that its thread has posted before the test
    reads what the service received."""
    reporter = Reporter(ctx, **options)
    try:
        yield reporter
    finally:
        reporter.close(timeout=CLOSE_WAIT)

def test_posts_the_contract_json_with_the_bearer_token(service: ProgressServer) -> None:
    with reporting(context(service.url, token="t0ken"), min_interval=0) as reporter:
        reporter.report(12, 345.5, loss=0.25, accuracy=0.5, tokens=4096)
    path, headers, _ = service.requests[-1]
    assert path == "/v1/jobs/job-7/progress"
    assert headers["Authorization"] == "Bearer t0ken"
    assert headers["Content-Type"] == "application/json"
    assert service.bodies()[-1] == {"step": 12, "samples_per_second": 345.5,
                                    "metrics": {"loss": 0.25, "accuracy": 0.5,
                                                "tokens": 4096.0},
                                    "world_size": 2, "attempt": 1}
    assert reporter.sent == 1 and reporter.failed == 0


def test_no_token_no_authorization_header(service: ProgressServer) -> None:
    with reporting(context(service.url), min_interval=0) as reporter:
        reporter.report(1, 1.0)
    assert "Authorization" not in service.requests[-1][1]


def test_job_id_is_quoted_into_the_path(service: ProgressServer) -> None:
    with reporting(context(service.url, job_id="a/b c"), min_interval=0) as reporter:
        reporter.report(1, 1.0)
    assert service.requests[-1][0] == "/v1/jobs/a%2Fb%20c/progress"


def test_metrics_are_finite_numbers_only(service: ProgressServer) -> None:
    class Scalar:  # what a tensor or a NumPy number looks like to the reporter
        def item(self) -> float:
            return 0.75

    with reporting(context(service.url), min_interval=0) as reporter:
        reporter.report(3, math.nan, loss=math.inf, acc=Scalar(), count=4, shape=(2, 3),
                        phase="warmup", done=True)
    assert service.bodies()[-1] == {"step": 3, "samples_per_second": 0.0,
                                    "metrics": {"acc": 0.75, "count": 4.0},
                                    "world_size": 2, "attempt": 1}


def test_rate_limited_and_the_newest_report_wins(service: ProgressServer) -> None:
    with reporting(context(service.url), min_interval=10.0) as reporter:
        for step in range(1, 201):
            reporter.report(step, 10.0)
    steps = [body["step"] for body in service.bodies()]
    assert len(steps) <= 2 and steps[-1] == 200  # the first one, then the last at close()


@pytest.mark.parametrize("url", [
    pytest.param(None, id="no-service"),
    pytest.param("http://127.0.0.1:{port}", id="service-down"),
    pytest.param("not a url at all", id="malformed-url"),
])
def test_never_raises_and_never_blocks(url: str | None, monkeypatch: pytest.MonkeyPatch
                                      ) -> None:
    url = url.format(port=free_port()) if url else None
    posted_from: list[threading.Thread] = []
    post = Reporter._post

    def recorded(self: Reporter, body: bytes) -> None:
        posted_from.append(threading.current_thread())
        post(self, body)

    monkeypatch.setattr(Reporter, "_post", recorded)
    reporter = Reporter(context(url), min_interval=0, timeout=0.5)
    for step in range(50):
        reporter.report(step, 1.0, loss=object())
    reporter.close(timeout=CLOSE_WAIT)
    caller = threading.current_thread()
    assert all(thread is not caller for thread in posted_from)  # report() only queues
    assert len(posted_from) == (0 if url is None else reporter.failed)
    assert reporter.sent == 0
    # one try, then a back-off that close() cuts short for a last try
    assert reporter.failed in ({0} if url is None else {1, 2})


def test_server_error_counts_as_a_failure() -> None:
    server = ProgressServer(status=500)
    try:
        with reporting(context(server.url), min_interval=0) as reporter:
            reporter.report(1, 1.0)
        assert reporter.failed == 1 and reporter.sent == 0 and len(server.requests) == 1
    finally:
        server.close()


def test_only_the_chief_reports(service: ProgressServer) -> None:
    reporter = Reporter(context(service.url, rank=1), min_interval=0)
    assert not reporter.enabled
    reporter.report(1, 1.0)
    reporter.close()
    assert service.requests == []


def test_reports_after_close_are_ignored(service: ProgressServer) -> None:
    reporter = Reporter(context(service.url), min_interval=0)
    reporter.close()
    reporter.report(1, 1.0)
    reporter.close()
    assert service.requests == []
