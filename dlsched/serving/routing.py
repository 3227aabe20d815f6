"""Request-level simulation of one service: requests from a trace routed across its replicas.

Routing is join-the-shortest-queue on outstanding requests (least outstanding requests, as
vLLM's production router and Llumnix's dispatcher do; Winston, J. Appl. Prob. 1977, shows it
optimal for identical servers): a request goes to the replica with the fewest requests queued
or running among those started by its arrival (the earliest to start if none has), ties to the
lowest index. Before routing a request, every replica runs the iterations that start before its
arrival, so the counts are those the router would see.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Protocol

from dlsched.serving.llm_replica import RequestLog
from dlsched.serving.requests import RequestTrace


class Replica(Protocol):
    time: float
    busy_seconds: float
    iterations: int
    peak_batch: int
    rejected: list[int]

    @property
    def outstanding(self) -> int: ...

    def enqueue(self, request: int, now: float) -> None: ...

    def advance(self, until: float) -> None: ...


ReplicaFactory = Callable[[RequestLog, float], Replica]


def simulate_requests(trace: RequestTrace, make: ReplicaFactory,
                      starts: Sequence[float]) -> tuple[RequestLog, list[Replica]]:
    """Serve ``trace`` on one replica per entry of ``starts`` (when each became available)."""
    log = RequestLog.empty(trace.arrival, trace.prompt, trace.output)
    if not starts:
        return log, []
    replicas = [make(log, start) for start in starts]
    first = min(range(len(starts)), key=lambda k: (starts[k], k))
    arrival = trace.arrival.tolist()
    pairs = list(zip(starts, replicas, strict=True))
    for request, t in enumerate(arrival):
        best, best_load = None, math.inf
        for start, replica in pairs:
            replica.advance(t)
            if start <= t and replica.outstanding < best_load:
                best, best_load = replica, replica.outstanding
        (best or replicas[first]).enqueue(request, t)
    for replica in replicas:
        replica.advance(math.inf)
    return log, replicas
