"""The REST API (FastAPI; OpenAPI schema at /openapi.json). Endpoints are plain functions, run
in FastAPI's thread pool, that call the service under its lock.

With a token, every ``/v1`` request needs ``Authorization: Bearer TOKEN`` (401 otherwise);
``/healthz`` and ``/metrics`` stay open. With per-tenant tokens (``auth.py``) a tenant submits
to, lists, sees and cancels only its own queues' jobs (403 for a queue it names that is not its
own, 404 for another queue's job); a job's workers may only report that job's progress.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from enum import Enum
from typing import Annotated, Any, get_args

from fastapi import APIRouter, Depends, FastAPI, Header, Query, Request, Response
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse, PlainTextResponse

from dlsched import __version__
from dlsched.runtime import commands, overview, views
from dlsched.runtime.auth import ANYONE, Principal, principal_of
from dlsched.runtime.commands import IdempotencyKey, RequestError
from dlsched.runtime.limits import (
    BAD_REQUEST,
    BODY,
    CONFLICT,
    FORBIDDEN,
    INT64_MAX,
    NOT_FOUND,
    BodyLimits,
    responses,
)
from dlsched.runtime.models import (
    IDEMPOTENCY_KEY_PATTERN,
    ClusterView,
    EventView,
    Health,
    JobDetail,
    JobSummary,
    ProgressRecord,
    ProgressReport,
    QueueView,
    SubmitRequest,
    TenantQueueView,
    UtilizationView,
)
from dlsched.runtime.service import Service
from dlsched.wording import did_you_mean
from dlsched.workload.job import JobStatus as JobState


def create_app(service: Service) -> FastAPI:
    app = FastAPI(title="dlsched", version=__version__,
                  description="Scheduler service for deep-learning jobs")
    app.state.service = service
    app.add_exception_handler(RequestError, _request_error)  # type: ignore[arg-type]
    app.add_exception_handler(RequestValidationError,
                              _validation_error)  # type: ignore[arg-type]
    app.add_middleware(BodyLimits)  # type: ignore[arg-type]
    app.include_router(_v1(service), prefix="/v1")
    from dlsched.runtime.dashboard import routes as dashboard

    app.include_router(dashboard.router(service))

    @app.get("/healthz", response_model=Health,
             responses={503: {"model": Health, "description": "The scheduling loop stopped."}})
    def healthz() -> JSONResponse:
        alive = service.loop_alive
        body = Health(status="ok" if alive else "loop stopped", loop_alive=alive)
        return JSONResponse(body.model_dump(), status_code=200 if alive else 503)

    @app.get("/metrics", response_class=PlainTextResponse)
    def metrics() -> Response:
        with service.locked():
            service.metrics.refresh(service.core)
        return Response(service.metrics.render(),
                        media_type="text/plain; version=0.0.4; charset=utf-8")

    return app


def _request_error(_request: Request, exc: RequestError) -> JSONResponse:
    return JSONResponse({"detail": exc.message}, status_code=exc.status)


def _validation_error(request: Request, exc: RequestValidationError) -> Response:
    """FastAPI's 422, with the offending input made JSON (a NaN it echoes, or a lone
    surrogate such as ``"\\ud800"`` that UTF-8 cannot encode, would be a 500), and a query
    value outside its choices naming the closest one (``_closest_choice``). A dashboard page
    (``/?hours=x``) answers a page saying so, not the JSON."""
    if getattr(request.scope.get("route"), "response_class", None) is HTMLResponse:
        from dlsched.runtime.dashboard.routes import invalid_address

        return invalid_address(request, exc.errors())
    errors = [{**error, "msg": error["msg"] + _closest_choice(request, error)}
              if error.get("type") == "enum" else error for error in exc.errors()]
    return JSONResponse({"detail": _echoable(jsonable_encoder(errors))}, status_code=422)


def _closest_choice(request: Request, error: dict[str, Any]) -> str:
    """``; did you mean 'running'?`` for ``?status=runing``, as ``dlsched jobs --status``
    says (the values of the enum the route declares for that query parameter; ``RUNNING``
    is matched as ``running``). Nothing for a body field or when no value is close."""
    loc, given, route = error.get("loc", ()), error.get("input"), request.scope.get("route")
    if len(loc) != 2 or loc[0] != "query" or not isinstance(given, str) or route is None:
        return ""
    return did_you_mean(given.lower(), _enum_values(route.dependant, loc[1]))


def _enum_values(dependant: Any, name: str) -> list[str]:
    """The values of the enum (or optional enum) declared for query parameter ``name``."""
    for param in _query_params(dependant):
        if param.alias == name:
            hint = param.field_info.annotation
            return [member.value for kind in get_args(hint) or (hint,)
                    if isinstance(kind, type) and issubclass(kind, Enum) for member in kind]
    return []


def _query_params(dependant: Any) -> Iterator[Any]:
    yield from dependant.query_params
    for sub in dependant.dependencies:
        yield from _query_params(sub)


def _echoable(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return repr(value)
    if isinstance(value, str):
        return value.encode("utf-8", "backslashreplace").decode("utf-8")
    if isinstance(value, dict):
        return {_echoable(key): _echoable(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_echoable(item) for item in value]
    return value


_UNAUTHORIZED = "missing or wrong token (send 'Authorization: Bearer T')"


def _identify(request: Request,
              authorization: Annotated[str | None, Header()] = None) -> Principal:
    """The caller of a ``/v1`` request (a FastAPI dependency; the service is the app's)."""
    config = request.app.state.service.config
    token, table = config.token, config.tokens
    if token is None and table is None:
        return ANYONE
    scheme, _, given = (authorization or "").partition(" ")
    given = given.strip()
    if scheme.lower() != "bearer" or not given:
        raise RequestError(401, _UNAUTHORIZED)
    principal = principal_of(given, token, table)
    if principal is None:
        raise RequestError(401, _UNAUTHORIZED)
    return principal


Caller = Annotated[Principal, Depends(_identify)]


def _idempotency_key(header: str | None, field: str | None,
                     caller: Principal) -> IdempotencyKey | None:
    if header is not None and field is not None and header != field:
        raise RequestError(422, "the Idempotency-Key header and the idempotency_key field "
                                "differ")
    key = header if header is not None else field
    return None if key is None else IdempotencyKey(caller.tenant, key)


def _known_query(request: Request) -> None:
    """400 for a query parameter the endpoint does not take (``?statu=pending`` would
    otherwise list every job), naming it and the closest one it takes. Names that start with
    ``_`` are left to the client (cache busters such as jQuery's ``_=``)."""
    route = request.scope.get("route")
    if route is None:
        return
    known = _query_names(route)
    for name in request.query_params:
        if name not in known and not name.startswith("_"):
            takes = ", ".join(sorted(known)) or "none"
            raise RequestError(400, f"unknown query parameter {name!r}"
                                    f"{did_you_mean(name, known)} (this endpoint takes: "
                                    f"{takes})")


def _query_names(route: Any) -> frozenset[str]:
    """The query parameters a route declares, its dependencies' included (kept per route)."""
    names = getattr(route, "_dlsched_query", None)
    if names is None:
        names = frozenset(_declared(route.dependant))
        route._dlsched_query = names
    return names


def _declared(dependant: Any) -> Iterator[str]:
    yield from (param.alias for param in _query_params(dependant))


def _v1(service: Service) -> APIRouter:
    router = APIRouter(dependencies=[Depends(_known_query)])

    def visible(caller: Principal, job_id: str) -> None:
        """Another queue's job answers as a job that does not exist."""
        row = service.store.job(job_id)
        if row is not None and not caller.may_use(row.queue):
            raise RequestError(404, f"no job {job_id!r}")

    @router.post("/jobs", status_code=201, response_model=JobSummary,
                 responses=responses(BODY, BAD_REQUEST, FORBIDDEN))
    def submit(request: SubmitRequest, caller: Caller, response: Response,
               idempotency_key: Annotated[str | None, Header(
                   pattern=IDEMPOTENCY_KEY_PATTERN,
                   description="A retried submission with the same key returns the job the "
                               "first one made (201, header Idempotent-Replayed: true).")
               ] = None) -> JobSummary:
        if not caller.may_use(request.queue):
            raise RequestError(403, f"tenant {caller.tenant!r} may not use queue "
                                    f"{request.queue!r}")
        key = _idempotency_key(idempotency_key, request.idempotency_key, caller)
        row, replayed = commands.submit_once(service, request, key, caller.paths,
                                             caller.tenant)
        if replayed:
            response.headers["Idempotent-Replayed"] = "true"
        return views.summary(service, row)

    @router.get("/jobs", response_model=list[JobSummary], responses=responses(FORBIDDEN))
    def list_jobs(caller: Caller, status: JobState | None = None, queue: str | None = None,
                  limit: Annotated[int, Query(ge=1, le=100_000)] = 1000,
                  offset: Annotated[int, Query(ge=0, le=INT64_MAX)] = 0,
                  submitted_by: Annotated[str | None, Query(
                      max_length=256, description="Only jobs this tenant submitted.")] = None
                  ) -> list[JobSummary]:
        if queue is not None and not caller.may_use(queue):
            raise RequestError(403, f"tenant {caller.tenant!r} may not use queue {queue!r}")
        return views.job_list(service, status.value if status else None, queue, limit, offset,
                              caller.queues, submitted_by)

    @router.get("/jobs/{job_id}", response_model=JobDetail, responses=responses(NOT_FOUND))
    def get_job(job_id: str, caller: Caller) -> JobDetail:
        visible(caller, job_id)
        return views.job_detail(service, job_id)

    @router.delete("/jobs/{job_id}", response_model=JobDetail,
                   responses=responses(NOT_FOUND, CONFLICT))
    def cancel_job(job_id: str, caller: Caller) -> JobDetail:
        visible(caller, job_id)
        commands.cancel(service, job_id)
        return views.job_detail(service, job_id)

    @router.get("/jobs/{job_id}/events", response_model=list[EventView],
                responses=responses(NOT_FOUND))
    def job_events(job_id: str, caller: Caller) -> list[EventView]:
        visible(caller, job_id)
        return views.events(service, job_id)

    @router.get("/jobs/{job_id}/logs", response_class=PlainTextResponse,
                responses=responses(NOT_FOUND))
    def job_logs(job_id: str, caller: Caller,
                 max_bytes: Annotated[int, Query(ge=1, le=10_000_000)] = 65536) -> str:
        visible(caller, job_id)
        return views.log_tail(service, job_id, max_bytes)

    @router.post("/jobs/{job_id}/progress", status_code=204,
                 responses=responses(NOT_FOUND, CONFLICT, BODY))
    def progress(job_id: str, report: ProgressReport, caller: Caller) -> Response:
        if caller.job_id != job_id:
            visible(caller, job_id)
        commands.report_progress(service, job_id, report)
        return Response(status_code=204)

    @router.get("/cluster", response_model=ClusterView, responses=responses())
    def cluster(caller: Caller) -> ClusterView:
        return views.cluster_view(service, caller.queues)

    @router.get("/queues", response_model=list[QueueView], responses=responses())
    def queues(caller: Caller) -> list[QueueView]:
        return views.queue_views(service, caller.queues)

    @router.get("/tenants", response_model=list[TenantQueueView], responses=responses())
    def tenants(caller: Caller) -> list[TenantQueueView]:
        """The cluster queues of ``--tenants`` (empty without): quota, use, fair share."""
        return overview.tenant_views(service, caller.queues)

    @router.get("/utilization", response_model=UtilizationView, responses=responses())
    def utilization(caller: Caller,
                    hours: Annotated[float, Query(gt=0, le=overview.MAX_HOURS)] = 6.0,
                    points: Annotated[int, Query(ge=1, le=overview.MAX_POINTS)] = 120
                    ) -> UtilizationView:
        """GPUs held by running attempts over the last ``hours``, in ``points`` intervals."""
        return overview.utilization(service, hours, points)

    @router.get("/jobs/{job_id}/progress", response_model=list[ProgressRecord],
                responses=responses(NOT_FOUND))
    def job_progress(job_id: str, caller: Caller) -> list[ProgressRecord]:
        """The job's recent progress reports (kept in memory: empty after a restart)."""
        visible(caller, job_id)
        return overview.progress(service, job_id)

    return router
