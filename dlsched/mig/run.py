"""A MIG cluster run: jobs asking for MIG profiles arrive, wait in arrival order (a job that
does not fit lets later ones try), run on an instance for their duration and leave; and the
MIG report (slices used, reconfigurations, drains, large profiles placed).

Jobs come from a CSV (``job_id,submit_time,duration,mig_profile``; ``duration`` may be
``inf``: the job never leaves, as in a packing experiment); a bad row is an ``InputError``
naming the file, line and field.
"""

from __future__ import annotations

import heapq
import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from dlsched.errors import InputError, InputLocation
from dlsched.mig.gpu import MigGpu
from dlsched.mig.placement import MigAware, MigPlacer
from dlsched.mig.profiles import COMPUTE_SLICES, MigProfile, UnknownMigProfile, mig_profile
from dlsched.workload.readers.base import RowContext, iter_csv_rows

LARGE = 3  # 3g and above count as large profiles
COLUMNS = ("job_id", "submit_time", "duration", "mig_profile")
INFINITE = ("inf", "+inf", "infinity", "+infinity")  # a job that never leaves


@dataclass(frozen=True, slots=True)
class MigJob:
    job_id: str
    submit_time: float
    duration: float
    profile: MigProfile


@dataclass
class MigReport:
    placement: str
    gpus: int
    jobs: int
    placed_by_profile: dict[str, int] = field(default_factory=dict)
    waiting_at_end: dict[str, int] = field(default_factory=dict)
    mean_wait_by_profile: dict[str, float] = field(default_factory=dict)
    compute_slice_seconds: float = 0.0
    end_time: float = 0.0
    peak_slices_used: int = 0
    reconfigurations: int = 0
    drains: int = 0

    @property
    def large_placed(self) -> int:
        return sum(n for name, n in self.placed_by_profile.items() if int(name[0]) >= LARGE)

    @property
    def slice_utilization(self) -> float:
        """Compute slices held by jobs over the run, as a share of all GPUs' slices."""
        total = self.gpus * COMPUTE_SLICES * self.end_time
        return self.compute_slice_seconds / total if total > 0 else 0.0


def read_mig_jobs(path: str | Path, gpu_type: str = "a100") -> list[MigJob]:
    """The jobs of a MIG job CSV; ``file:line:field`` errors for bad rows, read by the trace
    readers' rules (an empty file, a row with too few or too many fields, an empty value)."""
    jobs = []
    first: dict[str, int] = {}  # job id -> its line
    for ctx in iter_csv_rows(Path(path), COLUMNS):
        if ctx.problem is not None:
            raise ctx.fail(ctx.problem_field, ctx.problem)
        jobs.append(_job(ctx, gpu_type))
        _check_id(jobs[-1].job_id, ctx.where(), first)
    return jobs


def _check_id(job_id: str, where: InputLocation, first: dict[str, int]) -> None:
    """A job id must be given, and once: the run keys its jobs by id."""
    at = InputLocation(where.path, where.line, "job_id")
    if job_id in first:
        raise InputError(at, f"job id {job_id!r} is used twice: on line {first[job_id]} and "
                             f"on line {where.line}")
    first[job_id] = where.line or 0


def _job(ctx: RowContext, gpu_type: str) -> MigJob:
    job_id = ctx.text("job_id") or ""
    submit = ctx.number("submit_time", minimum=0) or 0.0
    raw = ctx.text("duration") or ""
    duration = math.inf if raw.casefold() in INFINITE else ctx.number("duration", minimum=0)
    try:
        profile = mig_profile(ctx.text("mig_profile") or "", gpu_type)
    except UnknownMigProfile as exc:
        raise ctx.fail("mig_profile", str(exc)) from None
    return MigJob(job_id, submit, duration or 0.0, profile)


def run_mig(jobs: Sequence[MigJob], num_gpus: int, placer: MigPlacer,
            until: float = math.inf) -> MigReport:
    """Simulate the jobs on ``num_gpus`` MIG GPUs with ``placer`` up to time ``until``;
    the report."""
    gpus = [MigGpu(i) for i in range(num_gpus)]
    report = MigReport(placer.name, num_gpus, len(jobs))
    events: list[tuple[float, int, str, int]] = []  # (time, 0 end / 1 arrival, job id, index)
    for k, job in enumerate(sorted(jobs, key=lambda j: (j.submit_time, j.job_id))):
        heapq.heappush(events, (job.submit_time, 1, job.job_id, k))
    ordered = sorted(jobs, key=lambda j: (j.submit_time, j.job_id))
    waiting: list[MigJob] = []
    where: dict[str, MigGpu] = {}
    waits: dict[str, list[float]] = {}
    now = used = 0.0
    index = {j.job_id: k for k, j in enumerate(ordered)}
    while events:
        if events[0][0] > until:
            break
        time, kind, job_id, k = heapq.heappop(events)
        report.compute_slice_seconds += used * (time - now)
        now = time
        if kind == 0:
            gpu = where.pop(job_id)
            used -= ordered[k].profile.compute
            gpu.destroy(job_id)
        else:
            waiting.append(ordered[k])
        if events and events[0][0] == now:
            continue  # settle every event at this instant first
        used += _start_waiting(waiting, gpus, placer, where, waits, events, now, ordered,
                               index)
        report.peak_slices_used = max(report.peak_slices_used, int(used))
    report.end_time = now
    _finish(report, gpus, waiting, waits)
    return report


def _start_waiting(waiting: list[MigJob], gpus: list[MigGpu], placer: MigPlacer,
                   where: dict[str, MigGpu], waits: dict[str, list[float]],
                   events: list, now: float, ordered: Sequence[MigJob],
                   index: dict[str, int]) -> float:
    """Start what fits, in arrival order; drain a GPU for a large job that fits nowhere."""
    def ending(gpu: MigGpu) -> bool:
        return all(not math.isinf(ordered[index[i.job_id]].duration) for i in gpu.instances)

    started = 0.0
    for job in list(waiting):
        choice = placer.choose(gpus, job.profile)
        if choice is None:
            if placer.drains and isinstance(placer, MigAware) and job.profile.compute >= LARGE:
                gpu = placer.to_drain(gpus, ending)
                if gpu is not None:
                    gpu.drain()
            continue
        gpu, start = choice
        gpu.create(job.profile, start, job.job_id)
        where[job.job_id] = gpu
        waiting.remove(job)
        waits.setdefault(job.profile.name, []).append(now - job.submit_time)
        started += job.profile.compute
        if not math.isinf(job.duration):
            heapq.heappush(events, (now + job.duration, 0, job.job_id, index[job.job_id]))
    return started


def _finish(report: MigReport, gpus: list[MigGpu], waiting: list[MigJob],
            waits: dict[str, list[float]]) -> None:
    report.placed_by_profile = {name: len(w) for name, w in sorted(waits.items())}
    report.mean_wait_by_profile = {name: sum(w) / len(w) for name, w in sorted(waits.items())}
    report.waiting_at_end = dict(sorted(Counter(j.profile.name for j in waiting).items()))
    report.reconfigurations = sum(g.reconfigurations for g in gpus)
    report.drains = sum(g.drains for g in gpus)
