"""``dlsched simulate --services FILE``: services and training jobs on one cluster.

1. Each service's request trace is read and its SLO checked against an idle replica.
2. Its replicas become jobs of kind SERVICE (priority 100, the service's tenant queue, pinned to
   its GPU type, asking for their GPUs until their own service's last request is done on
   replicas up from 0, and ending then however long the core stopped them:
   ``JobSpec.ends_at``) and join the training
   trace, if any; the chosen policy's scheduler core places them all (``run_policy``: the
   usual summary.json, jobs.csv, timeline.csv).
3. Each placed replica serves requests from its first start (``serve``) to its job's end, losing
   what it still holds then (``replica_ends``); a replica never placed serves nothing.
   ``DIR/services.json`` holds every service's metrics, ``DIR/report.html`` them and the
   service plots.
"""

from __future__ import annotations

import csv
import json
import math
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from dlsched import __version__
from dlsched.cluster.cluster import Cluster
from dlsched.cluster.loader import NodeGroup
from dlsched.errors import ConfigError
from dlsched.experiment import RunOutcome, run_policy
from dlsched.run_config import RunConfig
from dlsched.serving.requests import RequestTrace
from dlsched.serving.routing import PlanEntry, Schedule
from dlsched.serving.run import (
    ServiceOutcome,
    infeasible_slo,
    serve,
    serve_split,
    service_trace,
)
from dlsched.serving.service import ServiceSpec
from dlsched.serving.services_file import ServicesFile
from dlsched.sim.result import JobRecord
from dlsched.workload.job import JobKind, JobSpec, JobStatus
from dlsched.workload.trace import Trace

NODE_GPUS = 8
REPLICA_PREFIXES = ("service:",)  # ``ServiceSpec.replica_id`` and ``prefill_id``


def with_service_nodes(cluster: Cluster | None, services: ServicesFile) -> Cluster:
    """``cluster`` (or none) plus 8-GPU NVLink nodes enough for every service's replicas."""
    gpus: Counter[str] = Counter()
    for s in services.services:
        most = s.replicas if s.autoscale is None else s.autoscale.max_replicas
        gpus[s.gpu] += most * s.tp  # TP degrees 1, 2, 4, 8 pack 8-GPU nodes
        if s.prefill is not None:
            gpus[s.prefill.gpu] += s.prefill.replicas * s.prefill.tp
    groups = [NodeGroup(math.ceil(n / NODE_GPUS), gpu, NODE_GPUS, prefix=f"svc-{gpu.lower()}",
                        nvlink_domain=NODE_GPUS) for gpu, n in sorted(gpus.items())]
    nodes = tuple(node for g in groups for node in g.expand())
    if cluster is None:
        return Cluster("services", nodes)
    return Cluster(f"{cluster.name}+services", cluster.nodes + nodes, cluster.topology)


def run_services(services: ServicesFile, cluster: Cluster, config: RunConfig, policy: str,
                 training: Trace | None, out: Path) -> dict[str, Any]:
    """``DIR/services.json``'s content (``services_outcome``, its report only)."""
    return services_outcome(services, cluster, config, policy, training, out)[0]


def services_outcome(services: ServicesFile, cluster: Cluster, config: RunConfig, policy: str,
                     training: Trace | None, out: Path) -> tuple[dict[str, Any], RunOutcome]:
    """Services (and training jobs) under ``policy``: the services' report, written to
    ``out/services.json`` and ``out/report.html``, and the core's run."""
    began, cpu_began = time.perf_counter(), time.process_time()
    traces = [service_trace(s) for s in services.services]
    for index, (spec, trace) in enumerate(zip(services.services, traces, strict=True)):
        problem = infeasible_slo(spec, trace)
        if problem is not None:
            raise services.error(index, f"slo.{problem[0]}", problem[1])
    # Each service served first on replicas up from 0 (the autoscaler's own schedule too):
    # its replicas then ask for their GPUs until its last request is done, not only until
    # the last one arrives (the scheduler gave them to other jobs while they still served),
    # and no longer: its own last request, not the longest trace's (a 100 s service held its
    # node to the 1,199 s of another, serving nothing, while training jobs waited for it).
    idle = [serve(s, t, [0.0] * s.replicas)
            for s, t in zip(services.services, traces, strict=True)]
    planned = {i: run for i, run in enumerate(idle) if run.spec.autoscale is not None}
    replicas = []
    for i, spec in enumerate(services.services):
        until = _drained(idle[i])
        if i in planned:  # one job per replica the autoscaler asked for, when it asked
            replicas += [_slot_job(spec, k, slot.requested, slot.held_until(until))
                         for k, slot in enumerate(planned[i].slots)]
        else:
            replicas += spec.replica_jobs(until)
    base = training or Trace("none", (), throughput="linear")
    if base.throughput != "linear":
        raise ConfigError(
            f"--services beside trace {base.name}: its throughput model {base.throughput!r} "
            f"rates training jobs only, and a service replica holds its GPUs for fixed "
            f"seconds, which the linear model rates; --throughput linear rates every job so")
    combined = replace(base, name=f"{base.name}+services", jobs=base.jobs + tuple(replicas))
    outcome = run_policy(config, policy, combined, cluster, out)
    runs = replica_runs(out / "segments.csv", outcome.result.jobs)
    ends = replica_ends(outcome.result.jobs)
    started = {job_id: job_runs[0][0] for job_id, job_runs in runs.items()}
    results = []
    for i, (spec, trace) in enumerate(zip(services.services, traces, strict=True)):
        if i in planned:
            results.append(_placed(planned[i], _replayed(planned[i], trace, runs, ends),
                                   started))
            continue
        ids = [spec.replica_id(k) for k in range(spec.replicas)]
        decode = Schedule.of_runs([runs.get(j, []) for j in ids], config.restart_overhead,
                                  [ends.get(j) for j in ids])
        if spec.prefill is not None:
            ids = [spec.prefill_id(k) for k in range(spec.prefill.replicas)]
            prefill = Schedule.of_runs([runs.get(j, []) for j in ids],
                                       config.restart_overhead, [ends.get(j) for j in ids])
            results.append(serve_split(spec, trace, decode, prefill))
            continue
        served = serve(spec, trace, decode.starts, plan=decode.plan or None, stops=decode.stops,
                       ended=decode.ended)
        results.append(_restarts_apart(served, list(decode.starts)))
    report = _report(results, config, policy, cluster, training,
                     time.perf_counter() - began, time.process_time() - cpu_began)
    (out / "services.json").write_text(json.dumps(report, indent=2, sort_keys=True) + "\n")
    write_report(results, report, out / "report.html")
    return report, outcome


def write_report(results: list[ServiceOutcome], report: dict[str, Any], path: Path) -> None:
    """``report.html``: the services' metrics and plots (a disaggregated service has its
    metrics but no per-request series)."""
    from dlsched.report.service_html import write_services_report
    from dlsched.serving.report_series import series_of, shared_cluster

    series = [series_of(r) for r in results if r.spec.prefill is None]
    meta = (f"cluster {report['cluster']} · policy {report['policy']} · training trace "
            f"{report['training_trace'] or 'none'} · seed {report['seed']} · dlsched "
            f"{report['version']}")
    write_services_report(path, "Inference services", meta, report["services"], series,
                          shared_cluster(path.parent / "segments.csv"))


def _drained(run: ServiceOutcome) -> float:
    """When the last request of a run was done (at the earliest the trace's end)."""
    return float(run.metrics["served_until_s"])


def _slot_job(spec: ServiceSpec, index: int, requested: float, until: float) -> JobSpec:
    """The autoscaler's replica ``index``: asked for at ``requested``, ending at ``until``
    however long the core stopped it."""
    seconds = max(until - requested, 1.0)
    # ``until`` itself, not ``requested + seconds`` (an ulp earlier, at times): the replay
    # ends the replica there (``replica_ends``), and must not cut its last request short
    return JobSpec(spec.replica_id(index), requested, spec.tp, seconds, queue=spec.queue,
                   gpu_types=(spec.gpu,), model=spec.model, priority=spec.priority,
                   kind=JobKind.SERVICE, tensor_parallel=spec.tp,
                   ends_at=max(until, requested + 1.0))


def replica_runs(segments: Path, records: Sequence[JobRecord]
                 ) -> dict[str, list[tuple[float, float | None]]]:
    """Each service replica's runs from ``segments.csv``: (start, when the scheduler stopped
    it) per run, None where it ran on to its end (the last run of a replica that finished).
    The first run starts at the record's exact first start (the file rounds to 1 us)."""
    by_id = {r.job_id: r for r in records if r.job_id.startswith(REPLICA_PREFIXES)}
    runs: dict[str, list[tuple[float, float | None]]] = {}
    with segments.open(newline="") as f:
        for row in csv.DictReader(f):
            if row["job_id"] in by_id:
                end = row["end"]
                runs.setdefault(row["job_id"], []).append(
                    (float(row["start"]), float(end) if end else None))
    for job_id, job_runs in runs.items():
        job_runs.sort(key=lambda run: run[0])
        record = by_id[job_id]
        if record.first_start is not None:
            job_runs[0] = (record.first_start, job_runs[0][1])
        if record.status == JobStatus.FINISHED.value:  # its last run ended as planned
            job_runs[-1] = (job_runs[-1][0], None)
            _drop_runs_after_the_end(job_runs, record.finish_time)
    return {job_id: job_runs for job_id, job_runs in runs.items() if job_runs}


def replica_ends(records: Sequence[JobRecord]) -> dict[str, float]:
    """When each service replica that finished ended: its job's end (``JobSpec.ends_at``),
    where it goes away, losing the requests it still holds, however late the core placed
    it. (Placed late, it served on past that end holding no GPU: a second service on one
    8-GPU node, placed at 9.4 s when the first ended, held it to 22.2 s and served its 20
    requests to 30.8 s.)"""
    return {r.job_id: r.finish_time for r in records if r.job_id.startswith(REPLICA_PREFIXES)
            and r.status == JobStatus.FINISHED.value and r.finish_time is not None}


def _drop_runs_after_the_end(job_runs: list[tuple[float, float | None]],
                             finish: float | None) -> None:
    """A run the core began at or after the replica's end (``JobSpec.ends_at``: a replica
    first placed once its service was over ends the moment it starts) held no GPU for a
    moment; it serves nothing. A replica left with no runs was never placed. (Four replicas
    placed so at 332 s on a full cluster served all 1,445 requests of the example's 5
    minutes, to 758 s, without a GPU-second.)"""
    if finish is not None:
        job_runs[:] = [run for run in job_runs if run[0] < finish]


def _restarts_apart(outcome: ServiceOutcome, starts: list[float]) -> ServiceOutcome:
    """``replicas`` and ``replica_starts`` count each replica once (its first start), as
    without restarts; ``replica_restarts`` the runs after a stop that began while requests
    still arrived (later ones serve nothing)."""
    outcome.starts = starts
    outcome.metrics["replicas"] = len(starts)
    outcome.metrics["replica_restarts"] = len(outcome.slots) - len(starts)
    return outcome


def _replayed(planned: ServiceOutcome, trace: RequestTrace,
              runs: dict[str, list[tuple[float, float | None]]],
              ends: dict[str, float]) -> ServiceOutcome:
    """The autoscaler's schedule served again with the replicas the core actually started:
    each becomes ready its cold start after it was placed (again after each time the core
    stopped it and started it again) and goes at its job's end (``replica_ends``); one never
    placed never serves."""
    plan: list[PlanEntry] = []
    firsts: list[float] = []
    for k, slot in enumerate(planned.slots):
        job_id = planned.spec.replica_id(k)
        replica = runs.get(job_id, [])
        firsts += [replica[0][0]] if replica else []
        for at, stopped in replica:
            retired = None if slot.retired is None else max(slot.retired, at)
            gone, ended = (stopped, False) if stopped is not None else (ends.get(job_id), True)
            plan.append((at, at + slot.ready - slot.requested, retired, gone,
                         ended and gone is not None))
    return _restarts_apart(serve(planned.spec, trace, [], plan=plan), sorted(firsts))


def _placed(planned: ServiceOutcome, outcome: ServiceOutcome,
            started: dict[str, float | None]) -> ServiceOutcome:
    """An autoscaled service's outcome on the replicas the core placed, with how late it
    placed them against when the autoscaler asked (the first, request-level-only pass)."""
    starts = [started.get(planned.spec.replica_id(k)) for k in range(len(planned.slots))]
    delays = [math.inf if s is None else s - slot.requested
              for s, slot in zip(starts, planned.slots, strict=True)]
    # JSON has no infinity: a replica never placed makes the largest delay undefined (null)
    most = max(delays, default=0.0)
    outcome.metrics["placement_delay_max"] = None if math.isinf(most) else most
    outcome.metrics["replicas_placed_late"] = sum(d > 1e-9 for d in delays)
    outcome.metrics["slo_attainment_as_planned"] = planned.metrics["slo_attainment"]
    outcome.metrics["replicas_requested"] = planned.spec.replicas
    return outcome


def _report(results: list[ServiceOutcome], config: RunConfig, policy: str, cluster: Cluster,
            training: Trace | None, wall: float, cpu: float) -> dict[str, Any]:
    services = {}
    for r in results:
        m = dict(r.metrics)
        m["replicas_requested"] = r.spec.replicas
        m["replica_starts"] = r.starts
        services[r.spec.name] = m
    return {"services": services, "wall_seconds": wall, "cpu_seconds": cpu, "policy": policy,
            "cluster": cluster.name, "training_trace": None if training is None else
            training.name, "training_jobs": 0 if training is None else len(training),
            "seed": config.seed, "version": __version__}
