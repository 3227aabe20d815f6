"""The REST API (FastAPI; OpenAPI schema at /openapi.json). Endpoints are plain functions, run
in FastAPI's thread pool, that call the service under its lock.

With a token, every ``/v1`` request needs ``Authorization: Bearer TOKEN`` (401 otherwise);
``/healthz`` and ``/metrics`` stay open.
"""

from __future__ import annotations

import secrets
from typing import Annotated

from fastapi import APIRouter, Depends, FastAPI, Header, Query, Request, Response
from fastapi.responses import JSONResponse, PlainTextResponse

from dlsched import __version__
from dlsched.runtime import commands, views
from dlsched.runtime.commands import RequestError
from dlsched.runtime.models import (
    ClusterView,
    EventView,
    Health,
    JobDetail,
    JobSummary,
    ProgressReport,
    QueueView,
    SubmitRequest,
)
from dlsched.runtime.service import Service


def create_app(service: Service) -> FastAPI:
    app = FastAPI(title="dlsched", version=__version__,
                  description="Scheduler service for deep-learning jobs")
    app.add_exception_handler(RequestError, _request_error)  # type: ignore[arg-type]
    app.include_router(_v1(service), prefix="/v1", dependencies=[Depends(_auth(service))])

    @app.get("/healthz", response_model=Health)
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


def _auth(service: Service):  # noqa: ANN202 (a FastAPI dependency)
    token = service.config.token

    def check(authorization: Annotated[str | None, Header()] = None) -> None:
        if token is None:
            return
        scheme, _, given = (authorization or "").partition(" ")
        if scheme.lower() != "bearer" or not secrets.compare_digest(
                given.strip().encode(), token.encode()):
            raise RequestError(401, "missing or wrong token (send 'Authorization: Bearer T')")

    return check


def _v1(service: Service) -> APIRouter:
    router = APIRouter()

    @router.post("/jobs", status_code=201, response_model=JobSummary)
    def submit(request: SubmitRequest) -> JobSummary:
        return views.summary(service, commands.submit(service, request))

    @router.get("/jobs", response_model=list[JobSummary])
    def list_jobs(status: str | None = None, queue: str | None = None,
                  limit: Annotated[int, Query(ge=1, le=100_000)] = 1000,
                  offset: Annotated[int, Query(ge=0)] = 0) -> list[JobSummary]:
        return views.job_list(service, status, queue, limit, offset)

    @router.get("/jobs/{job_id}", response_model=JobDetail)
    def get_job(job_id: str) -> JobDetail:
        return views.job_detail(service, job_id)

    @router.delete("/jobs/{job_id}", response_model=JobDetail)
    def cancel_job(job_id: str) -> JobDetail:
        commands.cancel(service, job_id)
        return views.job_detail(service, job_id)

    @router.get("/jobs/{job_id}/events", response_model=list[EventView])
    def job_events(job_id: str) -> list[EventView]:
        return views.events(service, job_id)

    @router.get("/jobs/{job_id}/logs", response_class=PlainTextResponse)
    def job_logs(job_id: str,
                 max_bytes: Annotated[int, Query(ge=1, le=10_000_000)] = 65536) -> str:
        return views.log_tail(service, job_id, max_bytes)

    @router.post("/jobs/{job_id}/progress", status_code=204)
    def progress(job_id: str, report: ProgressReport) -> Response:
        commands.report_progress(service, job_id, report)
        return Response(status_code=204)

    @router.get("/cluster", response_model=ClusterView)
    def cluster() -> ClusterView:
        return views.cluster_view(service)

    @router.get("/queues", response_model=list[QueueView])
    def queues() -> list[QueueView]:
        return views.queue_views(service)

    return router
