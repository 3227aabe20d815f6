"""Views beyond one job: tenant queues with their quotas, GPU utilization over time, a job's
progress reports, and every waiting job's place in line. The API serves them under ``/v1``
(``/tenants``, ``/utilization``, ``/jobs/{id}/progress``) and the dashboard draws them.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import numpy as np

from dlsched.runtime.commands import RequestError
from dlsched.runtime.models import (
    FlavorQuotaView,
    ProgressRecord,
    TenantQueueView,
    UtilizationPoint,
    UtilizationView,
)
from dlsched.scheduling.cycle import ordered_waiting
from dlsched.scheduling.state import CycleState

if TYPE_CHECKING:
    from dlsched.runtime.service import Service
    from dlsched.tenancy.config import ClusterQueue

MAX_HOURS = 24 * 31
MAX_POINTS = 1000


def tenant_views(service: Service, queues: frozenset[str] | None = None
                 ) -> list[TenantQueueView]:
    """Every cluster queue of ``--tenants`` (none without): nominal quota, use, borrowing and
    Kueue's fair share of the jobs running now, each charged to the flavor the tenant layer
    gave it (its ledger is as of the last cycle's start: the jobs that cycle started were
    missing until another cycle ran). ``queues``: a tenant's view, only the cluster queues it
    may submit to."""
    config = service.tenants
    admission = service.profile.queue_sort
    if config is None or not hasattr(admission, "ledger"):
        return []
    from dlsched.tenancy.fairshare import share_value

    with service.locked():
        usage = admission.ledger.usage_of(service.core.running.values(), service.cluster)
        pending = _by_cluster_queue(service, service.core.waiting.values())
        running = _by_cluster_queue(service, service.core.running.values())
    views = []
    for cq in config.cluster_queues.values():
        names = admission.queue_names(cq.name)
        if queues is not None and not queues.intersection(names):
            continue
        quotas = _quotas(cq, usage)
        gpu = [q for q in quotas if q.resource == "gpu"]
        views.append(TenantQueueView(
            name=cq.name, cohort=cq.cohort, local_queues=list(names[1:]), weight=cq.weight,
            queueing_strategy=cq.queueing_strategy.value, pending=pending[cq.name],
            running=running[cq.name], gpus_nominal=sum(q.nominal for q in gpu),
            gpus_used=round(sum(q.used for q in gpu), 6),
            gpus_borrowed=round(sum(q.borrowed for q in gpu), 6),
            fair_share=round(share_value(usage, cq.name), 3), quotas=quotas))
    return views


def _by_cluster_queue(service: Service, jobs: Iterable[Any]) -> Counter[str]:
    config = service.tenants
    assert config is not None
    tally: Counter[str] = Counter()
    for job in jobs:
        cq = config.cluster_queue_of(job.spec.queue)
        if cq is not None:
            tally[cq.name] += 1
    return tally


def _quotas(cq: ClusterQueue, usage: Any) -> list[FlavorQuotaView]:
    out = []
    for (flavor, resource), quota in cq.quotas.items():
        used = usage.usage(cq.name, (flavor, resource))
        out.append(FlavorQuotaView(flavor=flavor, resource=resource, nominal=quota.nominal,
                                   borrowing_limit=quota.borrowing_limit,
                                   lending_limit=quota.lending_limit, used=round(used, 6),
                                   borrowed=round(max(0.0, used - quota.nominal), 6)))
    return out


def _worker_shares(service: Service, attempts: list[Any]) -> dict[str, float]:
    from dlsched.mig.profiles import UnknownMigProfile, profile_share

    shares = {}
    for job_id, (share, mig) in service.store.worker_shares(a.job_id for a in attempts).items():
        try:
            shares[job_id] = profile_share(mig) if mig else share
        except UnknownMigProfile:  # the service checked it at submission
            shares[job_id] = 1.0
    return shares


def utilization(service: Service, hours: float, points: int = 120) -> UtilizationView:
    """GPUs held by attempts (from their start to their end, or now) over the last ``hours``,
    averaged over ``points`` equal intervals: the store's attempts, so it spans restarts. A
    worker counts its share of its GPU (a MIG instance its slices / 7), as the GPUs allocated
    do: two half-GPU jobs on one GPU are one GPU busy, not two (the chart rose above the
    cluster's GPUs)."""
    points = max(1, min(points, MAX_POINTS))
    end = service.clock.now()
    start = max(0.0, end - hours * 3600.0)
    step = max((end - start) / points, 1e-9)
    attempts = service.store.attempts_since(start)
    edges = start + step * np.arange(points + 1)
    busy = np.zeros(points)
    if attempts:
        begin = np.array([a.start_time for a in attempts])
        until = np.array([end if a.end_time is None else a.end_time for a in attempts])
        shares = _worker_shares(service, attempts)
        width = np.array([len(a.gpus) * shares.get(a.job_id, 1.0) for a in attempts])
        overlap = (np.minimum(until[:, None], edges[None, 1:])
                   - np.maximum(begin[:, None], edges[None, :-1])).clip(min=0.0)
        busy = (overlap * width[:, None]).sum(axis=0) / step
    to_unix = service.clock.to_unix
    return UtilizationView(
        start=to_unix(start) or 0.0, end=to_unix(end) or 0.0, step_seconds=step,
        gpus_total=service.cluster.num_gpus,
        points=[UtilizationPoint(time=to_unix(float(t)) or 0.0, gpus_busy=round(float(b), 4))
                for t, b in zip(edges[:-1], busy, strict=True)])


def progress(service: Service, job_id: str) -> list[ProgressRecord]:
    if service.store.job(job_id) is None:
        raise RequestError(404, f"no job {job_id!r}")
    return [ProgressRecord(time=r.get("time") or 0.0, attempt=r.get("attempt"),
                           step=r.get("step"), samples_per_second=r.get("samples_per_second"),
                           world_size=r.get("world_size"), metrics=r.get("metrics") or {})
            for r in service.progress_log.reports(job_id)]


def positions(service: Service, job_ids: Iterable[str]) -> dict[str, int]:
    """1-based places in line of the waiting jobs among ``job_ids`` (as ``GET /v1/jobs/ID``
    gives one), with one pass over the policy's order for all of them."""
    with service.locked():
        core = service.core
        waiting = [job_id for job_id in job_ids if job_id in core.waiting
                   and core.jobs[job_id].status.is_waiting]
        if not waiting:
            return {}
        pending = getattr(service.profile.queue_sort, "pending", None)
        if pending is not None:
            return {job_id: int(pending[job_id].position) + 1 for job_id in waiting
                    if job_id in pending}
        wanted = set(waiting)
        state = CycleState.begin(core.snapshot())
        try:
            order = ordered_waiting(service.profile, state)
        except Exception as exc:  # a policy file's sort_key raised: no places (not a 500)
            if service.policy_bug(exc) is None:
                raise
            return {}
        return {job.job_id: place for place, job in enumerate(order, 1)
                if job.job_id in wanted}
