"""Summary metrics of one simulation run: job completion times, queueing delay, utilization.

``Summary`` is a stable contract: scripts read its field names from ``summary.json``. What each
field means and how it is computed is in ``docs/report.md``.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, fields

import numpy as np

from dlsched.report.fairness import FairnessInputs, fairness
from dlsched.report.job_table import JobTable, job_table
from dlsched.sim.result import JobRecord, SimulationResult

FINISHED = "finished"
# Fields that measure the host machine, not the schedule: they differ between identical runs.
TIMING_KEYS = ("cycle_ms_mean", "wall_seconds")
# numpy's default percentile method: linear interpolation between closest ranks.
PERCENTILE_METHOD = "linear"


@dataclass(frozen=True)
class Summary:
    """One run in numbers. Times are seconds of simulated time; ``None`` means undefined."""

    policy: str
    trace: str
    cluster: str
    seed: int
    version: str
    jobs_submitted: int
    jobs_finished: int
    jobs_unfinished: int
    jct_mean: float | None
    jct_median: float | None
    jct_p95: float | None
    jct_p99: float | None
    queueing_delay_mean: float | None
    queueing_delay_p99: float | None
    makespan: float | None
    utilization: float | None
    preemptions: int
    gpu_hours: float
    cycles: int
    cycle_ms_mean: float | None
    wall_seconds: float
    policy_options: tuple[tuple[str, str], ...]
    placement: str
    restart_overhead: float
    # Fairness (fairness.py); None or empty when the run's inputs were not given.
    ftf_rho_max: float | None = None
    ftf_rho_mean: float | None = None
    ftf_rho_above_1: float | None = None
    jain_tenants: float | None = None
    utilization_by_type: tuple[tuple[str, float], ...] = ()
    # Elastic and deadline-aware scheduling (docs/report.md).
    deadline_jobs: int = 0
    deadline_satisfaction: float | None = None
    resizes: int = 0
    # Failures and checkpoints (docs/llm.md); zero / None in a run without failures.
    node_failures: int = 0
    job_interruptions: int = 0
    lost_gpu_hours: float = 0.0
    checkpoint_gpu_hours: float = 0.0
    restart_gpu_hours: float = 0.0
    ettr: float | None = None
    failures_without_spare: int = 0  # with --hot-spares: failures whose pool had none left
    # Every wait of a finished job, those after preemptions included (``total_waits``).
    wait_total_mean: float | None = None
    wait_total_p99: float | None = None

    def to_dict(self) -> dict[str, object]:
        """A JSON-serialisable dict: options as a mapping, non-finite numbers as ``None``."""
        out = {f.name: _json_number(getattr(self, f.name)) for f in fields(self)}
        out["policy_options"] = {str(k): str(v) for k, v in self.policy_options}
        out["utilization_by_type"] = {str(k): _json_number(float(v))
                                      for k, v in self.utilization_by_type}
        return out


def _json_number(value: object) -> object:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def timeline_integral(times: Sequence[float], values: Sequence[float],
                      start: float, end: float) -> float:
    """The integral over ``[start, end]`` of a step function that is 0 before ``times[0]`` and
    ``values[i]`` from ``times[i]`` until ``times[i + 1]`` (the last value holds to ``end``)."""
    if len(times) == 0 or end <= start:
        return 0.0
    knots = np.clip(np.asarray(times, dtype=float), start, end)
    widths = np.diff(np.append(knots, end))
    return float(np.dot(widths, np.asarray(values, dtype=float)))


def percentiles(values: Sequence[float], qs: Sequence[float]) -> list[float | None]:
    """The ``qs`` percentiles (0-100) of ``values``; ``None`` each when ``values`` is empty."""
    if not values:
        return [None] * len(qs)
    found = np.percentile(np.asarray(values, dtype=float), qs, method=PERCENTILE_METHOD)
    return [float(x) for x in found]


def _mean(values: Sequence[float]) -> float | None:
    return float(np.mean(values)) if values else None


def finished_jcts(result: SimulationResult, table: JobTable | None = None) -> list[float]:
    """JCT of every finished job, in the order of ``result.jobs`` (``table``: those records
    as columns, when the caller has made them)."""
    t = table if table is not None else job_table(result.jobs)
    done = t.finished(FINISHED)
    return (t.finish_time[done] - t.submit_time[done]).tolist()


def queueing_delays(result: SimulationResult) -> list[float]:
    """Submit-to-first-start delay of every job that started at least once."""
    return [float(j.queueing_delay) for j in result.jobs if j.queueing_delay is not None]


def total_waits(result: SimulationResult, table: JobTable | None = None) -> list[float]:
    """Time each finished job spent not holding GPUs: ``finish - submit - run_seconds``, its
    wait before the first start and after each preemption (``queueing_delays`` sees only
    the first). Records without ``run_seconds`` (made by hand) are left out."""
    t = table if table is not None else job_table(result.jobs)
    return _total_waits(t, t.finished(FINISHED))


def _total_waits(t: JobTable, done: np.ndarray) -> list[float]:
    known = done & ~np.isnan(t.run_seconds)
    waits = t.finish_time[known] - t.submit_time[known] - t.run_seconds[known]
    return np.maximum(waits, 0.0).tolist()  # a sum of run lengths may overshoot by an ulp


def _finish_times(jobs: Sequence[JobRecord]) -> list[float]:
    return [float(j.finish_time) for j in jobs
            if j.status == FINISHED and j.finish_time is not None]


def makespan(result: SimulationResult) -> float | None:
    """Last finish time minus first submit time; ``None`` when no job finished."""
    finishes = _finish_times(result.jobs)
    if not finishes:
        return None
    return max(finishes) - min(float(j.submit_time) for j in result.jobs)


def utilization_window(result: SimulationResult) -> tuple[float, float] | None:
    """``[first submit, last finish]``; when jobs are left unfinished the window runs on to the
    end of the simulation, whose GPU use would otherwise be left out. ``None`` with no jobs."""
    if not result.jobs:
        return None
    start = min(float(j.submit_time) for j in result.jobs)
    finishes = _finish_times(result.jobs)
    end = max(finishes, default=start)
    if len(finishes) < len(result.jobs):
        end = max(end, float(result.end_time))
    return start, end


def utilization(result: SimulationResult) -> float | None:
    """GPU-seconds in use (the timeline's integral) over ``total_gpus`` x the window's length."""
    return _utilization(result, utilization_window(result))


def jct_by_queue(result: SimulationResult, table: JobTable | None = None) -> dict[str, float]:
    """Mean JCT of the finished jobs of each queue (tenant), sorted by queue name. A queue with
    no finished job is left out. ``table`` as for ``finished_jcts``."""
    t = table if table is not None else job_table(result.jobs)
    return _mean_by_queue(t.queue, (t.finish_time - t.submit_time).tolist(),
                          t.finished(FINISHED).tolist())


def wait_by_queue(result: SimulationResult, table: JobTable | None = None
                  ) -> dict[str, float]:
    """Mean queueing delay (submit to first start) of the started jobs of each queue;
    ``table`` as for ``finished_jcts``."""
    t = table if table is not None else job_table(result.jobs)
    return _mean_by_queue(t.queue, (t.first_start - t.submit_time).tolist(),
                          (~np.isnan(t.first_start)).tolist())


def _mean_by_queue(queues: Sequence[str], values: Sequence[float], counted: Sequence[bool]
                   ) -> dict[str, float]:
    """Each queue's mean of its counted values, added in the jobs' order, sorted by queue
    name."""
    by_queue: dict[str, list[float]] = defaultdict(list)
    for queue, value, count in zip(queues, values, counted, strict=True):
        if count:
            by_queue[queue].append(value)
    return {queue: float(np.mean(found)) for queue, found in sorted(by_queue.items())}


def met_deadline(job: JobRecord) -> bool:
    """Finished by its deadline (an absolute time); a job without one never counts."""
    return (job.deadline is not None and job.status == FINISHED and job.finish_time is not None
            and job.finish_time <= job.deadline + 1e-9)


def deadline_satisfaction(result: SimulationResult) -> tuple[int, float | None]:
    """``(jobs with a deadline, share of them finished by it)`` (ElasticFlow ASPLOS'23 §6's
    deadline satisfactory ratio): a job rejected at admission, failed or unfinished misses it.
    The share is ``None`` when no job has a deadline."""
    with_deadline = [j for j in result.jobs if j.deadline is not None]
    if not with_deadline:
        return 0, None
    return len(with_deadline), sum(map(met_deadline, with_deadline)) / len(with_deadline)


def summarize(result: SimulationResult, inputs: FairnessInputs | None = None,
              table: JobTable | None = None) -> Summary:
    """The run's ``Summary``; ``inputs`` (isolated times, per-type use) enable the
    finish-time-fairness and per-type utilization fields; ``table``: ``result.jobs`` as
    columns when the caller has made it (``job_table``). Computed from the columns: the same
    numbers, in the same order, as the functions above compute from the records."""
    info = result.info
    t = table if table is not None else job_table(result.jobs)
    done = t.finished(FINISHED)
    finishes = t.finish_time[done]
    jcts = (finishes - t.submit_time[done]).tolist()
    window = _window(result, t, finishes)
    fair = fairness(result, inputs, window, t)
    jct_median, jct_p95, jct_p99 = percentiles(jcts, (50, 95, 99))
    started = ~np.isnan(t.first_start)
    delays = (t.first_start[started] - t.submit_time[started]).tolist()
    waits = _total_waits(t, done)
    cycle_ms = 1000.0 * result.cycle_seconds / result.cycles if result.cycles else None
    with_deadline = ~np.isnan(t.deadline)
    deadlines = int(with_deadline.sum())
    met = done & with_deadline & (t.finish_time <= t.deadline + 1e-9)
    return Summary(
        policy=info.policy, trace=info.trace, cluster=info.cluster, seed=info.seed,
        version=info.version, jobs_submitted=len(t), jobs_finished=len(jcts),
        jobs_unfinished=len(t) - len(jcts),
        jct_mean=_mean(jcts), jct_median=jct_median, jct_p95=jct_p95, jct_p99=jct_p99,
        queueing_delay_mean=_mean(delays), queueing_delay_p99=percentiles(delays, (99,))[0],
        makespan=(float(finishes.max()) - float(t.submit_time.min())
                  if len(finishes) else None),
        utilization=_utilization(result, window),
        preemptions=int(t.preemptions.sum()),
        gpu_hours=sum(t.gpu_seconds.tolist()) / 3600.0,  # Python's sum: left to right
        cycles=result.cycles, cycle_ms_mean=cycle_ms, wall_seconds=float(result.wall_seconds),
        policy_options=tuple(info.policy_options), placement=info.placement,
        restart_overhead=float(info.restart_overhead),
        ftf_rho_max=fair.ftf_rho_max, ftf_rho_mean=fair.ftf_rho_mean,
        ftf_rho_above_1=fair.ftf_rho_above_1, jain_tenants=fair.jain_tenants,
        utilization_by_type=fair.utilization_by_type,
        deadline_jobs=deadlines,
        deadline_satisfaction=int(met.sum()) / deadlines if deadlines else None,
        resizes=int(t.resizes.sum()),
        wait_total_mean=_mean(waits), wait_total_p99=percentiles(waits, (99,))[0],
        **(failure_fields(result) if result.failures_by_category
           or t.checkpoint_gpu_seconds.any() else {}),
    )


def _window(result: SimulationResult, t: JobTable, finishes: np.ndarray
            ) -> tuple[float, float] | None:
    """``utilization_window`` from the columns."""
    if not len(t):
        return None
    start = float(t.submit_time.min())
    end = float(finishes.max()) if len(finishes) else start
    if len(finishes) < len(t):
        end = max(end, float(result.end_time))
    return start, end


def _utilization(result: SimulationResult, window: tuple[float, float] | None) -> float | None:
    """``utilization`` over a window already known."""
    if window is None or window[1] <= window[0] or result.total_gpus <= 0:
        return None
    start, end = window
    timeline = result.timeline
    used = timeline_integral(timeline.times, timeline.used_gpus, start, end)
    return used / (result.total_gpus * (end - start))


def ettr_gpus(job: JobRecord) -> int:
    """A job's weight in the ETTR: its requested GPUs, or for an elastic job, whose requested
    size is only its first (``JobLosses.productive_seconds``), those of its last run."""
    if job.min_gpus != job.max_gpus and job.last_gpus:
        return job.last_gpus
    return job.num_gpus


def failure_fields(result: SimulationResult) -> dict[str, float | int | None]:
    """Failures, GPU-hours lost to them and to checkpoints, and the effective training time
    ratio: kept work at each job's requested-size rate (an elastic job's: at the rates it ran
    at, weighted by its last size, ``ettr_gpus``) over the time since its first start
    (GPU-weighted; Kokolis et al.,
    "Revisiting Reliability in Large-Scale Machine Learning Research Clusters", 2024, §3)."""
    if not result.failures_by_category and not any(j.checkpoint_gpu_seconds
                                                   for j in result.jobs):
        return {}
    useful = elapsed = 0.0
    for j in result.jobs:
        if j.first_start is None:
            continue
        end = j.finish_time if j.finish_time is not None else result.end_time
        gpus = ettr_gpus(j)
        useful += j.useful_seconds * gpus
        elapsed += (end - j.first_start) * gpus
    return {"node_failures": sum(n for _, n in result.failures_by_category),
            "job_interruptions": sum(j.failures for j in result.jobs),
            "lost_gpu_hours": sum(j.lost_gpu_seconds for j in result.jobs) / 3600.0,
            "checkpoint_gpu_hours": sum(j.checkpoint_gpu_seconds for j in result.jobs) / 3600.0,
            "restart_gpu_hours": sum(j.restart_gpu_seconds for j in result.jobs) / 3600.0,
            "ettr": useful / elapsed if elapsed > 0 else None,
            "failures_without_spare": sum(n for _, n in result.failures_without_spare)}
