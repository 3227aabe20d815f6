"""What the API shows: database rows, with live facts from the core (allocation, queue order).

Every view first commits the loop's pending changes, so what it reads is current.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING

from dlsched.runtime.commands import RequestError
from dlsched.runtime.models import (
    AttemptView,
    ClusterView,
    EventView,
    GpuSlot,
    GpuView,
    JobDetail,
    JobSummary,
    NodeView,
    QueueView,
    TopologyView,
)
from dlsched.runtime.store import JobRow
from dlsched.runtime.usage import cluster_usage, gpu_usage
from dlsched.scheduling.cycle import ordered_waiting
from dlsched.scheduling.decisions import waiting_reason
from dlsched.scheduling.state import CycleState
from dlsched.workload.job import Job, JobStatus

if TYPE_CHECKING:
    from dlsched.runtime.service import Service

# The stored statuses of a job that waits (``JobStatus.is_waiting``).
_WAITING = frozenset(status.value for status in JobStatus if status.is_waiting)


def _flushed(service: Service) -> None:
    with service.locked():
        service.persist()


def _row(service: Service, job_id: str) -> JobRow:
    _flushed(service)
    row = service.store.job(job_id)
    if row is None:
        raise RequestError(404, f"no job {job_id!r}")
    return row


def summary(service: Service, row: JobRow, live: tuple[str, int | None] | None = None
            ) -> JobSummary:
    """``live``: the core's "why pending" and the GPUs a running job holds (``_live``; the
    stored reason otherwise)."""
    to_unix = service.clock.to_unix
    reason, held = live if live is not None else (None, None)
    return JobSummary(id=row.id, name=row.name, status=row.status, queue=row.queue,
                      priority=row.priority, gpus=row.num_gpus, gpu_type=row.gpu_type,
                      submitted_at=to_unix(row.submit_time) or 0.0,
                      finished_at=to_unix(row.finish_time), attempts=row.attempts,
                      pending_reason=waiting_reason(
                          row.pending_reason if reason is None else reason,
                          row.status in _WAITING),
                      submitted_by=row.submitted_by, gpus_held=held,
                      gpu_share=row.gpu_share, mig_profile=row.mig_profile)


def _live(service: Service, rows: list[JobRow]) -> dict[str, tuple[str, int | None]]:
    """Why each waiting job waits, now (a job behind a strict-FIFO head shares its reason),
    and why a started job has no workers yet (waiting for preempted jobs to exit); with the
    GPUs each running job holds (an elastic job's size changes)."""
    with service.locked():
        jobs = (service.core.jobs.get(row.id) for row in rows)
        failed = service.policy_failure  # the policy file raised: no cycle, the reason is it
        return {job.job_id: (failed if failed and job.status.is_waiting
                             else service.core.reason_for(job),
                             len(job.allocation) if job.status is JobStatus.RUNNING else None)
                for job in jobs if job is not None and (job.status.is_waiting
                                                        or job.status is JobStatus.RUNNING)}


def job_list(service: Service, status: str | None, queue: str | None, limit: int,
             offset: int, queues: frozenset[str] | None = None,
             submitted_by: str | None = None) -> list[JobSummary]:
    """``queues``: only jobs of these queues (a tenant's view); None: every queue."""
    _flushed(service)
    rows = service.store.jobs(status, queue, limit, offset, queues=queues,
                              submitted_by=submitted_by)
    live = _live(service, rows)
    return [summary(service, row, live.get(row.id)) for row in rows]


def job_detail(service: Service, job_id: str) -> JobDetail:
    row = _row(service, job_id)
    attempts = [AttemptView(number=a.number, started_at=service.clock.to_unix(a.start_time) or 0,
                            ended_at=service.clock.to_unix(a.end_time), gpus=a.gpus,
                            outcome=a.outcome, message=a.message)
                for a in service.store.attempts(job_id)]
    with service.locked():
        job = service.core.jobs.get(job_id)
        allocation = _slots(service, job) if job and job.status.value == "running" else []
        position = _position(service, job) if job is not None else None
    live = _live(service, [row]).get(row.id)
    return JobDetail(**summary(service, row, live).model_dump(), command=row.command,
                     gpu_memory_gb=row.gpu_memory_gb, cpus_per_gpu=row.cpus_per_gpu,
                     memory_gb_per_gpu=row.memory_gb_per_gpu,
                     max_per_node=row.max_per_node or 0, group=row.density_group,
                     min_gpus=row.min_gpus, max_gpus=row.max_gpus,
                     work_seconds=row.work_seconds, checkpoint_dir=row.checkpoint_dir,
                     allocation=allocation, queue_position=position,
                     attempt_history=attempts, last_progress=row.last_progress)


def _slots(service: Service, job: Job) -> list[GpuSlot]:
    cluster = service.cluster
    mig = service.executor.mig_slots(job) if hasattr(service.executor, "mig_slots") else ()
    slots = []
    for rank, gpu in enumerate(job.allocation):
        node = int(cluster.gpu_node[gpu])
        share = job.shares[rank] if rank < len(job.shares) else 1.0
        instance = f"{mig[rank].profile}@{mig[rank].start}" if rank < len(mig) else None
        slots.append(GpuSlot(node=cluster.nodes[node].name,
                             index=gpu - int(cluster.node_first_gpu[node]), gpu=int(gpu),
                             share=round(share, 6), mig_instance=instance))
    return slots


def _position(service: Service, job: Job) -> int | None:
    """1-based place in the policy's order of the waiting jobs (None unless it waits); with
    tenants, the place in its cluster queue at the last cycle (docs/tenancy.md)."""
    if not job.status.is_waiting or job.job_id not in service.core.waiting:
        return None
    pending = getattr(service.profile.queue_sort, "pending", None)
    if pending is not None and job.job_id in pending:
        return int(pending[job.job_id].position) + 1
    state = CycleState.begin(service.core.snapshot())
    try:
        order = ordered_waiting(service.profile, state)
    except Exception as exc:  # a policy file's sort_key raised: no place (not a 500)
        if service.policy_bug(exc) is None:
            raise
        return None
    for place, other in enumerate(order, 1):
        if other is job:
            return place
    return None


def events(service: Service, job_id: str) -> list[EventView]:
    _row(service, job_id)
    return [EventView(time=service.clock.to_unix(e.time) or 0.0, kind=e.kind, message=e.message)
            for e in service.store.events(job_id)]


def log_tail(service: Service, job_id: str, max_bytes: int) -> str:
    """The end of the latest attempt's log (all ranks write to it)."""
    _row(service, job_id)
    attempts = service.store.attempts(job_id)
    if not attempts:
        return ""
    path = Path(attempts[-1].log_path)
    try:
        with open(path, "rb") as log:
            size = log.seek(0, 2)
            log.seek(max(0, size - max_bytes))
            return log.read().decode(errors="replace")
    except FileNotFoundError:
        return ""


HIDDEN = "(another tenant)"


def cluster_view(service: Service, queues: frozenset[str] | None = None) -> ClusterView:
    """``queues``: a tenant's view; GPUs held by other queues' jobs show ``HIDDEN``. The GPU
    counts are ``usage.py``'s, as ``/metrics`` has them: a GPU in MIG mode is in use, its
    allocation its slices / 7 (the core's ``used_gpus`` books it whole)."""
    cluster = service.cluster
    with service.locked():
        holders = _holders(service, queues)
        usage = cluster_usage(gpu_usage(cluster, list(service.core.running.values())))
    nodes = []
    for n, node in enumerate(cluster.nodes):
        first = int(cluster.node_first_gpu[n])
        held = [holders.get(first + i, []) for i in range(node.num_gpus)]
        gpus = [GpuView(index=i, gpu=first + i, job_id=jobs[0] if jobs else None, job_ids=jobs)
                for i, jobs in enumerate(held)]
        nodes.append(NodeView(name=node.name, gpu_type=node.gpu_type, gpus=gpus,
                              down=n in service.core.down_nodes, cpus=node.cpus,
                              memory_gb=node.memory_gb, gpu_memory_gb=node.memory_per_gpu,
                              rack=node.rack, nvlink_domain=node.nvlink_domain,
                              pool=node.pool))
    return ClusterView(name=cluster.name, policy=service.profile.name,
                       gpus_total=cluster.num_gpus, gpus_allocated=usage.allocated,
                       gpus_in_use=usage.in_use, gpus_partly_used=usage.partly_used,
                       mig_slices_used=usage.mig_slices_used, mig_slices=usage.mig_slices,
                       nodes=nodes,
                       topology=TopologyView(**asdict(cluster.topology)))


def _holders(service: Service, queues: frozenset[str] | None) -> dict[int, list[str]]:
    """Each busy GPU's jobs, in start order: all of them, since jobs that share a GPU (a
    fraction, MIG instances) are several; one id per GPU hid all but one of them."""
    holders: dict[int, list[str]] = {}
    for job in service.core.running.values():
        shown = job.job_id if queues is None or job.spec.queue in queues else HIDDEN
        for gpu in job.allocation:
            jobs = holders.setdefault(int(gpu), [])
            if shown not in jobs:
                jobs.append(shown)
    return holders


def queue_views(service: Service, queues: frozenset[str] | None = None) -> list[QueueView]:
    """Each queue with jobs, and ``default`` where it is one: with ``--tenants`` a job's queue
    must be one of the tenant file's, and a listed ``default`` read as usable (400)."""
    with service.locked():
        pending = Counter(job.spec.queue for job in service.core.waiting.values())
        running = Counter(job.spec.queue for job in service.core.running.values())
        gpus: Counter[str] = Counter()
        for job in service.core.running.values():
            gpus[job.spec.queue] += sum(job.shares)
    default = {"default"} if service.tenants is None else set()
    names = sorted(set(pending) | set(running) | default if queues is None else queues)
    return [QueueView(name=q, pending=pending[q], running=running[q], gpus_allocated=gpus[q])
            for q in names]
