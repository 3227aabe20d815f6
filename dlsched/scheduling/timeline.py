"""The cluster's state after each cycle, as the core records it for reports."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Timeline:
    """Cluster state after each cycle: time, GPUs in use, jobs waiting, jobs running."""

    times: list[float] = field(default_factory=list)
    used_gpus: list[float] = field(default_factory=list)
    waiting: list[int] = field(default_factory=list)
    running: list[int] = field(default_factory=list)

    def record(self, now: float, used: float, waiting: int, running: int) -> None:
        if self.times and self.times[-1] == now:
            self.used_gpus[-1], self.waiting[-1], self.running[-1] = used, waiting, running
            return
        if self.times and (self.used_gpus[-1], self.waiting[-1], self.running[-1]) == (
                used, waiting, running):
            return
        self.times.append(now)
        self.used_gpus.append(used)
        self.waiting.append(waiting)
        self.running.append(running)
