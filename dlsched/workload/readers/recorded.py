"""What an accounting trace recorded of the schedule that ran it (Slurm's ``sacct``, Kubernetes'
Jobs and Kueue's Workloads): its jobs' mean JCT, mean queueing delay and makespan, printed
beside the replay (docs/what-if.md). A replay of the same jobs on the cluster that ran them,
under the policy closest to the scheduler's, should come near these figures; the other
policies' rows are the what-if. Without them a report of a replay had nothing to compare with."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from dlsched.wording import duration_text
from dlsched.workload.job import JobSpec
from dlsched.workload.trace import Trace


@dataclass
class Recorded:
    """Each job's recorded (submission, start, end), UNIX seconds, by job id."""

    spans: dict[str, tuple[float, float, float]] = field(default_factory=dict)

    def add(self, job_id: str, submit: float, start: float, end: float) -> None:
        self.spans[job_id] = (submit, start, end)

    def note(self, path: Path, jobs: Sequence[JobSpec]) -> str | None:
        """One line over the jobs the trace kept (a row refused after its span was noted,
        e.g. a repeated id, does not count)."""
        kept = [self.spans[j.job_id] for j in jobs if j.job_id in self.spans]
        if not kept:
            return None
        jct = statistics.fmean(end - submit for submit, _, end in kept)
        wait = statistics.fmean(start - submit for submit, start, _ in kept)
        span = max(end for _, _, end in kept) - min(submit for submit, _, _ in kept)
        return (f"{path}: as recorded, its {len(kept)} jobs had a mean JCT of "
                f"{duration_text(jct)}, a mean queueing delay of {duration_text(wait)} and a "
                f"makespan of {duration_text(span)} (a replay on the cluster that ran them "
                "should come near: docs/what-if.md)")

    def noted(self, trace: Trace, path: Path) -> Trace:
        """``trace`` with the note after its warnings (not counted as skipped rows)."""
        line = self.note(path, trace.jobs)
        return trace if line is None else replace(trace, warnings=(*trace.warnings, line))
