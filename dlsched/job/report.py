"""Progress reports to the service (stdlib only); they never slow down or break training.

``report()`` only stores the newest payload and returns; a daemon thread posts it at most once
per ``min_interval`` seconds (an older unsent payload is replaced, the service wants the latest
step), backs off when the service is down, and swallows every error. Only the chief reports.
The policies that need measured throughput (LAS attained service, Gavel, Pollux) read these.
"""

from __future__ import annotations

import json
import logging
import math
import threading
import time
import urllib.parse
import urllib.request
from types import TracebackType
from typing import Any

from dlsched.job.context import JobContext

log = logging.getLogger(__name__)


class Reporter:
    """``POST {service}/v1/jobs/{id}/progress`` with ``{"step", "samples_per_second", "metrics",
    "world_size", "attempt"}`` (the size the speed was measured at: the service ignores a late
    report of an attempt that ran at another size, e.g. just before an elastic resize; and the
    attempt: the service refuses, 409, a report from an attempt that is no longer the job's).

    A no-op when the service URL is unset or this worker is not rank 0. Use it as a context
    manager, or call ``close()``, so the last report is sent before the process exits.
    """

    def __init__(self, ctx: JobContext, min_interval: float = 1.0, timeout: float = 2.0,
                 max_backoff: float = 60.0) -> None:
        self.url = _progress_url(ctx) if ctx.is_chief else None
        self.world_size = ctx.world_size
        self.attempt = ctx.attempt
        self.headers = {"Content-Type": "application/json"}
        if ctx.token:
            self.headers["Authorization"] = f"Bearer {ctx.token}"
        self.min_interval = min_interval
        self.timeout = timeout
        self.max_backoff = max_backoff
        self.sent = 0
        self.failed = 0
        self._failure_streak = 0
        self._pending: bytes | None = None
        self._closed = False
        self._wake = threading.Condition()
        self._thread: threading.Thread | None = None
        # The service is reached directly: a proxy from the job's environment is never right.
        self._opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))

    @property
    def enabled(self) -> bool:
        return self.url is not None

    def report(self, step: int, samples_per_second: float, **metrics: Any) -> None:
        """Queue the newest progress; returns at once and never raises. Metrics that are not
        finite numbers (text, NaN) are left out: the service stores numbers only."""
        if self.url is None or self._closed:
            return
        try:
            body = _payload(step, samples_per_second, metrics, self.world_size, self.attempt)
            with self._wake:
                self._pending = body
                self._start_thread()
                self._wake.notify()
        except Exception as error:  # a report must never break the training loop
            log.debug("progress report dropped: %s", error)

    def close(self, timeout: float | None = None) -> None:
        """Send what is pending (bounded by ``timeout``, default the HTTP timeout) and stop."""
        with self._wake:
            self._closed = True
            self._wake.notify()
        if self._thread is not None:
            self._thread.join(self.timeout + 0.5 if timeout is None else timeout)

    def __enter__(self) -> Reporter:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        self.close()

    def _start_thread(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._send_loop, name="dlsched-reporter",
                                            daemon=True)
            self._thread.start()

    def _send_loop(self) -> None:
        while True:
            with self._wake:
                while self._pending is None and not self._closed:
                    self._wake.wait()
                body, self._pending = self._pending, None
                closing = self._closed
            if body is not None:
                self._post(body)
            if closing:
                return
            self._pause(self._backoff())

    def _pause(self, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        with self._wake:
            while not self._closed and (left := deadline - time.monotonic()) > 0:
                self._wake.wait(left)

    def _backoff(self) -> float:
        """``min_interval`` while the service answers; doubling up to ``max_backoff`` if not."""
        if self._failure_streak == 0:
            return self.min_interval
        doubled = max(self.min_interval, 0.5) * 2 ** min(self._failure_streak - 1, 8)
        return min(self.max_backoff, doubled)

    def _post(self, body: bytes) -> None:
        try:
            request = urllib.request.Request(self.url or "", data=body, headers=self.headers,
                                             method="POST")
            with self._opener.open(request, timeout=self.timeout) as response:
                response.read()
            self.sent += 1
            self._failure_streak = 0
        except Exception as error:  # service down, slow, refusing: training goes on
            self.failed += 1
            self._failure_streak += 1
            level = logging.WARNING if self.failed == 1 else logging.DEBUG
            log.log(level, "progress report to %s failed: %s", self.url, error)


def _progress_url(ctx: JobContext) -> str | None:
    if not ctx.service_url:
        return None
    return f"{ctx.service_url}/v1/jobs/{urllib.parse.quote(ctx.job_id, safe='')}/progress"


def _payload(step: int, samples_per_second: float, metrics: dict[str, Any],
             world_size: int, attempt: int) -> bytes:
    speed = float(samples_per_second)
    numbers = {str(name): number for name, value in metrics.items()
               if (number := _number(value)) is not None}
    body = {"step": int(step), "samples_per_second": speed if math.isfinite(speed) else 0.0,
            "metrics": numbers, "world_size": int(world_size), "attempt": int(attempt)}
    return json.dumps(body, allow_nan=False).encode()


def _number(value: Any) -> float | None:
    """A finite float (tensors and NumPy scalars via ``item()``), or None: the service takes
    numeric metrics only, and NaN or infinity are not JSON."""
    if hasattr(value, "item"):
        value = value.item()
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    number = float(value)
    return number if math.isfinite(number) else None
