"""Measured throughput: the speeds running jobs report, preferred over the trace model.

Issue 3 item 4: policies that need throughput (Optimus's speed fit, Pollux, Gavel, remaining
times) get it from the workers' reports (``dlsched.job.Reporter`` posts samples/s and the world
size it ran with). A report is in the job's own unit (samples/s); the core counts work in the
model's units (for runtime jobs, seconds at the requested size: a job's rate there is 1.0 by
definition, ``perf/model.py``). So what measurements add over the model is how the job really
scales: the first size a job is measured at is its *reference*, where its rate is the model's,
and the latest report there fixes the conversion ``samples_per_unit = reported / predicted``
(a warm-up report, slow from start-up work, is soon replaced). Any other measured size gets
``reported / samples_per_unit``: a job seen at 120 samples/s on 4 workers and 50 on 1 runs at
2.4x, not the model's 4x (the idea of Optimus §4.2 and Pollux §3: fit a job's speed to what it
was observed to do, not to a guess).

A size never measured gets the model's prediction times the measured-to-predicted ratio of the
nearest measured size (ties: the smaller), so a job seen to scale at 60 % efficiency at 4
workers is not assumed perfect at 3. The latest report at a size replaces the earlier one.
"""

from __future__ import annotations

from dataclasses import dataclass

from dlsched.perf.model import Placement, ThroughputModel
from dlsched.workload.job import JobSpec


@dataclass(frozen=True)
class Measurement:
    samples_per_second: float
    predicted: float  # the model's rate (work units/s) at the placement it was measured on


class MeasuredThroughput:
    """A ``ThroughputModel`` that answers from measurements where it has them, else from
    ``base``. Not thread-safe: the service uses it under its lock."""

    def __init__(self, base: ThroughputModel) -> None:
        self.base = base
        self.name = f"measured({base.name})"
        self._samples_per_unit: dict[str, float] = {}
        self._reference: dict[str, int] = {}  # the first worker count a job was measured at
        self._measured: dict[str, dict[int, Measurement]] = {}

    def record(self, spec: JobSpec, placement: Placement, samples_per_second: float) -> bool:
        """Take a job's reported speed on ``placement``; True if the job's rate may change."""
        predicted = self.base.rate(spec, placement)
        if not (samples_per_second > 0 and predicted > 0):
            return False  # nothing to learn: not running, or a rate the model cannot convert
        workers = placement.num_workers
        if self._reference.setdefault(spec.job_id, workers) == workers:
            self._samples_per_unit[spec.job_id] = samples_per_second / predicted
        seen = self._measured.setdefault(spec.job_id, {})
        old = seen.get(workers)
        seen[workers] = Measurement(samples_per_second, predicted)
        return old is None or old.samples_per_second != samples_per_second

    def measured(self, job_id: str, workers: int) -> float | None:
        """The last reported samples/s of ``job_id`` at ``workers`` workers, if any."""
        found = self._measured.get(job_id, {}).get(workers)
        return found.samples_per_second if found is not None else None

    def forget(self, job_id: str) -> None:
        self._samples_per_unit.pop(job_id, None)
        self._reference.pop(job_id, None)
        self._measured.pop(job_id, None)

    def rate(self, spec: JobSpec, placement: Placement) -> float:
        predicted = self.base.rate(spec, placement)
        seen = self._measured.get(spec.job_id)
        if not seen or predicted <= 0:
            return predicted
        unit = self._samples_per_unit[spec.job_id]
        workers = placement.num_workers
        if workers in seen:
            return seen[workers].samples_per_second / unit
        nearest = seen[min(seen, key=lambda n: (abs(n - workers), n))]
        return predicted * nearest.samples_per_second / (unit * nearest.predicted)

    def reference_rate(self, spec: JobSpec) -> float:
        return self.base.reference_rate(spec)
