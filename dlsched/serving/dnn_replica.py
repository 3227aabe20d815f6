"""One DNN-model replica with dynamic batching and a timeout (Clockwork, Gujarati et al.,
OSDI'20; Nexus, Shen et al., SOSP'19; the rule of Triton's dynamic batcher): the replica, when
idle, dispatches the queue as one batch once it holds ``max_batch`` requests or its oldest
request has waited ``timeout`` seconds, whichever comes first; the batch takes the measured
latency of its size."""

from __future__ import annotations

from collections import deque

from dlsched.perf.inference.batch_latency import BatchLatency
from dlsched.serving.llm_replica import RequestLog


class DnnReplica:
    def __init__(self, latency: BatchLatency, log: RequestLog, max_batch: int, timeout: float,
                 start: float = 0.0) -> None:
        self.latency, self.log = latency, log
        self.max_batch, self.timeout = max_batch, timeout
        self.time = start
        self.waiting: deque[int] = deque()
        self.busy_seconds = 0.0
        self.iterations = 0
        self.peak_batch = 0
        self.series: list[tuple[float, int, int]] = []  # (time, batch, 0) per batch and after
        self.rejected: list[int] = []
        self.lost: list[int] = []  # requests it held when it went away (``stop``)
        self._batch: list[int] = []  # the requests of the batch that ends at ``time``
        self.now = start  # the latest time ``advance`` reached
        self.in_flight = 0  # requests of the batch that ends at ``time``

    @property
    def outstanding(self) -> int:
        return len(self.waiting) + (self.in_flight if self.time > self.now else 0)

    @property
    def wakes_at(self) -> float:
        """``advance(until)`` changes nothing for ``until < wakes_at`` (routing's index): the
        next dispatch, or the end of the batch in flight, which ``outstanding`` counts until
        ``advance`` reaches it."""
        due = self._dispatch_time() if self.waiting else float("inf")
        return min(due, self.time) if self.in_flight and self.time > self.now else due

    def enqueue(self, request: int, now: float) -> None:
        self.waiting.append(request)

    def _dispatch_time(self) -> float:
        arrival = self.log.arrival
        if len(self.waiting) >= self.max_batch:
            ready = float(arrival[self.waiting[self.max_batch - 1]])
        else:
            ready = float(arrival[self.waiting[0]]) + self.timeout
        return max(self.time, ready)

    def advance(self, until: float) -> None:
        """Dispatch every batch that leaves before ``until`` (all requests arriving before
        ``until`` are queued by then)."""
        arrival = self.log.arrival
        self.now = max(self.now, until)
        while self.waiting:
            at = self._dispatch_time()
            if at >= until:
                return
            batch = []
            while self.waiting and len(batch) < self.max_batch and \
                    arrival[self.waiting[0]] <= at:
                batch.append(self.waiting.popleft())
            seconds = self.latency.seconds(len(batch))
            self.time = at + seconds
            self.busy_seconds += seconds
            self.iterations += 1
            self.peak_batch = max(self.peak_batch, len(batch))
            self.in_flight = len(batch)
            self._batch = batch
            self.series += [(at, len(batch), 0), (self.time, 0, 0)]
            for r in batch:
                self.log.mark_started(r, at)
                self.log.first_token[r] = self.time
                self.log.finish[r] = self.time

    def stop(self, at: float) -> None:
        """The replica goes away at ``at`` (preempted, or its node failed): batches that
        leave by then count; the batch still running at ``at`` and the queue are lost
        (``lost``: unfinished, so they miss the SLO)."""
        self.advance(at)
        log = self.log
        if self.time > at and self.in_flight:  # the batch in flight never returns its results
            for r in self._batch:
                log.first_token[r] = log.finish[r] = float("nan")
            self.lost += self._batch
            self.busy_seconds -= self.time - at
            self.time, self.in_flight = at, 0
            self.series[-1] = (at, 0, 0)  # it ended here, not when the batch would have
        self.lost += list(self.waiting)
        self.waiting.clear()
