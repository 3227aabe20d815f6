"""What each dashboard page shows, gathered from the same view functions the REST API answers
with (``views.py``, ``overview.py``): a page never knows more than its caller's API would."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from dlsched.runtime import overview, views
from dlsched.runtime.auth import Principal
from dlsched.runtime.dashboard.charts import Series, time_chart
from dlsched.runtime.display import progress_text, shown_status
from dlsched.runtime.models import ClusterView, JobSummary
from dlsched.runtime.usage import gpu_usage
from dlsched.wording import did_you_mean

if TYPE_CHECKING:
    from dlsched.runtime.service import Service

STATES = ("pending", "running", "preempted", "finished", "failed", "cancelled")
ACTIVE = ("pending", "running", "preempted")
HOURS = (1, 6, 24, 168)
JOBS_SHOWN = 200
LOG_BYTES = 16384


def unknown_state(state: str) -> dict[str, Any] | None:
    """Why the overview cannot filter by ``state`` (a validation error, as FastAPI's for
    ``?hours=x``), or None: ``?state=runing`` listed every job with the state list reading
    "any", the filter dropped without a word."""
    if state in ("", "any", "active", *STATES):  # "any", as the list reads: no filter
        return None
    choices = ", ".join(("any", "active", *STATES))
    return {"loc": ("query", "state"), "input": state,
            "msg": f"not a state of the filter ({choices})"
                   f"{did_you_mean(state, ('active', *STATES))}"}


@dataclass(frozen=True)
class JobFilter:
    state: str = ""  # one of STATES, "active", or "" (any)
    queue: str = ""
    user: str = ""  # the submitting tenant (``submitted_by``)

    def statuses(self) -> tuple[str, ...] | None:
        if self.state == "active":
            return ACTIVE
        return (self.state,) if self.state in STATES else None


@dataclass
class JobLine:
    job: JobSummary
    status: str  # as a person reads it (``retrying``)
    position: int | None


@dataclass
class TypeLine:
    gpu_type: str
    total: int
    allocated: float  # compute: each worker its share of its GPU
    down: int


@dataclass
class Overview:
    cluster: ClusterView
    types: list[TypeLine]
    queues: list[Any]
    tenants: list[Any]
    jobs: list[JobLine]
    counts: Counter[str]
    chart: str
    hours: float
    filter: JobFilter
    queue_names: list[str] = field(default_factory=list)
    users: list[str] = field(default_factory=list)
    since_start: bool = False  # the service's first start is within the window
    jobs_matching: int = 0  # the jobs the filter passes, shown or not ("200 of 210")


def overview_page(service: Service, caller: Principal, wanted: JobFilter,
                  hours: float) -> Overview:
    cluster = views.cluster_view(service, caller.queues)
    queues = views.queue_views(service, caller.queues)
    usage = overview.utilization(service, hours)
    chart = time_chart(Series([p.time for p in usage.points], [p.gpus_busy for p in usage.points],
                              ceiling=usage.gpus_total), f"GPUs busy, last {hours:g} h")
    counts: Counter[str] = Counter()
    for queue in queues:
        counts["pending"] += queue.pending
        counts["running"] += queue.running
    return Overview(cluster, _types(service, cluster), queues,
                    overview.tenant_views(service, caller.queues),
                    job_lines(service, caller, wanted), counts, chart, hours, wanted,
                    _queue_names(service, caller, queues),
                    service.store.submitters(caller.queues),
                    usage.end - usage.start < hours * 3600.0 - 1.0,
                    _matching(service, caller, wanted))


def _queue_names(service: Service, caller: Principal, queues: list[Any]) -> list[str]:
    """The job filter's queues: those listed (with waiting or running jobs) and every queue
    whose jobs have all ended. A queue of ended jobs only read "team-b (no such queue)" above
    its own jobs, and could not be picked at all."""
    return sorted({q.name for q in queues} | set(service.store.job_queues(caller.queues)))


def _matching(service: Service, caller: Principal, wanted: JobFilter) -> int:
    """How many jobs pass the filter (``job_lines`` shows the newest ``JOBS_SHOWN``)."""
    queue = wanted.queue or None
    if queue is not None and not (caller.queues is None or queue in caller.queues):
        return 0
    return service.store.count_jobs(queue=queue, statuses=wanted.statuses(),
                                    queues=caller.queues, submitted_by=wanted.user or None)


def _types(service: Service, cluster: ClusterView) -> list[TypeLine]:
    """Per GPU type its GPUs, the compute allocated (``usage.py``: a half-GPU worker counts
    0.5, as the header's "GPUs allocated" and the chart do; counting each GPU holding a
    worker as one read 3 and 75% beside a header of 2.5/4) and the GPUs down."""
    with service.locked():
        usage = gpu_usage(service.cluster, list(service.core.running.values()))
    lines: dict[str, TypeLine] = {}
    for node in cluster.nodes:
        line = lines.setdefault(node.gpu_type, TypeLine(
            node.gpu_type, 0, usage[node.gpu_type].allocated, 0))
        line.total += len(node.gpus)
        line.down += len(node.gpus) if node.down else 0
    return sorted(lines.values(), key=lambda line: line.gpu_type)


def job_lines(service: Service, caller: Principal, wanted: JobFilter) -> list[JobLine]:
    """The newest ``JOBS_SHOWN`` jobs that pass the filter, with live reasons and places."""
    views._flushed(service)
    queue = wanted.queue or None
    if queue is not None and not (caller.queues is None or queue in caller.queues):
        return []
    rows = service.store.jobs(queue=queue, statuses=wanted.statuses(), limit=JOBS_SHOWN,
                              queues=caller.queues, newest_first=True,
                              submitted_by=wanted.user or None)
    live = views._live(service, rows)
    places = overview.positions(service, [row.id for row in rows])
    lines = []
    for row in rows:
        job = views.summary(service, row, live.get(row.id))
        lines.append(JobLine(job, shown_status(job), places.get(row.id)))
    return lines


@dataclass
class JobPage:
    job: Any  # JobDetail
    status: str
    events: list[Any]
    preemptions: int
    resizes: int
    progress: list[Any]
    last_progress: str
    chart: str
    log: str
    gpu_names: dict[int, str]  # a GPU id -> node:index, as the overview and "on" name it
    reports_kept: int = 0  # the most reports kept per job: the chart shows the last ones


def gpu_names(service: Service, gpus: Any) -> dict[int, str]:
    """``node:index`` for each of these cluster-wide GPU ids (an attempt's ``gpus``): on a
    second node, GPU 5 is ``gpu-1:1``, as the overview's node rows and the job's "on" show
    it."""
    cluster = service.cluster
    return {gpu: cluster.gpu_name(gpu) for gpu in gpus if 0 <= gpu < cluster.num_gpus}


def job_page(service: Service, job_id: str) -> JobPage:
    job = views.job_detail(service, job_id)
    events = views.events(service, job_id)
    reports = overview.progress(service, job_id)
    speeds = [r for r in reports if r.samples_per_second is not None]
    chart = time_chart(Series([r.time for r in speeds],
                              [r.samples_per_second or 0.0 for r in speeds],
                              runs=[r.attempt for r in speeds]),
                       "samples per second")
    kinds = Counter(event.kind for event in events)
    return JobPage(job, shown_status(job), events, kinds["preempted"], kinds["resized"], reports,
                   progress_text(job.last_progress) if job.last_progress else "", chart,
                   views.log_tail(service, job_id, LOG_BYTES),
                   gpu_names(service, {g for a in job.attempt_history for g in a.gpus}),
                   service.progress_log.per_job)


@dataclass(frozen=True)
class Endpoint:
    method: str
    path: str
    summary: str


METHODS = ("get", "post", "put", "patch", "delete")


def endpoints(schema: dict[str, Any]) -> list[Endpoint]:
    """The REST API's operations, from its OpenAPI schema: the dashboard's "API" page lists
    them on the server, where ``/docs`` (Swagger UI) loads its scripts from a CDN and is a
    blank page on a cluster without the internet."""
    found = []
    for path, operations in schema.get("paths", {}).items():
        for method in METHODS:
            operation = operations.get(method)
            if operation is not None:
                # its docstring's first line where it has one ("Utilization" says little)
                what = (operation.get("description") or operation.get("summary", "")
                        ).split("\n")[0].replace("``", "")
                found.append(Endpoint(method.upper(), path, what))
    return found
