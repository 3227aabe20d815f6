"""The dashboard's routes: HTML pages rendered with Jinja2, refreshed in place by a small
script that polls each page's ``?fragment=1`` (the part that changes), and a cancel button.

Auth is the API's: with ``--token`` or ``--tokens-file`` a page needs a token, given once on
the login form (or as ``/?token=T``, which is turned into the cookie and taken out of the
address) and kept in an HttpOnly, SameSite=Strict cookie. A tenant's token shows only its
queues, as the API does. The cancel button posts to ``/ui/jobs/ID/cancel`` with a custom
header, which another site's page cannot send (nor, SameSite, the cookie).
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any
from urllib.parse import parse_qs, urlencode

from fastapi import APIRouter, Header, Query, Request
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from jinja2 import Environment, FileSystemLoader, select_autoescape
from markupsafe import Markup

from dlsched import __version__
from dlsched.report.theme import THEME_PATH
from dlsched.runtime import commands
from dlsched.runtime.auth import ANYONE, Principal, principal_of
from dlsched.runtime.commands import RequestError
from dlsched.runtime.dashboard import pages
from dlsched.runtime.display import (
    clock,
    command_text,
    listed_gpus,
    reason_shown,
    run_time,
    worker_asks,
)
from dlsched.runtime.limits import MAX_BODY_BYTES
from dlsched.runtime.service import Service
from dlsched.wording import count_of

HERE = Path(__file__).parent
COOKIE = "dlsched_token"
CSRF_HEADER = "X-Dlsched-Dashboard"
STATIC = {"dashboard.css": ("text/css", HERE / "static" / "dashboard.css"),
          "dashboard.js": ("text/javascript", HERE / "static" / "dashboard.js"),
          "theme.css": ("text/css", THEME_PATH)}  # shared with the compare report


def environment() -> Environment:
    env = Environment(loader=FileSystemLoader(HERE / "templates"),
                      autoescape=select_autoescape(default=True), trim_blocks=True,
                      lstrip_blocks=True)
    env.filters.update(clock=lambda t: clock(t) if t else "", ago=_ago, duration=run_time,
                       number=lambda v: f"{v:g}", hue=_hue,
                       times=lambda n: count_of(n, "time"), why=reason_shown,
                       listed_gpus=listed_gpus, worker_asks=worker_asks,
                       shell=command_text)
    env.globals.update(bar=_bar, quota_bar=_quota_bar)
    return env


GOLDEN_ANGLE = 137.50776  # degrees: successive multiples stay far apart on the wheel


def _hue(job_id: str) -> int:
    """A stable colour per job, so that a gang's GPUs read as one. The service numbers its
    jobs (``job-000042``): the n-th job's hue is n golden angles, so jobs submitted close
    together, which run side by side, are at least 50 degrees apart (a hash of the id put
    ``job-000001`` and ``job-000004`` 32 degrees apart, both purple). Other ids: a hash."""
    digits = job_id.rpartition("-")[2]
    number = int(digits) if digits.isdigit() and len(digits) < 16 else int(
        hashlib.sha1(job_id.encode()).hexdigest()[:6], 16)
    return round(number * GOLDEN_ANGLE) % 360


def _bar(used: float, total: float) -> Markup:
    """A horizontal bar of ``used`` out of ``total``, with its percentage."""
    share = used / total if total else 0.0
    return Markup('<span class="bar" title="{0:.0%}"><span class="fill" style="width:{1:.1f}%">'
                  '</span></span> <span class="small">{0:.0%}</span>').format(
                      share, min(100.0, 100 * share))


def _quota_bar(used: float, nominal: float) -> Markup:
    """Use against the nominal quota: the bar spans max(use, quota) and a mark shows the
    quota; what lies beyond it (borrowed) is coloured apart."""
    span = max(used, nominal, 1e-9)
    fill = "fill over" if used > nominal + 1e-9 else "fill"
    return Markup('<span class="bar" title="{0:g} used of {1:g} nominal"><span class="{2}" '
                  'style="width:{3:.1f}%"></span><span class="mark" style="left:{4:.1f}%">'
                  '</span></span>').format(used, nominal, fill, 100 * used / span,
                                            min(99.0, 100 * nominal / span))


def _ago(timestamp: float | None) -> str:
    return "" if not timestamp else run_time(max(0.0, time.time() - timestamp)) + " ago"


def router(service: Service) -> APIRouter:
    env = environment()
    r = APIRouter(include_in_schema=False)
    secured = service.config.token is not None or service.config.tokens is not None

    def person(token: str) -> Principal | None:
        """Who may see the dashboard with ``token``: the admin or a tenant, not a job's
        workers (their token only reports that job's progress)."""
        found = principal_of(token, service.config.token, service.config.tokens) \
            if token else None
        return None if found is None or found.job_id is not None else found

    def caller_of(request: Request) -> Principal | None:
        return person(request.cookies.get(COOKIE, "")) if secured else ANYONE

    def render(name: str, status: int = 200, **context: Any) -> HTMLResponse:
        html = env.get_template(name).render(version=__version__, secured=secured,
                                             cluster_name=service.cluster.name,
                                             now=time.time(), **context)
        return HTMLResponse(html, status_code=status, headers={"Cache-Control": "no-store"})

    def to_login(request: Request) -> Response:
        if request.query_params.get("fragment"):
            return JSONResponse({"detail": "log in again"}, status_code=401)
        return RedirectResponse("/login?" + urlencode({"next": _local(str(request.url))}), 303)

    def with_token(request: Request) -> Response | None:
        """``?token=T``: check it, keep it as the cookie, and reload without it."""
        token = request.query_params.get("token")
        if token is None or not secured:
            return None
        if person(token) is None:
            return render("login.html", 401, error="wrong token", next="/")
        rest = [(k, v) for k, v in request.query_params.multi_items() if k != "token"]
        target = request.url.path + ("?" + urlencode(rest) if rest else "")
        return _logged_in(RedirectResponse(target, 303), token)

    def signed_in(request: Request) -> Principal | Response:
        """The page's caller, or the answer that gets one: the reload after ``?token=``, or
        the way to the login form."""
        answer = with_token(request)
        if answer is not None:
            return answer
        caller = caller_of(request)
        return to_login(request) if caller is None else caller

    @r.get("/", response_class=HTMLResponse)
    def home(request: Request, state: str = "", queue: str = "", user: str = "",
             hours: Annotated[float, Query(gt=0, le=pages.HOURS[-1])] = 6.0,
             fragment: bool = False) -> Response:
        bad_state = pages.unknown_state(state)
        if bad_state is not None:  # as ?hours=x: said before any login, like FastAPI's
            return invalid_address(request, [bad_state])
        caller = signed_in(request)
        if isinstance(caller, Response):
            return caller
        page = pages.overview_page(service, caller, pages.JobFilter(state, queue, user), hours)

        def query(**changed: Any) -> str:
            kept = {"state": state, "queue": queue, "user": user, "hours": f"{hours:g}",
                    **changed}
            return urlencode({k: v for k, v in kept.items() if v not in ("", None)})

        return render("overview_live.html" if fragment else "overview.html", page=page,
                      caller=caller, states=pages.STATES, hour_choices=pages.HOURS,
                      query=query)

    @r.get("/jobs/{job_id}", response_class=HTMLResponse)
    def job(request: Request, job_id: str, fragment: bool = False) -> Response:
        caller = signed_in(request)
        if isinstance(caller, Response):
            return caller
        row = service.store.job(job_id)
        if row is None or not caller.may_use(row.queue):
            return render("missing.html", 404, job_id=job_id, caller=caller)
        page = pages.job_page(service, job_id)
        return render("job_live.html" if fragment else "job.html", page=page, caller=caller)

    @r.post("/ui/jobs/{job_id}/cancel")
    def cancel(request: Request, job_id: str,
               marker: Annotated[str | None, Header(alias=CSRF_HEADER)] = None) -> JSONResponse:
        caller = caller_of(request)
        if marker != "1":
            return JSONResponse({"detail": f"send the {CSRF_HEADER}: 1 header"}, 403)
        if caller is None:
            return JSONResponse({"detail": "log in again"}, 401)
        row = service.store.job(job_id)
        try:
            if row is None or not caller.may_use(row.queue):
                raise RequestError(404, f"no job {job_id!r}")
            commands.cancel(service, job_id)
        except RequestError as exc:
            return JSONResponse({"detail": exc.message}, exc.status)
        return JSONResponse({"id": job_id, "status": "cancelled"})

    @r.get("/login", response_class=HTMLResponse)
    def login_form(next: str = "/") -> Response:
        return render("login.html", next=_local(next), error="")

    @r.post("/login", response_class=HTMLResponse)
    async def login(request: Request) -> Response:
        body = (await request.body())[:MAX_BODY_BYTES].decode(errors="replace")
        form = {k: v[0] for k, v in parse_qs(body).items()}
        token, target = form.get("token", "").strip(), _local(form.get("next", "/"))
        if person(token) is None:
            return render("login.html", 401, next=target, error="wrong token")
        return _logged_in(RedirectResponse(target, 303), token)

    @r.post("/logout")
    def logout() -> Response:
        answer = RedirectResponse("/login", 303)
        answer.delete_cookie(COOKIE, path="/")
        return answer

    @r.get("/api", response_class=HTMLResponse)
    def api_page(request: Request) -> Response:
        """The REST API's paths, listed here: ``/docs`` needs the internet (a CDN's
        scripts). Open, as ``/openapi.json`` is: it says nothing about jobs."""
        return render("api.html", caller=caller_of(request),
                      endpoints=pages.endpoints(request.app.openapi()))

    @r.get("/static/{name}")
    def static(name: str) -> Response:
        if name not in STATIC:
            return Response("not found", 404)
        media, path = STATIC[name]
        return Response(path.read_bytes(), media_type=media,
                        headers={"Cache-Control": "max-age=300"})

    return r


@dataclass(frozen=True)
class AddressProblem:
    """A query parameter of a page's address that the page cannot use, and why."""

    name: str
    value: str
    why: str


def invalid_address(request: Request, errors: Sequence[Mapping[str, Any]]) -> HTMLResponse:
    """A page asked with a query value it cannot use (``/?hours=x``): a page naming each such
    parameter and why, 422 as the API answers the same value, with a link to the page without
    them. It was FastAPI's JSON, raw in the browser. Nothing in it needs a login: it says
    only what the address said."""
    problems = [AddressProblem(str(error["loc"][-1]), _printable(error.get("input", "")),
                               str(error.get("msg", "not valid")))
                for error in errors if error.get("loc", ())[:1] == ("query",)]
    names = {problem.name for problem in problems}
    kept = [(k, v) for k, v in request.query_params.multi_items() if k not in names]
    service = request.app.state.service
    html = environment().get_template("invalid.html").render(
        version=__version__, cluster_name=service.cluster.name, now=time.time(),
        problems=problems, without=request.url.path + ("?" + urlencode(kept) if kept else ""))
    return HTMLResponse(html, status_code=422, headers={"Cache-Control": "no-store"})


def _printable(value: Any) -> str:
    """A value as text UTF-8 can encode: a lone surrogate (``%ED%A0%80``) is escaped, not a
    500 when the page is encoded."""
    return str(value).encode("utf-8", "backslashreplace").decode("utf-8")


def _logged_in(answer: Response, token: str) -> Response:
    answer.set_cookie(COOKIE, token, httponly=True, samesite="strict", path="/")
    return answer


def _local(url: str) -> str:
    """Only a path on this site (no open redirect to another one)."""
    if "://" in url:
        url = "/" + url.split("://", 1)[1].partition("/")[2]
    if not url.startswith("/") or url.startswith("//") or "\\" in url:
        return "/"
    return url
