"""A trace: the jobs of one workload, with where they came from."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from operator import attrgetter

from dlsched.workload.job import JobSpec

_ORDER = attrgetter("submit_time", "job_id")  # submission order


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
        ordered = tuple(sorted(self.jobs, key=_ORDER))
        object.__setattr__(self, "jobs", ordered)
        ids = {j.job_id for j in ordered}
        if len(ids) != len(ordered):
            raise ValueError(f"trace {self.name}: job ids are not unique")

    def __len__(self) -> int:
        return len(self.jobs)

    def head(self, n: int) -> Trace:
        """The first ``n`` jobs (in submission order), keeping the rest of the description."""
        return replace(self, jobs=self.jobs[:n])
