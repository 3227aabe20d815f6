"""The cluster's state after each cycle, as the core records it for reports."""

from __future__ import annotations

from array import array
from collections.abc import MutableSequence
from dataclasses import dataclass, field


@dataclass
class Timeline:
    """Cluster state after each cycle: time, GPUs in use, jobs waiting, jobs running. Lists,
    or (``of_arrays``, the core's) typed arrays: 32 bytes an entry instead of ~140."""

    times: MutableSequence[float] = field(default_factory=list)
    used_gpus: MutableSequence[float] = field(default_factory=list)
    waiting: MutableSequence[int] = field(default_factory=list)
    running: MutableSequence[int] = field(default_factory=list)

    @classmethod
    def of_arrays(cls) -> Timeline:
        return cls(array("d"), array("d"), array("q"), array("q"))

    def record(self, now: float, used: float, waiting: int, running: int) -> None:
        times = self.times
        if times:
            if times[-1] == now:
                self.used_gpus[-1], self.waiting[-1], self.running[-1] = used, waiting, running
                return
            if (self.used_gpus[-1] == used and self.waiting[-1] == waiting
                    and self.running[-1] == running):
                return
        times.append(now)
        self.used_gpus.append(used)
        self.waiting.append(waiting)
        self.running.append(running)
