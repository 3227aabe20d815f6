"""What a simulation produces: one record per job, the cluster timeline, and run metadata."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from dlsched import __version__
from dlsched.scheduling.decisions import waiting_reason
from dlsched.scheduling.rerating import GoodputPoint
from dlsched.scheduling.resilience import JobLosses
from dlsched.scheduling.timeline import Timeline
from dlsched.slots import slot_builder
from dlsched.workload.job import Job

if TYPE_CHECKING:
    from dlsched.scheduling.scheduler import Scheduler
    from dlsched.sim.simulator import Simulator


@dataclass(frozen=True, slots=True)
class JobRecord:
    job_id: str
    queue: str
    num_gpus: int
    submit_time: float
    first_start: float | None
    finish_time: float | None
    status: str
    preemptions: int
    gpu_seconds: float
    work_done: float
    work: float
    pending_reason: str
    resizes: int = 0
    deadline: float | None = None
    failures: int = 0  # node failures that stopped it
    lost_work: float = 0.0  # work units done, then lost to failures
    lost_gpu_seconds: float = 0.0  # GPU time that produced the lost work
    checkpoint_gpu_seconds: float = 0.0  # GPU time stalled writing checkpoints
    restart_gpu_seconds: float = 0.0  # GPU time reloading checkpoints after failures
    # its kept work at its requested size's rate; an elastic job's, or one that ran at another
    # size than its request, at the rates it ran at (``JobLosses.productive_seconds``): the
    # ETTR's numerator
    useful_seconds: float = 0.0
    # Wall time it held GPUs over all its runs (restarts included); None: not recorded (a
    # record made by hand). Out of ``repr``, which the benchmarks' schedule digests hash.
    run_seconds: float | None = field(default=None, repr=False)
    # The sizes it may run at (an elastic job's range; a rigid job's is its size) and the GPUs
    # of its last run (0: never ran). 0 in a record made by hand. Out of ``repr`` likewise.
    # jobs.csv's ``num_gpus`` stays the size it asked for (its first, or for an ``llm-jobs``
    # job the smallest that fits); these become columns of runs with elastic jobs
    # (``report/output.py``, ``SIZE_COLUMNS``).
    min_gpus: int = field(default=0, repr=False)
    max_gpus: int = field(default=0, repr=False)
    last_gpus: int = field(default=0, repr=False)

    @property
    def jct(self) -> float | None:
        return None if self.finish_time is None else self.finish_time - self.submit_time

    @property
    def queueing_delay(self) -> float | None:
        return None if self.first_start is None else self.first_start - self.submit_time




@dataclass(frozen=True)
class RunInfo:
    policy: str
    trace: str
    cluster: str
    seed: int
    version: str
    policy_options: tuple[tuple[str, str], ...] = ()
    placement: str = "consolidated"
    restart_overhead: float = 0.0


@dataclass(frozen=True)
class SimulationResult:
    info: RunInfo
    jobs: Sequence[JobRecord]  # a tuple; with keep_finished=False, sim/finished.JobRecords
    timeline: Timeline
    total_gpus: int
    cycles: int
    cycle_seconds: float
    wall_seconds: float
    end_time: float
    goodput_series: tuple[GoodputPoint, ...] = ()
    type_gpu_seconds: tuple[tuple[str, float], ...] = ()  # (GPU type, GPU-seconds held)
    stalled_at: float | None = None  # the run ended here: the jobs left waiting never start
    failures_by_category: tuple[tuple[str, int], ...] = ()  # node failures (all, not only hits)
    lost_by_category: tuple[tuple[str, float], ...] = ()  # GPU-seconds lost and restarting
    # (pool, node failures that found no hot spare of it left; '' for no pool): empty
    # without ``--hot-spares`` or with a spare for every failure (``sim/spares.py``)
    failures_without_spare: tuple[tuple[str, int], ...] = ()
    # MIG slices, reconfigurations, drains (``MigBook.report``); None: no job asked for MIG.
    mig: dict[str, object] | None = None
    # GPU fragmentation over time (``fragmentation/over_time.py``); None: no fractional job.
    fragmentation: dict[str, object] | None = None
    # The policy's budgeted MILP solves and those cut short (``policies/elastic/mip_budget.py``);
    # empty: the policy solves none.
    solver: tuple[tuple[str, int], ...] = ()


_record = slot_builder(JobRecord)  # JobRecord(...) without its frozen __init__: one a job


def record_of(job: Job, now: float, reason: str | None = None,
              losses: JobLosses | None = None, reference_rate: float = 0.0) -> JobRecord:
    """The job's record at ``now``; a job still running is charged its GPUs up to ``now``."""
    running = 0.0 if job.run_started is None else now - job.run_started
    held = running * sum(job.shares)
    record = _record(job.job_id, job.spec.queue, job.spec.num_gpus, job.spec.submit_time,
                       job.first_start, job.finish_time, job.status.value, job.preemptions,
                       job.gpu_seconds + held, job.work_done(now), job.spec.work,
                       waiting_reason(job.pending_reason if reason is None else reason,
                                      job.status.is_waiting), job.resizes,
                       job.spec.deadline, *_NO_LOSSES, job.run_seconds + running, *_sizes(job))
    if losses is None:
        return record
    if (job.spec.is_elastic or losses.resized) and losses.raw_rate > 0:
        useful = losses.productive_seconds(job.work_done(now))
    else:
        useful = job.work_done(now) / reference_rate if reference_rate > 0 else 0.0
    return replace(record, failures=losses.failures, lost_work=losses.lost_work,
                   lost_gpu_seconds=losses.lost_gpu_seconds,
                   checkpoint_gpu_seconds=losses.checkpoint_gpu_seconds,
                   restart_gpu_seconds=losses.restart_gpu_seconds, useful_seconds=useful)


_NO_LOSSES = (0, 0.0, 0.0, 0.0, 0.0, 0.0)  # JobRecord's six loss fields without failures


def final_values(core: Scheduler, job: Job, now: float) -> tuple | None:
    """``final_record``'s fields as a tuple in ``JobRecord``'s order, without making the
    record (the simulator's ``keep_finished=False`` stores them as columns); None with a
    resilience book (its losses: ``final_record``)."""
    if core.resilience is not None:
        return None
    spec = job.spec
    running = 0.0 if job.run_started is None else now - job.run_started
    held = running * sum(job.shares)
    return (job.job_id, spec.queue, spec.num_gpus, spec.submit_time, job.first_start,
            job.finish_time, job.status.value, job.preemptions, job.gpu_seconds + held,
            job.work_done(now), spec.work, core.reason_for(job), job.resizes, spec.deadline,
            *_NO_LOSSES, job.run_seconds + running, *_sizes(job))


def _sizes(job: Job) -> tuple[int, int, int]:
    """(min_gpus, max_gpus, last_gpus) of its record: the range it may run at and the GPUs
    of its last run (``allocation`` keeps them after it stops; 0: it never ran)."""
    spec = job.spec
    return (spec.min_gpus or spec.num_gpus, spec.max_gpus or spec.num_gpus,
            len(job.allocation) if job.first_start is not None else 0)


def final_record(core: Scheduler, job: Job, now: float) -> JobRecord:
    """The job's record as ``collect_result`` makes it at ``now``."""
    book = core.resilience
    if book is None:
        return record_of(job, now, core.reason_for(job))
    return record_of(job, now, core.reason_for(job), book.of(job.job_id),
                     core.throughput.reference_rate(job.spec))


def solver_counts(plugins: Sequence[object]) -> tuple[tuple[str, int], ...]:
    """The plugins' solve counts (``SolveLog.counts``) summed by name; empty if none has a
    ``solve_log``."""
    totals: dict[str, int] = {}
    for plugin in plugins:
        log = getattr(plugin, "solve_log", None)
        for name, count in () if log is None else log.counts():
            totals[name] = totals.get(name, 0) + count
    return tuple(totals.items())


def collect_result(sim: Simulator, wall_seconds: float) -> SimulationResult:
    now = sim.clock.time
    info = RunInfo(policy=sim.profile.name, trace=sim.trace.name, cluster=sim.cluster.name,
                   seed=sim.config.seed, version=__version__,
                   policy_options=tuple(sorted(sim.profile.options.items())),
                   placement=sim.profile.placement,
                   restart_overhead=sim.config.restart_overhead)
    book, core = sim.core.resilience, sim.core
    jobs: Sequence[JobRecord]
    if sim.finished_jobs is not None:  # ended jobs left the core (keep_finished=False)
        from dlsched.sim.finished import JobRecords

        jobs = JobRecords(sim.finished_jobs, [(job.seq, final_record(core, job, now))
                                              for job in core.jobs.values()])
    else:
        jobs = tuple(final_record(core, job, now) for job in core.jobs.values())
    series = tuple(sim.core.goodput_series)
    result = SimulationResult(info, jobs, sim.core.timeline, sim.cluster.num_gpus,
                              sim.core.cycles, sim.core.cycle_seconds, wall_seconds, now,
                              series, tuple(sim.core.gpu_seconds_by_type(now).items()),
                              sim.stalled_at,
                              tuple(sorted(book.by_category.items())) if book else (),
                              tuple(sorted(book.lost_by_category.items())) if book else (),
                              solver=solver_counts(sim.profile.plugins),
                              failures_without_spare=() if sim.failures is None
                              else sim.failures.spares.shortfall_counts())
    if sim.core.mig is None and not sim.core.fractional_jobs:
        return result
    from dlsched.report.metrics import utilization_window

    # Slices over the window GPU utilization uses (first submit to last finish), not up to
    # the clock's end, which a round-based policy leaves past the last finish.
    window = utilization_window(result) or (0.0, now)
    if sim.core.mig is None:  # fractions of GPUs: their fragmentation (FGD, ATC'23)
        from dlsched.fragmentation.over_time import fragmentation_over_time

        specs = {spec.job_id: spec for spec in sim.trace.jobs}
        return replace(result, fragmentation=fragmentation_over_time(
            sim.cluster, specs, sim.core.segments.all(), window, sim.core.down_changes))
    return replace(result, mig=sim.core.mig.report(now, window))
