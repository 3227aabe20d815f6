"""Running the service: build its cluster, bind the socket, serve the API with uvicorn in this
process (one worker: the scheduler state lives here), and shut down cleanly."""

from __future__ import annotations

import json
import os
import socket
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from dlsched.cluster.cluster import Cluster, Node
from dlsched.errors import ConfigError

if TYPE_CHECKING:
    from dlsched.tenancy.config import TenantConfig


@dataclass(frozen=True)
class ServeOptions:
    data_dir: Path
    gpus: int | None = None
    gpu_type: str = "generic"
    cluster: str | None = None
    db_url: str | None = None
    host: str = "127.0.0.1"
    port: int = 8765
    policy: str = "fifo"
    policy_options: Mapping[str, str] = field(default_factory=dict)
    token: str | None = None
    grace_seconds: float = 10.0
    max_attempts: int = 3
    executor: str = "local"
    ray_address: str | None = None
    retry_backoff: float = 10.0
    retry_backoff_max: float = 360.0
    tokens_file: Path | None = None
    tenants: Path | None = None  # tenant YAML: every policy runs inside its quotas


def local_cluster(gpus: int, gpu_type: str) -> Cluster:
    """One node named ``local`` with ``gpus`` GPUs (real or fake: nothing checks)."""
    if gpus < 1:
        raise ConfigError(f"--gpus must be at least 1, got {gpus}")
    return Cluster("local", (Node("local", gpu_type, gpus),))


def check_options(options: ServeOptions) -> None:
    for flag, value in (("--grace-seconds", options.grace_seconds),
                        ("--retry-backoff", options.retry_backoff),
                        ("--retry-backoff-max", options.retry_backoff_max)):
        if value < 0:
            raise ConfigError(f"{flag} must be at least 0, got {value:g}")
    if options.max_attempts < 1:
        raise ConfigError(f"--max-attempts must be at least 1, got {options.max_attempts}")


def service_cluster(options: ServeOptions) -> Cluster:
    if options.executor == "ray":
        if options.gpus is not None or options.cluster is not None:
            raise ConfigError("--executor ray takes its nodes from the Ray cluster: drop "
                              "--gpus/--cluster")
        return Cluster("ray", ())  # replaced by the Ray cluster's nodes in serve()
    if options.executor != "local":
        raise ConfigError(f"--executor: unknown executor {options.executor!r} (local, ray)")
    if (options.gpus is None) == (options.cluster is None):
        raise ConfigError("give either --gpus N (one local node) or --cluster FILE.yaml")
    if options.cluster is not None:
        from dlsched.cluster.builtin import resolve_cluster

        return resolve_cluster(options.cluster)
    return local_cluster(options.gpus or 0, options.gpu_type)


def bind(host: str, port: int) -> socket.socket:
    """The listening socket, bound before the service starts so workers know its URL (port 0
    picks a free one)."""
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(2048)  # connections wait in the backlog until uvicorn accepts them
    return sock


def serve(options: ServeOptions, announce: bool = True) -> None:
    import uvicorn

    from dlsched.runtime.api import create_app
    from dlsched.runtime.service import Service, ServiceConfig

    check_options(options)
    cluster = service_cluster(options)
    ray_cluster = None
    if options.executor == "ray":
        from dlsched.runtime.executors.ray_cluster import connect

        ray_cluster = connect(options.ray_address)
        cluster = ray_cluster.cluster
    tokens = None
    if options.tokens_file is not None:
        from dlsched.runtime.auth import load_tokens

        tokens = load_tokens(options.tokens_file)
    sock = bind(options.host, options.port)
    port = sock.getsockname()[1]
    worker_host = "127.0.0.1" if options.host in ("0.0.0.0", "::", "") else options.host
    url = f"http://{worker_host}:{port}"
    service = Service(ServiceConfig(cluster, options.data_dir, options.db_url, options.policy,
                                    dict(options.policy_options), url, options.token,
                                    options.grace_seconds, options.max_attempts,
                                    retry_backoff=options.retry_backoff,
                                    retry_backoff_max=options.retry_backoff_max,
                                    ray_cluster=ray_cluster, tokens=tokens,
                                    tenants=_tenants(options.tenants)))
    service.start()
    try:
        _write_info(options.data_dir, url)
        if announce:
            print(f"dlsched service on {url} ({cluster.describe()}; policy {options.policy}; "
                  f"database {service.config.database})", flush=True)
        config = uvicorn.Config(create_app(service), log_level="warning", access_log=False)
        uvicorn.Server(config).run(sockets=[sock])
    finally:
        service.shutdown()
        sock.close()


def _tenants(path: Path | None) -> TenantConfig | None:
    """The tenant model of ``path`` (``--tenants``), or None."""
    if path is None:
        return None
    from dlsched.tenancy.loader import load_tenants

    return load_tenants(path)


def _write_info(data_dir: Path, url: str) -> None:
    """``DATA_DIR/service.json``: where the running service listens (for scripts and tests)."""
    info = {"url": url, "pid": os.getpid()}
    tmp = data_dir / "service.json.tmp"
    tmp.write_text(json.dumps(info) + "\n")
    tmp.replace(data_dir / "service.json")
