"""A trace: the jobs of one workload, with where they came from."""

from __future__ import annotations

from dataclasses import dataclass, field

from dlsched.workload.job import JobSpec


@dataclass(frozen=True)
class Trace:
    """An ordered, immutable workload.

    ``throughput`` names the throughput model the trace's jobs need (``linear`` for duration-only
    traces, ``gavel`` for Gavel job types, ``pollux`` for Pollux/Sia applications).
    ``skipped`` counts rows dropped by ``skip_invalid``; ``warnings`` holds their messages.
    """

    name: str
    jobs: tuple[JobSpec, ...]
    source: str = ""
    format: str = ""
    throughput: str = "linear"
    skipped: int = 0
    warnings: tuple[str, ...] = field(default=(), repr=False)

    def __post_init__(self) -> None:
        ordered = tuple(sorted(self.jobs, key=lambda j: (j.submit_time, j.job_id)))
        object.__setattr__(self, "jobs", ordered)
        ids = {j.job_id for j in ordered}
        if len(ids) != len(ordered):
            raise ValueError(f"trace {self.name}: job ids are not unique")

    def __len__(self) -> int:
        return len(self.jobs)

    def head(self, n: int) -> Trace:
        return Trace(self.name, self.jobs[:n], self.source, self.format, self.throughput)

    def rebased(self) -> Trace:
        """The same trace with the first submission at time 0."""
        if not self.jobs:
            return self
        t0 = self.jobs[0].submit_time
        if t0 == 0:
            return self
        from dataclasses import replace

        jobs = tuple(replace(j, submit_time=j.submit_time - t0) for j in self.jobs)
        return Trace(self.name, jobs, self.source, self.format, self.throughput, self.skipped,
                     self.warnings)
