"""The HTTP front end of a real service (FastAPI):

- ``POST /v1/completions`` ``{"prompt": "text"}`` or ``{"prompt_tokens": [ids]}``, and
  ``"max_tokens"``: the generated token ids and text (bytes), the replica that served it, and
  when the request arrived, got its first token and finished (UNIX seconds). A bad field is a
  422 naming it.
- ``GET /health``: replicas placed and ready.
- ``GET /stats``: every iteration of every replica (phase, batch, tokens, KV blocks held),
  the replica count over time, for the report, and each replica's CPU.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import asdict
from typing import Any

from fastapi import FastAPI, HTTPException
from pydantic import BaseModel, Field

from dlsched.serving.real.service import LiveService, RequestRejected, ServiceOptions


class Completion(BaseModel):
    prompt: str | None = None
    prompt_tokens: list[int] | None = None
    max_tokens: int = Field(16, ge=1)


def _tokens(body: Completion, vocab: int, max_context: int) -> list[int]:
    if (body.prompt is None) == (body.prompt_tokens is None):
        raise HTTPException(422, "prompt: give exactly one of prompt or prompt_tokens")
    if body.prompt is not None:
        tokens = list(body.prompt.encode())
        field = "prompt"
    else:
        tokens = list(body.prompt_tokens or [])
        field = "prompt_tokens"
        bad = next((t for t in tokens if not 0 <= t < vocab), None)
        if bad is not None:
            raise HTTPException(422, f"prompt_tokens: {bad} is outside 0..{vocab - 1}")
    if not tokens:
        raise HTTPException(422, f"{field}: empty")
    if len(tokens) + body.max_tokens > max_context:
        raise HTTPException(422, f"max_tokens: {len(tokens)} prompt tokens + "
                                 f"{body.max_tokens} exceed the model's context of "
                                 f"{max_context}")
    return tokens


def create_app(options: ServiceOptions) -> FastAPI:
    holder: dict[str, LiveService] = {}

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        service = holder["service"] = app.state.service = LiveService(options)
        task = (asyncio.create_task(service.autoscale_loop())
                if options.autoscale is not None else None)
        try:
            yield
        finally:
            if task is not None:
                task.cancel()
            service.close()

    app = FastAPI(title="dlsched inference service", lifespan=lifespan)
    cfg = options.settings

    @app.post("/v1/completions")
    async def completions(body: Completion) -> dict[str, Any]:
        tokens = _tokens(body, 256, cfg.max_context)
        try:
            out = await holder["service"].generate(tokens, body.max_tokens)
        except RequestRejected as exc:
            raise HTTPException(422, f"prompt: {exc}") from None
        out["text"] = bytes(out["tokens"]).decode(errors="replace")
        return out

    @app.get("/health")
    async def health() -> dict[str, int]:
        pool = holder["service"].pool
        return {"replicas": len([r for r in pool.replicas if r.retired is None]),
                "ready": pool.ready_count()}

    @app.get("/stats")
    async def stats() -> dict[str, Any]:
        log = holder["service"].pool.log
        return {"iterations": [{"replica": i, **asdict(it)} for i, it in log.iterations],
                "replicas": [{"time": t, "held": h, "ready": r} for t, h, r in log.replicas],
                "cpus": [r.cpu for r in holder["service"].pool.replicas]}

    return app


def run(options: ServiceOptions, host: str, port: int) -> None:
    import uvicorn

    uvicorn.run(create_app(options), host=host, port=port, log_level="warning")
