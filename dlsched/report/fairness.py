"""Fairness metrics of one run: finish-time fairness, Jain's index over tenants, per-type use.

**Finish-time fairness** (Mahajan et al., "Themis", NSDI'20 §3.1). A job's ρ is
``T_shared / T_independent``: its completion time in the shared cluster over the time it would
take on a dedicated ``1/N`` share of the cluster, ``N`` the number of jobs contending for it.
Here, for every policy alike:

- ``T_shared`` is the job's JCT (finish minus submit);
- ``T_isolated`` is the job alone at its requested GPU count on the fastest GPU type
  (``work / ThroughputModel.reference_rate(spec)``), given by the caller (``FairnessInputs``);
- ``N`` is Themis' *average contention* over the job's life (§3.1: ``N_avg``), measured from
  the run's timeline: the time-average of ``waiting + running`` jobs over ``[submit, finish]``
  (at least 1, the job itself);
- ``T_independent``: the job's time on a dedicated ``1/N`` of the cluster's ``G`` GPUs. A job
  of ``g`` GPUs runs at full speed there when ``G/N ≥ g`` and at ``(G/N)/g`` of it otherwise,
  so ``T_independent = T_isolated × max(1, N·g/G)`` and ``ρ = JCT / T_independent``. ρ ≤ 1
  means the job did at least as well as on its fair share (ρ = 1 when it ran at once at full
  speed: a share larger than its demand does not make it faster). Unfinished jobs have no ρ.

**Jain's index** (Jain, Chiu and Hawe, DEC-TR-301, 1984) ``(Σx)² / (n Σx²)`` over tenants
(``queue``), ``x`` = the GPU-seconds each tenant received: 1 when all tenants got the same GPU
time, ``1/n`` when one got it all. It measures equal *shares*, not equal slowdowns; tenants with
less demand than their share pull it down (documented in docs/report.md).

**Per-type utilization**: GPU-seconds in use on each GPU type over that type's GPU count times
the utilization window; the core keeps GPU-seconds per type as it settles each run
(``Scheduler.gpu_seconds_by_type``, in ``SimulationResult.type_gpu_seconds``).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from dlsched.cluster.cluster import Cluster
from dlsched.perf.model import ThroughputModel
from dlsched.report.job_table import JobTable
from dlsched.sim.result import JobRecord, SimulationResult
from dlsched.workload.trace import Trace

FINISHED = "finished"
# ρ of a job that ran at once at full speed is 1 up to rounding (JCT is finish minus submit,
# the isolated time work over rate): 1 + 2e-16 is not "worse than its fair share".
RHO_ROUNDING = 1e-9


@dataclass(frozen=True)
class FairnessInputs:
    """What a ``SimulationResult`` does not carry: each job's isolated run time (seconds) and,
    optionally, GPU-seconds in use per GPU type with each type's GPU count."""

    isolated_seconds: Mapping[str, float] = field(default_factory=dict)
    type_gpu_seconds: Mapping[str, float] | None = None
    type_gpus: Mapping[str, int] | None = None

    @classmethod
    def of_run(cls, result: SimulationResult, isolated: Mapping[str, float],
               cluster: Cluster) -> FairnessInputs:
        """The run's per-type GPU-seconds (kept by the core) with ``cluster``'s GPU counts."""
        return cls(isolated, dict(result.type_gpu_seconds), cluster.gpus_by_type())


@dataclass(frozen=True)
class FairnessMetrics:
    """``None`` where a metric is undefined (no finished job with an isolated time, ...)."""

    ftf_rho_max: float | None = None
    ftf_rho_mean: float | None = None
    ftf_rho_above_1: float | None = None
    jain_tenants: float | None = None
    utilization_by_type: tuple[tuple[str, float], ...] = ()


def isolated_seconds(trace: Trace, model: ThroughputModel) -> dict[str, float]:
    """Each job's time alone at its requested size on the fastest type: work / reference rate.
    Jobs the model cannot run (rate 0) are left out."""
    out = {}
    for spec in trace.jobs:
        rate = model.reference_rate(spec)
        if rate > 0:
            out[spec.job_id] = spec.work / rate
    return out


@dataclass(frozen=True)
class Contention:
    """``N(t) = waiting + running`` from a run's timeline, a step function (0 before the first
    record), with its running integral at each knot for O(log n) averages."""

    times: np.ndarray
    active: np.ndarray
    area: np.ndarray

    @classmethod
    def of(cls, result: SimulationResult) -> Contention:
        timeline = result.timeline
        times = np.asarray(timeline.times, dtype=float)
        active = (np.asarray(timeline.waiting, dtype=float)
                  + np.asarray(timeline.running, dtype=float))
        steps = np.diff(times) * active[:-1] if len(times) else times
        return cls(times, active, np.concatenate(([0.0], np.cumsum(steps)))[:len(times)])

    def _at(self, t: float) -> int:
        return int(np.searchsorted(self.times, t, side="right")) - 1

    def _integral(self, t: float) -> float:
        i = self._at(t)
        return 0.0 if i < 0 else float(self.area[i] + (t - self.times[i]) * self.active[i])

    def mean(self, start: float, end: float) -> float:
        """Themis' N_avg: the time-average of N over ``[start, end]``, at least 1; for a
        zero-length interval, N at ``start``."""
        if end <= start:
            i = self._at(start)
            return max(1.0, float(self.active[i]) if i >= 0 else 1.0)
        return max(1.0, (self._integral(end) - self._integral(start)) / (end - start))

    def means(self, start: np.ndarray, end: np.ndarray) -> np.ndarray:
        """``mean`` of each interval ``[start[k], end[k]]``, over arrays."""
        at_start, at_end = self._integrals(start), self._integrals(end)
        span = end - start
        with np.errstate(divide="ignore", invalid="ignore"):
            average = (at_end - at_start) / span
        i = np.searchsorted(self.times, start, side="right") - 1
        point = np.where(i >= 0, self.active[np.maximum(i, 0)] if len(self.times) else 1.0, 1.0)
        return np.maximum(1.0, np.where(end <= start, point, average))

    def _integrals(self, t: np.ndarray) -> np.ndarray:
        i = np.searchsorted(self.times, t, side="right") - 1
        if not len(self.times):
            return np.zeros_like(t)
        k = np.maximum(i, 0)
        return np.where(i < 0, 0.0, self.area[k] + (t - self.times[k]) * self.active[k])


def ftf_rhos(result: SimulationResult, isolated: Mapping[str, float],
             table: JobTable | None = None) -> dict[str, float]:
    """ρ of every finished job with a known isolated time (see the module docstring); computed
    over arrays, the same float operations as ``Contention.mean`` job by job. ``table``:
    ``result.jobs`` as columns (``job_table``), when the caller has it."""
    if table is not None:
        return _ftf_rhos(result, isolated, table)
    picked = [(job.job_id, float(job.submit_time), float(job.finish_time), job.num_gpus, t_iso)
              for job in result.jobs
              if job.status == FINISHED and job.finish_time is not None
              and (t_iso := isolated.get(job.job_id))]
    if not picked:
        return {}
    ids, starts, ends, gpus, t_isos = zip(*picked, strict=True)
    return _rhos(result, list(ids), np.array(starts), np.array(ends), gpus, t_isos)


def _ftf_rhos(result: SimulationResult, isolated: Mapping[str, float], table: JobTable
              ) -> dict[str, float]:
    done = table.finished(FINISHED).tolist()
    get = isolated.get
    rows = [i for i, (job_id, ok) in enumerate(zip(table.job_id, done, strict=True))
            if ok and get(job_id)]
    if not rows:
        return {}
    ids = [table.job_id[i] for i in rows]
    return _rhos(result, ids, table.submit_time[rows], table.finish_time[rows],
                 table.num_gpus[rows].tolist(), [isolated[i] for i in ids])


def _rhos(result: SimulationResult, ids: Sequence[str], start: np.ndarray, end: np.ndarray,
          gpus: Sequence[int], t_isos: Sequence[float]) -> dict[str, float]:
    n_avg = Contention.of(result).means(start, end)
    share = np.maximum(1.0, n_avg * np.array(gpus, dtype=float) / max(result.total_gpus, 1))
    rho = (end - start) / (np.array(t_isos, dtype=float) * share)
    return dict(zip(ids, rho.tolist(), strict=True))


def jain_index(values: Sequence[float]) -> float | None:
    """``(Σx)² / (n Σx²)``; ``None`` for no values or all zero."""
    x = np.asarray(values, dtype=float)
    squares = float(np.dot(x, x))
    if not len(x) or squares <= 0:
        return None
    return float(x.sum() ** 2 / (len(x) * squares))


def gpu_seconds_by_tenant(jobs: Sequence[JobRecord]) -> dict[str, float]:
    """GPU-seconds each queue's jobs held, sorted by queue name."""
    return _by_tenant([job.queue for job in jobs], [float(job.gpu_seconds) for job in jobs])


def _by_tenant(queues: Sequence[str], gpu_seconds: Sequence[float]) -> dict[str, float]:
    by_queue: dict[str, float] = defaultdict(float)
    for queue, seconds in zip(queues, gpu_seconds, strict=True):
        by_queue[queue] += seconds
    return dict(sorted(by_queue.items()))


def utilization_by_type(inputs: FairnessInputs,
                        window: tuple[float, float] | None) -> tuple[tuple[str, float], ...]:
    """(type, busy GPU-seconds / (GPUs of that type × window length)), by type name."""
    if inputs.type_gpu_seconds is None or inputs.type_gpus is None or window is None:
        return ()
    span = window[1] - window[0]
    if span <= 0:
        return ()
    return tuple((name, float(inputs.type_gpu_seconds.get(name, 0.0)) / (gpus * span))
                 for name, gpus in sorted(inputs.type_gpus.items()) if gpus > 0)


def fairness(result: SimulationResult, inputs: FairnessInputs | None,
             window: tuple[float, float] | None, table: JobTable | None = None
             ) -> FairnessMetrics:
    """All fairness metrics of a run; the ρ and per-type ones need ``inputs``; ``table``:
    ``result.jobs`` as columns (``job_table``), when the caller has it."""
    by_tenant = (gpu_seconds_by_tenant(result.jobs) if table is None
                 else _by_tenant(table.queue, table.gpu_seconds.tolist()))
    jain = jain_index(list(by_tenant.values()))
    if inputs is None:
        return FairnessMetrics(jain_tenants=jain)
    rhos = list(ftf_rhos(result, inputs.isolated_seconds, table).values())
    return FairnessMetrics(
        ftf_rho_max=max(rhos) if rhos else None,
        ftf_rho_mean=float(np.mean(rhos)) if rhos else None,
        ftf_rho_above_1=sum(r > 1.0 + RHO_ROUNDING for r in rhos) / len(rhos) if rhos else None,
        jain_tenants=jain, utilization_by_type=utilization_by_type(inputs, window))
