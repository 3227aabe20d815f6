"""Progress of a simulation for a progress bar: reported by wall-clock throttle, not by a
count of finished jobs, so a 160-job Pollux trace whose rounds take seconds shows its
simulated time moving long before the first job finishes (issue 11 item 9)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from dlsched.sim.simulator import Simulator

INTERVAL_SECONDS = 0.2  # between two reports, wall clock: a bar needs no more


@dataclass(frozen=True, slots=True)
class SimProgress:
    """Where a run stands: jobs finished of the trace's, the simulated time, and how many jobs
    run and wait (what a round-based policy changes while nothing finishes)."""

    finished: int
    total: int
    now: float
    running: int
    waiting: int

    def describe(self) -> str:
        return (f"t={self.now / 3600:.2f} h, {self.running} running, "
                f"{self.waiting} waiting")


ProgressCallback = Callable[[SimProgress], None]


class ProgressReporter:
    """Calls ``callback`` at most once per ``interval`` wall seconds (checked after each
    cycle, the expensive step), and once at the end."""

    def __init__(self, callback: ProgressCallback, interval: float = INTERVAL_SECONDS) -> None:
        self.callback, self.interval = callback, interval
        self._last = time.perf_counter()

    def tick(self, sim: Simulator) -> None:
        now = time.perf_counter()
        if now - self._last >= self.interval:
            self._last = now
            self.callback(snapshot(sim))

    def done(self, sim: Simulator) -> None:
        self.callback(snapshot(sim))


def snapshot(sim: Simulator) -> SimProgress:
    core = sim.core
    return SimProgress(sim.finished, len(sim.trace), sim.clock.now(), len(core.running),
                       len(core.waiting))
