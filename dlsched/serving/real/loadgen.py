"""A load generator: replays a request trace against a service's HTTP endpoint, open loop
(each request is sent at its trace time whatever the service's state), and records per-request
times. Prompts are seeded random bytes of the trace's prompt length; ``max_tokens`` is its
output length.

The trace's token counts are those of a 70B model's users (Azure: median 1,020 prompt and 129
output tokens in conversations); ``shrink`` scales them down for a CPU model, keeping their
distribution's shape (the same scale applied to every request, clipped to the context).
"""

from __future__ import annotations

import asyncio
import csv
import random
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from dlsched.errors import DlschedError
from dlsched.serving.llm_replica import RequestLog
from dlsched.serving.requests import RequestTrace


class ReplayFailed(DlschedError):
    """The service could not be reached during a replay."""


LOST = 0  # a request's status when no HTTP answer came (connection refused, dropped, timed out)


def shrink(trace: RequestTrace, prompt_scale: float, output_scale: float, max_context: int,
           most_requests: int | None = None) -> RequestTrace:
    """The first ``most_requests`` requests with token counts scaled (ceil, >= 1 prompt and
    >= 2 output tokens), each prompt cut so prompt + output fit ``max_context``."""
    n = len(trace) if most_requests is None else min(len(trace), most_requests)
    output = np.clip(np.ceil(trace.output[:n] * output_scale), 2, max_context // 4)
    prompt = np.clip(np.ceil(trace.prompt[:n] * prompt_scale), 1, max_context - output)
    return RequestTrace(f"{trace.name}/tokens{prompt_scale:g},{output_scale:g}",
                        trace.arrival[:n] - trace.arrival[0], prompt.astype(np.int64),
                        output.astype(np.int64))


@dataclass(frozen=True)
class Measured:
    request: int
    scheduled: float  # seconds from the start of the replay
    sent: float
    first_token: float
    finished: float  # the replica's stamp
    received: float  # the client's
    prompt: int
    output: int
    replica: int
    preemptions: int
    status: int  # the HTTP status, or LOST


def prompt_tokens(request: int, length: int, seed: int) -> list[int]:
    rng = random.Random(seed * 1_000_003 + request)
    return [rng.randrange(256) for _ in range(length)]


@dataclass(frozen=True)
class Replay:
    """A replay's rows (one per request, in trace order) and why the first request lost
    (status ``LOST``: no HTTP answer) got none; None when none was lost."""

    rows: list[Measured]
    first_loss: str | None = None

    @property
    def lost(self) -> int:
        return sum(r.status == LOST for r in self.rows)


async def replay(url: str, trace: RequestTrace, seed: int = 0, lead: float = 0.5
                 ) -> list[Measured]:
    """Each request of ``trace`` sent at its time; a service that answers none (it cannot be
    reached) is a ``ReplayFailed``, one line, not httpx's traceback; requests that got no
    answer otherwise (a connection dropped midway) are rows of status ``LOST``."""
    return (await replay_all(url, trace, seed, lead)).rows


def check_url(url: str) -> None:
    """A ``ReplayFailed`` naming ``--url`` unless it is an http(s) URL with a host."""
    import httpx

    try:
        parsed = httpx.URL(url)
    except httpx.InvalidURL as exc:
        raise ReplayFailed(f"--url {url}: not a URL: {exc}") from None
    if parsed.scheme not in ("http", "https") or not parsed.host:
        raise ReplayFailed(f"--url {url}: expected http://HOST:PORT (or https://)")


async def replay_all(url: str, trace: RequestTrace, seed: int = 0, lead: float = 0.5) -> Replay:
    """``replay`` with why requests were lost."""
    import httpx

    check_url(url)
    limits = httpx.Limits(max_connections=None, max_keepalive_connections=64)
    losses: list[str] = []
    async with httpx.AsyncClient(base_url=url, timeout=600.0, limits=limits) as client:
        t0 = time.time() + lead
        tasks = [asyncio.create_task(_one(client, t0, i, float(at), int(p), int(o), seed,
                                          losses))
                 for i, (at, p, o) in enumerate(zip(trace.arrival, trace.prompt,
                                                    trace.output, strict=True))]
        rows = list(await asyncio.gather(*tasks))
    if rows and all(r.status == LOST for r in rows):
        raise ReplayFailed(f"--url {url}: {losses[0]} (is a service such as "
                           "`dlsched inference serve` listening there?)")
    return Replay(rows, losses[0] if losses else None)


async def _one(client: object, t0: float, request: int, at: float, prompt: int,
               output: int, seed: int, losses: list[str]) -> Measured:
    import httpx

    body = {"prompt_tokens": prompt_tokens(request, prompt, seed), "max_tokens": output}
    await asyncio.sleep(max(0.0, t0 + at - time.time()))
    sent = time.time()
    nan = float("nan")
    try:
        response = await client.post("/v1/completions", json=body)  # type: ignore[attr-defined]
    except httpx.TransportError as exc:  # refused, dropped or timed out: no answer
        losses.append(str(exc) or type(exc).__name__)
        return Measured(request, at, sent - t0, nan, nan, nan, prompt, output, -1, 0, LOST)
    received = time.time()
    if response.status_code != 200:
        return Measured(request, at, sent - t0, nan, nan, received - t0, prompt, output, -1,
                        0, response.status_code)
    out = response.json()
    return Measured(request, at, sent - t0, out["first_token"] - t0, out["finished"] - t0,
                    received - t0, prompt, output, out["replica"], out["preemptions"], 200)


def write_measured(rows: list[Measured], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(Measured.__dataclass_fields__))
        writer.writeheader()
        writer.writerows(asdict(r) for r in rows)


def read_measured(path: Path) -> list[Measured]:
    """``write_measured``'s rows back (its floats are written exactly)."""
    types = [(name, int if f.type in ("int", int) else float)
             for name, f in Measured.__dataclass_fields__.items()]
    with path.open(newline="") as f:
        return [Measured(**{name: kind(row[name]) for name, kind in types})
                for row in csv.DictReader(f)]


def replayed_trace(rows: list[Measured], name: str) -> RequestTrace:
    """The trace a replay was given (its scheduled times and token counts)."""
    rows = sorted(rows, key=lambda r: r.request)
    return RequestTrace(name, np.array([r.scheduled for r in rows], dtype=float),
                        np.array([r.prompt for r in rows], dtype=np.int64),
                        np.array([r.output for r in rows], dtype=np.int64))


def measured_log(rows: list[Measured]) -> RequestLog:
    """The replay as the simulator's request log: arrival when sent, first token as the
    replica stamped it, finish when the client received the answer."""
    rows = sorted(rows, key=lambda r: r.request)
    log = RequestLog.empty(np.array([r.sent for r in rows]),
                           np.array([r.prompt for r in rows], dtype=np.int64),
                           np.array([r.output for r in rows], dtype=np.int64))
    log.first_token[:] = [r.first_token for r in rows]
    log.finish[:] = [r.received for r in rows]
    log.preemptions[:] = [r.preemptions for r in rows]
    return log
