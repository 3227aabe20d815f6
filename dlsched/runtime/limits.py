"""Bounds on what the API accepts, checked before anything is parsed into the service's state.

- every integer fits a signed 64-bit integer (the database's and NumPy's), and every float is
  finite (NaN and infinity answer 422): see ``models.py``;
- a request body is at most ``MAX_BODY_BYTES`` (413, counted as it arrives, chunked or not);
- a body is JSON: ``Content-Type: application/json`` (or ``...+json``), else 415 (the
  dashboard's login and logout forms, ``FORM_PATHS``, may also post a form);
- every status code the API can answer is in the OpenAPI schema (``RESPONSES``).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from starlette.exceptions import HTTPException

INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1
MAX_BODY_BYTES = 1 << 20  # a job's command and environment, with room to spare
FORM_PATHS = frozenset({"/login", "/logout"})  # the dashboard's HTML forms (no JavaScript)

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


def _error(status: int, detail: str) -> dict[str, Any]:
    return {"description": detail, "content": {"application/json": {"schema": {
        "type": "object", "properties": {"detail": {"type": "string"}}}}}}


# What each status code means, for the routes' ``responses`` (the OpenAPI schema).
BAD_REQUEST = {400: _error(400, "The request cannot be served (e.g. more GPUs than the "
                                "cluster has, an unknown GPU type or queue), the body "
                                "is not valid JSON, or a query parameter is not one the "
                                "endpoint takes.")}
UNKNOWN_QUERY = {400: _error(400, "A query parameter is not one the endpoint takes (the "
                                  "detail names it; names starting with '_' are ignored).")}
UNAUTHORIZED = {401: _error(401, "Missing or wrong token.")}
FORBIDDEN = {403: _error(403, "The caller's tenant may not use that queue.")}
NOT_FOUND = {404: _error(404, "No such job (or another tenant's).")}
CONFLICT = {409: _error(409, "The job has already ended, or the report is from an attempt "
                             "that is no longer the job's (fenced).")}
BODY = {400: _error(400, "The body is not valid JSON (or not UTF-8), or a query parameter "
                         "is not one the endpoint takes."),
        413: _error(413, f"The body is larger than {MAX_BODY_BYTES} bytes."),
        415: _error(415, "The body is not JSON (Content-Type: application/json).")}
UNPROCESSABLE = {422: {"description": "A field is missing, of the wrong type, out of range "
                                      "(every integer within 64 bits), or not finite."}}


def responses(*groups: dict[int, dict[str, Any]]) -> dict[int | str, dict[str, Any]]:
    merged: dict[int | str, dict[str, Any]] = {}
    for group in (UNKNOWN_QUERY, UNAUTHORIZED, UNPROCESSABLE, *groups):
        merged.update(group)
    return merged


class BodyLimits:
    """ASGI middleware: 415 for a body that is not JSON, 413 for one over ``max_bytes``
    (from ``Content-Length`` at once, or while a chunked body streams in)."""

    def __init__(self, app: ASGIApp, max_bytes: int = MAX_BODY_BYTES) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] not in ("POST", "PUT", "PATCH"):
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1")
                   for k, v in scope.get("headers", [])}
        length = headers.get("content-length", "")
        if length.strip() and (not length.strip().isdigit() or int(length) > self.max_bytes):
            await _answer(send, 413, f"the body may be at most {self.max_bytes} bytes")
            return
        kind = headers.get("content-type")
        if (kind is not None or length.strip() not in ("", "0")) and not _is_json(kind) \
                and not (scope.get("path") in FORM_PATHS and _is_form(kind)):
            await _answer(send, 415, f"expected Content-Type: application/json, got "
                                     f"{kind or 'none'}")
            return
        await self.app(scope, self._counting(receive, send), send)

    def _counting(self, receive: Receive, send: Send) -> Receive:
        seen = 0

        async def counted() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.max_bytes:  # FastAPI answers an HTTPException as it is
                    raise HTTPException(413, f"the body may be at most {self.max_bytes} bytes")
            return message

        return counted


def _is_form(kind: str | None) -> bool:
    return (kind or "").split(";", 1)[0].strip().lower() == "application/x-www-form-urlencoded"


def _is_json(kind: str | None) -> bool:
    if kind is None:
        return False
    media = kind.split(";", 1)[0].strip().lower()
    return media == "application/json" or (media.startswith("application/")
                                           and media.endswith("+json"))


async def _answer(send: Send, status: int, detail: str) -> None:
    body = json.dumps({"detail": detail}).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"),
                            (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})
