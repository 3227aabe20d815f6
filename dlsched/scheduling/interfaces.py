"""The two things the simulator and the runtime do not share: a clock and an executor."""

from __future__ import annotations

from typing import Protocol

from dlsched.workload.job import Job


class Clock(Protocol):
    def now(self) -> float: ...


class Executor(Protocol):
    """Makes decisions real: starts workers on GPUs, stops them. The simulator's executor
    schedules completion events; the runtime's launches processes or Ray actors."""

    def start(self, job: Job, now: float) -> None: ...

    def stop(self, job: Job, now: float) -> None: ...
