"""What API requests change: submit, cancel, progress. Each runs under the service lock.

A bad request raises ``RequestError`` before anything is stored: a submission is checked in
full (GPU count, type, elastic range), then its row commits, then the core gets it.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from dlsched.errors import DlschedError
from dlsched.runtime import sharing
from dlsched.runtime.confine import PathRefused, confined, private_dir
from dlsched.runtime.models import ProgressReport, SubmitRequest
from dlsched.runtime.store import JobRow
from dlsched.scheduling.placement import max_workers
from dlsched.scheduling.state import CycleState
from dlsched.wording import count_of
from dlsched.workload.job import Job, JobSpec, JobStatus

if TYPE_CHECKING:
    from dlsched.runtime.service import Service
    from dlsched.tenancy.config import TenantConfig

# Runtime jobs end when their processes exit, not when a throughput model says so: without an
# estimate (work_seconds) a job's work is this placeholder, which it never reaches.
PLACEHOLDER_WORK = 1e9


class RequestError(DlschedError):
    """A request the service refuses; ``status`` is the HTTP status to answer with."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


@dataclass(frozen=True)
class IdempotencyKey:
    """A submission's ``Idempotency-Key`` (IETF draft-ietf-httpapi-idempotency-key-header), per
    caller: the same caller sending the same key gets the job its first request made."""

    caller: str
    key: str

    @property
    def digest(self) -> str:
        return hashlib.sha256(f"{self.caller}\n{self.key}".encode()).hexdigest()


def submit(service: Service, request: SubmitRequest) -> JobRow:
    return submit_once(service, request, None)[0]


def submit_once(service: Service, request: SubmitRequest, key: IdempotencyKey | None,
                allowed: Sequence[Path] | None = None,
                tenant: str = "anyone") -> tuple[JobRow, bool]:
    """The new job's row, and False; or, for a key seen before with the same request, the job
    its first request made, and True (a replay: nothing new is stored). ``allowed``: the
    directories the caller's jobs may use (``confine.py``; None: any outside the data
    directory)."""
    from dlsched.runtime.service import ActiveJob

    with service.locked():
        digest = _request_digest(request)
        if key is not None:
            first = service.store.by_idempotency_key(key.digest)
            if first is not None:
                if first.request_digest != digest:
                    raise RequestError(422, f"Idempotency-Key {key.key!r} was already used "
                                            f"with another request (job {first.id})")
                return first, True
        job_id = f"job-{service.next_seq:06d}"
        now = service.clock.now()
        spec = _spec(service, request, job_id, now)
        working_dir, checkpoint_dir = _directories(service, request, job_id, allowed, tenant)
        row = _row(request, job_id, service.next_seq, now, checkpoint_dir)
        row.working_dir = working_dir
        for name in ("gpu_share", "gpu_memory_gb", "mig_profile", "cpus_per_gpu",
                     "memory_gb_per_gpu", "max_per_node"):  # the spec's: a MIG profile's
            setattr(row, name, getattr(spec, name))  # full name and share
        row.density_group = spec.group
        row.submitted_by = tenant
        if key is not None:
            row.idempotency_key, row.request_digest = key.digest, digest
        service.store.add_job(row, now, f"{_asked(spec)}, queue {spec.queue}")
        service.next_seq += 1
        service.active[job_id] = ActiveJob(tuple(request.command), checkpoint_dir,
                                           working_dir, dict(request.env))
        service.core.submit(spec)
        service.touched.add(job_id)
        service.changed = True
        service.metrics.submitted.inc()
    service.wake.set()
    return row, False


# Fields added after the first release: left out of a request's digest while at their
# defaults, so a retry across an upgrade still matches its first try.
_NEWER_FIELDS = {"gpu_share": 1.0, "gpu_memory_gb": 0.0, "mig_profile": None,
                 "cpus_per_gpu": 0.0, "memory_gb_per_gpu": 0.0, "max_per_node": 0,
                 "group": None}


def _request_digest(request: SubmitRequest) -> str:
    unset = {name for name, default in _NEWER_FIELDS.items()
             if getattr(request, name) == default}
    body = request.model_dump_json(exclude={"idempotency_key", *unset})
    return hashlib.sha256(body.encode()).hexdigest()


def _ray_problem(service: Service, request: SubmitRequest) -> None:
    """A MIG job on Ray needs a node that offers its instance as a resource: otherwise its
    reservation would wait for good while the job shows as running (400 instead)."""
    ray_cluster = service.config.ray_cluster
    if ray_cluster is None or request.mig_profile is None:
        return
    profile = sharing.spec_fields(service.cluster, request)["mig_profile"]
    problem = ray_cluster.mig_problem(profile, request.gpu_type)
    if problem is not None:
        raise RequestError(400, problem)


def _spec(service: Service, request: SubmitRequest, job_id: str, now: float) -> JobSpec:
    if request.gpus < 1:
        raise RequestError(400, f"gpus must be at least 1, got {request.gpus}")
    _elastic_range(request)
    types = service.cluster.gpus_by_type()
    if request.gpu_type is not None and request.gpu_type not in types:
        raise RequestError(400, f"gpu_type={request.gpu_type!r}: this cluster has no GPU of "
                                f"type {request.gpu_type!r} (it has: {', '.join(types)})")
    _within_cluster(service, request, types)
    problem = sharing.problem(service.cluster, request)
    if problem is not None:
        raise RequestError(400, problem)
    _ray_problem(service, request)
    work = request.work_seconds or PLACEHOLDER_WORK
    try:
        spec = JobSpec(job_id, now, request.gpus, work, queue=request.queue,
                       gpu_types=(request.gpu_type,) if request.gpu_type else (),
                       priority=request.priority, min_gpus=request.min_gpus,
                       max_gpus=request.max_gpus, group=request.group,
                       max_per_node=request.max_per_node,
                       **sharing.spec_fields(service.cluster, request))
    except ValueError as exc:
        raise RequestError(400, str(exc).removeprefix(f"job {job_id}: ")) from None
    tenants = service.tenants
    if tenants is not None and tenants.cluster_queue_of(spec.queue) is None:
        raise RequestError(400, _unknown_queue(spec.queue, tenants,
                                               "queue" in request.model_fields_set))
    most = _most_gpus(service, spec)
    if spec.num_gpus > most:
        kind = f" of type {request.gpu_type}" if request.gpu_type else ""
        raise RequestError(400, f"gpus={spec.num_gpus}: this cluster can give one job "
                                f"at most {count_of(most, 'GPU')}{kind}{_per_worker(request)}")
    return spec


def _elastic_range(request: SubmitRequest) -> None:
    """An elastic range that holds ``gpus``, in the request's own field names."""
    low, high = request.min_gpus, request.max_gpus
    if low is not None and low < 1:
        raise RequestError(400, f"min_gpus must be at least 1, got {low}")
    if low is not None and low > request.gpus:
        raise RequestError(400, f"min_gpus={low}: more than gpus={request.gpus} (the range "
                                f"min_gpus..max_gpus must hold gpus)")
    if high is not None and high < request.gpus:
        raise RequestError(400, f"max_gpus={high}: fewer than gpus={request.gpus} (the range "
                                f"min_gpus..max_gpus must hold gpus)")


def _per_worker(request: SubmitRequest) -> str:
    """What each worker asks besides its GPU, which may leave fewer GPUs to one job."""
    asked = [f"{name}={getattr(request, name):g}" for name in
             ("gpu_share", "gpu_memory_gb", "cpus_per_gpu", "memory_gb_per_gpu")
             if getattr(request, name) != SubmitRequest.model_fields[name].default]
    cap = f"max_per_node={request.max_per_node}" if request.max_per_node else ""
    if not asked:
        return f" with {cap}" if cap else ""
    return f" with {', '.join(asked)} per worker" + (f" and {cap}" if cap else "")


def _within_cluster(service: Service, request: SubmitRequest, types: dict[str, int]) -> None:
    """Constant time, before anything is built for the job: no count above the cluster's GPUs
    (of the asked type), so a huge count never reaches an allocation."""
    total = types[request.gpu_type] if request.gpu_type else service.cluster.num_gpus
    kind = f" of type {request.gpu_type}" if request.gpu_type else ""
    for field, value in (("gpus", request.gpus), ("min_gpus", request.min_gpus),
                         ("max_gpus", request.max_gpus)):
        if value is not None and value > total:
            raise RequestError(400, f"{field}={value}: this cluster can give one job at most "
                                    f"{count_of(total, 'GPU')}{kind}")


def _directories(service: Service, request: SubmitRequest, job_id: str,
                 allowed: Sequence[Path] | None, tenant: str) -> tuple[str | None, str]:
    """The job's working and checkpoint directories, absolute and confined (``confine.py``):
    a relative working directory is taken from the service's, a relative checkpoint
    directory from the job's working directory. By default the checkpoint directory is
    ``DATA_DIR/jobs/ID/checkpoint``, and a confined tenant's jobs work in ``.../ID/work``."""
    data = service.config.data_dir
    job_dir = data.resolve() / "jobs" / job_id
    try:
        working = None
        if request.working_dir is not None:
            working = confined(request.working_dir, "working_dir", Path.cwd(), data, allowed,
                               tenant)
        elif allowed is not None:
            working = private_dir(job_dir / "work")
        checkpoint = job_dir / "checkpoint"
        if request.checkpoint_dir is not None:
            checkpoint = confined(request.checkpoint_dir, "checkpoint_dir",
                                  working or Path.cwd(), data, allowed, tenant)
    except PathRefused as exc:
        raise RequestError(400, str(exc)) from None
    if working is not None and service.config.ray_cluster is None and not working.is_dir():
        # Local workers start in it: a job that could never start was retried
        # --max-attempts times with backoff, then failed (Ray's nodes have their own disks).
        raise RequestError(400, f"working_dir {request.working_dir!r}: no such directory on "
                                f"the service's machine")
    return (None if working is None else str(working)), str(checkpoint)


def _unknown_queue(queue: str, tenants: TenantConfig, given: bool) -> str:
    """Why a queue is refused under tenants, with the queues jobs may name (a job that named
    none was refused for 'default' without a word of --queue)."""
    names = sorted({*tenants.local_queues, *tenants.cluster_queues})
    told = "" if given else " (no queue given: give one with --queue or \"queue\")"
    return (f"queue={queue!r}{told}: not a local or cluster queue of the tenant file; "
            f"its queues: {', '.join(names)}")


def _most_gpus(service: Service, spec: JobSpec) -> int:
    """The core's own rule (``max_workers`` over its filters), cached per job shape."""
    shape = (spec.gpu_types, spec.num_gpus, spec.gpu_share, spec.gpu_memory_gb,
             spec.cpus_per_gpu, spec.memory_gb_per_gpu, spec.mig_profile, spec.max_per_node)
    cache = service.max_workers_cache
    if shape not in cache:
        state = CycleState.begin(service.core.snapshot(running=False))
        cache[shape] = max_workers(state, Job(spec), service.profile.filters)
    return cache[shape]


def _row(request: SubmitRequest, job_id: str, seq: int, now: float,
         checkpoint_dir: str) -> JobRow:
    return JobRow(id=job_id, seq=seq, name=request.name, command=list(request.command),
                  env=dict(request.env), working_dir=request.working_dir,
                  num_gpus=request.gpus, gpu_type=request.gpu_type, queue=request.queue,
                  priority=request.priority, min_gpus=request.min_gpus,
                  max_gpus=request.max_gpus, checkpoint_dir=checkpoint_dir,
                  work_seconds=request.work_seconds, status="pending", submit_time=now,
                  attempts=0, failures=0, pending_reason="", attained_service=0.0,
                  done_work=0.0, preemptions=0)


def cancel(service: Service, job_id: str) -> None:
    with service.locked():
        job = service.core.jobs.get(job_id)
        if job is None or job.status.is_terminal:
            _missing_or_ended(service, job_id)
        service.core.cancel(job_id)
        service.event(job_id, "cancelled", "cancelled by request")
        service.changed = True
        service.persist()
    service.wake.set()


def report_progress(service: Service, job_id: str, report: ProgressReport) -> None:
    with service.locked():
        job = service.core.jobs.get(job_id)
        if job is None or job.status.is_terminal:
            _missing_or_ended(service, job_id)
        current = service.active[job_id].attempts
        if report.attempt is not None and (report.attempt != current
                                           or job.status is not JobStatus.RUNNING):
            raise RequestError(409, f"attempt {report.attempt} of job {job_id} is not its "
                                    f"running attempt (the latest is {current}): fenced")
        progress = {"time": time.time(), **report.model_dump()}
        service.batch.job(job_id, last_progress=progress)
        service.progress_log.add(job_id, progress)
        if report.samples_per_second is not None:
            service.measured(job_id, report.samples_per_second, report.world_size)


def _missing_or_ended(service: Service, job_id: str) -> None:
    job = service.core.jobs.get(job_id)
    row = service.store.job(job_id) if job is None else None
    if job is None and row is None:
        raise RequestError(404, f"no job {job_id!r}")
    status = job.status.value if job is not None else row.status  # type: ignore[union-attr]
    raise RequestError(409, f"job {job_id} has already ended ({status})")


def _asked(spec: JobSpec) -> str:
    """The submitted event's GPUs: ``2 GPUs``, ``1 GPU (share 0.5)``, ``1 GPU (MIG 3g.20gb)``;
    a half-GPU job's read "1 GPU", as if it held a whole one."""
    gpus = count_of(spec.num_gpus, "GPU")
    if spec.mig_profile:
        return f"{gpus} (MIG {spec.mig_profile})"
    return f"{gpus} (share {spec.gpu_share:g})" if spec.gpu_share < 1.0 else gpus
