"""Runtime test fixtures: in-process services with 4 fake GPUs, a live HTTP server, and clean-up
of every worker process a test left behind (found by their checkpoint directory)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("fastapi")

import httpx  # noqa: E402
from runtime_helpers import Live, kill_strays, wait_for  # noqa: E402

from dlsched.cluster.cluster import Cluster  # noqa: E402
from dlsched.runtime.api import create_app  # noqa: E402
from dlsched.runtime.server import bind, local_cluster  # noqa: E402
from dlsched.runtime.service import Service, ServiceConfig  # noqa: E402

MakeService = Callable[..., Service]


@pytest.fixture
def out(tmp_path: Path) -> Path:
    path = tmp_path / "out"
    path.mkdir()
    return path


@pytest.fixture
def make_service(tmp_path: Path) -> Iterator[MakeService]:
    services: list[Service] = []

    def make(gpus: int = 4, policy: str = "fifo", options: dict[str, str] | None = None,
             token: str | None = None, grace: float = 2.0, max_attempts: int = 3,
             service_url: str = "", ray_cluster: Any = None,
             retry_backoff: float = 0.0, tokens: Any = None, tenants: Any = None,
             gpu_type: str = "T4", cluster: Cluster | None = None,
             policy_files: tuple[str, ...] = ()) -> Service:
        if cluster is None:
            cluster = (local_cluster(gpus, gpu_type) if ray_cluster is None
                       else ray_cluster.cluster)
        config = ServiceConfig(cluster, tmp_path / f"data{len(services)}",
                               policy=policy, policy_options=options or {},
                               service_url=service_url, token=token, grace_seconds=grace,
                               max_attempts=max_attempts, poll_seconds=0.05,
                               retry_backoff=retry_backoff, ray_cluster=ray_cluster,
                               tokens=tokens, tenants=tenants, policy_files=policy_files)
        service = Service(config)
        service.start()
        services.append(service)
        return service

    yield make
    for service in services:
        service.shutdown()
    kill_strays(tmp_path)


@pytest.fixture
def services(tmp_path: Path) -> Iterator[list[Service]]:
    """Services a restart test starts one after another, the old one crashed or stopped by the
    test itself: the last is shut down, and every worker left behind killed."""
    started: list[Service] = []
    yield started
    if started:
        started[-1].shutdown()
    kill_strays(tmp_path)


@pytest.fixture
def live(make_service: MakeService) -> Iterator[Callable[..., Live]]:
    import uvicorn

    started: list[tuple[uvicorn.Server, threading.Thread, Live]] = []

    def make(token: str | None = None, **kwargs: Any) -> Live:
        sock = bind("127.0.0.1", 0)
        url = f"http://127.0.0.1:{sock.getsockname()[1]}"
        service = make_service(service_url=url, token=token, **kwargs)
        server = uvicorn.Server(uvicorn.Config(create_app(service), log_level="warning"))
        thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
        thread.start()
        wait_for(lambda: server.started, 10, "uvicorn to start")
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        handle = Live(service, url, httpx.Client(base_url=url, headers=headers, timeout=30))
        started.append((server, thread, handle))
        return handle

    yield make
    for server, thread, handle in started:
        handle.http.close()
        server.should_exit = True
        thread.join(timeout=10)
