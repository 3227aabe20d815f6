"""Simulated time: advanced by the event loop, read by the scheduler core."""

from __future__ import annotations


class SimClock:
    def __init__(self, start: float = 0.0) -> None:
        self.time = start

    def now(self) -> float:
        return self.time
