"""Each job's runs on the cluster: one segment per start (or resize), from its start to the
moment its GPUs went back (finish, preemption, failure, resize), with the GPUs it held. The core
opens and closes them (``Scheduler._launch`` / ``_release``); ``report/tenant_output.py`` writes
them as ``segments.csv``."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Segment:
    job_id: str
    start: float
    end: float | None  # None: still running when the run ended
    gpus: tuple[int, ...]
    shares: tuple[float, ...]


class RunSegments:
    def __init__(self) -> None:
        self.closed: list[Segment] = []
        self._open: dict[str, tuple[float, tuple[int, ...], tuple[float, ...]]] = {}

    def opened(self, job_id: str, now: float, gpus: tuple[int, ...],
               shares: tuple[float, ...]) -> None:
        self._open[job_id] = (now, gpus, shares)

    def ended(self, job_id: str, now: float) -> None:
        began = self._open.pop(job_id, None)
        if began is not None:
            self.closed.append(Segment(job_id, began[0], now, began[1], began[2]))

    def all(self) -> list[Segment]:
        """Closed segments, then those still open, by start time then job id."""
        still = [Segment(j, s, None, g, sh) for j, (s, g, sh) in self._open.items()]
        return sorted(self.closed + still, key=lambda s: (s.start, s.job_id))
