"""Running the service: build its cluster, bind the socket, serve the API with uvicorn in this
process (one worker: the scheduler state lives here), and shut down cleanly."""

from __future__ import annotations

import errno
import json
import math
import os
import signal
import socket
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dlsched.cluster.cluster import Cluster, Node
from dlsched.errors import ConfigError, DlschedError
from dlsched.runtime.confine import open_private
from dlsched.runtime.datadir import check_free
from dlsched.runtime.exposure import exposure_warnings, print_warnings
from dlsched.wording import count_of, did_you_mean

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
    insecure: bool = False  # listen beyond loopback without a token (exposure.py)
    checkpoint_seconds: float = 0.0  # told to the workers (DLSCHED_CHECKPOINT_SECONDS); 0: none
    orphan_timeout: float = 600.0  # Ray: a dead service's workers are released after this
    # --policy-file: .py files or modules whose @register_policy policies --policy may name
    policy_files: tuple[str, ...] = ()


def local_cluster(gpus: int, gpu_type: str) -> Cluster:
    """One node named ``local`` with ``gpus`` GPUs (real or fake: nothing checks) and this
    machine's CPUs and memory (what jobs' ``cpus_per_gpu``/``memory_gb_per_gpu`` book)."""
    if gpus < 1:
        raise ConfigError(f"--gpus must be at least 1, got {gpus}")
    return Cluster("local", (Node("local", gpu_type, gpus, float(os.cpu_count() or 0),
                                  _memory_gb()),))


def _memory_gb() -> float:
    """This machine's memory in GiB (0: unknown, not accounted)."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    except (ValueError, OSError, AttributeError):
        return 0.0


def check_options(options: ServeOptions) -> None:
    """Every number of the options in range before anything starts: a port beyond 0-65535 was
    Python's OverflowError from ``bind``, and ``nan`` passed every ``< 0`` test (typer reads
    'nan' and 'inf' as floats)."""
    for flag, value in (("--grace-seconds", options.grace_seconds),
                        ("--checkpoint-seconds", options.checkpoint_seconds),
                        ("--retry-backoff", options.retry_backoff),
                        ("--retry-backoff-max", options.retry_backoff_max)):
        _check_finite(flag, value)
        if value < 0:
            raise ConfigError(f"{flag} must be at least 0, got {value:g}")
    if options.max_attempts < 1:
        raise ConfigError(f"--max-attempts must be at least 1, got {options.max_attempts}")
    _check_finite("--orphan-timeout", options.orphan_timeout)
    if options.orphan_timeout <= 0:
        raise ConfigError(f"--orphan-timeout must be more than 0, got {options.orphan_timeout:g}")
    if not 0 <= options.port <= 65535:
        raise ConfigError(f"--port must be 0 to 65535 (0: a free port), got {options.port}")


def service_cluster(options: ServeOptions) -> Cluster:
    if options.executor == "ray":
        if options.gpus is not None or options.cluster is not None:
            raise ConfigError("--executor ray takes its nodes from the Ray cluster: drop "
                              "--gpus/--cluster")
        return Cluster("ray", ())  # replaced by the Ray cluster's nodes in serve()
    if options.executor != "local":
        raise ConfigError(f"--executor: unknown executor {options.executor!r} (local, ray)"
                          f"{did_you_mean(options.executor, ('local', 'ray'))}")
    if (options.gpus is None) == (options.cluster is None):
        raise ConfigError("give either --gpus N (one local node) or --cluster FILE.yaml")
    if options.cluster is not None:
        from dlsched.cluster.builtin import resolve_cluster

        return resolve_cluster(options.cluster)
    return local_cluster(options.gpus or 0, options.gpu_type)


def _check_finite(flag: str, seconds: float) -> None:
    if not math.isfinite(seconds):
        raise ConfigError(f"{flag} must be a finite number of seconds, got {seconds:g}")


def bind(host: str, port: int) -> socket.socket:
    """The listening socket, bound before the service starts so workers know its URL (port 0
    picks a free one)."""
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        hint = " (another dlsched serve? give --port N, or --port 0 for a free one)" \
            if exc.errno == errno.EADDRINUSE else ""
        raise ConfigError(f"cannot listen on {host}:{port}: {exc.strerror}{hint}") from None
    sock.listen(2048)  # connections wait in the backlog until uvicorn accepts them
    return sock


class Stopped(Exception):
    """The service was asked to stop by a signal (SIGTERM: systemd, Kubernetes, ``kill``)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def _raise_stopped(signum: int, _frame: object) -> None:
    signal.signal(signum, signal.SIG_IGN)  # a second SIGTERM must not cut the shutdown short
    raise Stopped(signum)


@contextmanager
def stop_on_sigterm() -> Iterator[None]:
    """SIGTERM raises ``Stopped`` (as SIGINT raises KeyboardInterrupt), so that ``serve``'s
    shutdown runs: workers get SIGTERM and their grace period and their jobs are requeued.
    uvicorn captures SIGTERM while it serves and re-raises it once it has stopped; without
    this handler that re-raise killed the process before the shutdown (issue 11 item 2)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, _raise_stopped)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


@contextmanager
def _signals_ignored() -> Iterator[None]:
    """SIGINT and SIGTERM ignored while the shutdown runs (it ends within the grace period). A
    second Ctrl-C raised KeyboardInterrupt inside it: exit 130, a worker that ignores SIGTERM
    never killed, its job still recorded running. A second SIGTERM was ignored already."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {sig: signal.signal(sig, signal.SIG_IGN) for sig in (signal.SIGINT,
                                                                     signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def serve(options: ServeOptions, announce: bool = True) -> None:
    """Run the service until SIGINT or SIGTERM. The port is bound before the heavy imports
    (FastAPI, SQLAlchemy): a client that connects while the service starts waits in the
    backlog instead of being refused."""
    check_options(options)
    tenants = check_policy(options)  # before the port is bound and the warnings printed
    _exposure(options, options.port)  # refuses an open service before anything starts
    cluster = service_cluster(options)
    check_free(options.data_dir, database_url(options))
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
    print_warnings(_exposure(options, sock.getsockname()[1]))  # --port 0: the one chosen
    try:
        _serve_on(sock, options, cluster, ray_cluster, tokens, tenants, announce)
    finally:
        sock.close()


def check_policy(options: ServeOptions) -> TenantConfig | None:
    """``--policy``, ``--policy-opt`` and ``--tenants`` checked before anything is bound or
    printed, so that a typo gives its error alone, naming the flag (it came after the no-token
    warning and the bind). Returns the tenant model, None without ``--tenants``."""
    from dlsched.scheduling.registry import build_policy, load_policy_files, policies

    try:  # first: their policies are what --policy may name
        load_policy_files(options.policy_files)
    except ConfigError as exc:
        raise ConfigError(f"--policy-file: {exc}") from None
    flag = "--policy-opt" if options.policy in policies() else "--policy"
    try:
        build_policy(options.policy, dict(options.policy_options))  # the service builds its own
    except ConfigError as exc:
        raise ConfigError(f"{flag}: {exc}") from None
    try:
        return _tenants(options.tenants)
    except DlschedError as exc:
        raise ConfigError(f"--tenants: {exc}") from None


def _exposure(options: ServeOptions, port: int) -> list[str]:
    return exposure_warnings(options.host, port, options.token is not None
                             or options.tokens_file is not None, options.tokens_file,
                             options.insecure)


def database_url(options: ServeOptions) -> str:
    return options.db_url or f"sqlite:///{options.data_dir / 'dlsched.db'}"


def _serve_on(sock: socket.socket, options: ServeOptions, cluster: Cluster, ray_cluster: Any,
              tokens: Any, tenants: TenantConfig | None, announce: bool) -> None:
    import uvicorn

    from dlsched.runtime.api import create_app
    from dlsched.runtime.service import Service, ServiceConfig

    port = sock.getsockname()[1]
    worker_host = "127.0.0.1" if options.host in ("0.0.0.0", "::", "") else options.host
    url = service_url(worker_host, port)
    service = Service(ServiceConfig(cluster, options.data_dir, options.db_url, options.policy,
                                    dict(options.policy_options), url, options.token,
                                    options.grace_seconds, options.max_attempts,
                                    retry_backoff=options.retry_backoff,
                                    retry_backoff_max=options.retry_backoff_max,
                                    ray_cluster=ray_cluster, tokens=tokens,
                                    tenants=tenants,
                                    checkpoint_seconds=options.checkpoint_seconds or None,
                                    orphan_timeout=options.orphan_timeout,
                                    policy_files=options.policy_files))
    with stop_on_sigterm():
        try:
            service.start()
            print_warnings(start_warnings(service))
            _write_info(options.data_dir, url)
            if announce:
                if worker_host != options.host:
                    print(f"listening on {options.host}:{port}", flush=True)
                print(f"dlsched service on {url} ({cluster.describe()}; policy "
                      f"{options.policy}; database {service.config.database})", flush=True)
            config = uvicorn.Config(create_app(service), log_level="warning", access_log=False)
            uvicorn.Server(config).run(sockets=[sock])
        except (Stopped, KeyboardInterrupt) as exc:
            stopped_by = exc.args[0] if isinstance(exc, Stopped) else "SIGINT"
        else:
            stopped_by = None
        finally:
            running = len(service.core.running)
            with _signals_ignored():
                service.shutdown()
            _remove_info(options.data_dir)
    if announce and stopped_by is not None:
        print(f"dlsched service stopped ({stopped_by}): "
              f"{count_of(running, 'running job')} stopped and requeued", flush=True)


def start_warnings(service: Any) -> list[str]:
    """What the start found that this service cannot run: stored jobs that can never run on
    its cluster (failed at start, ``recovery._refused``) and, with ``--tenants``, a flavor no
    node of the cluster has (``tenancy.assignment.empty_flavors``, as ``simulate`` warns) and
    jobs waiting in a queue the tenant file does not have (they wait, with that reason, until
    a tenant file with it). A start with the wrong ``--gpus``, ``--gpu-type``, ``--cluster``
    or ``--tenants`` said nothing: the jobs only showed failed or stuck in ``dlsched jobs``."""
    warnings = []
    if service.refused_at_start:
        listed = "; ".join(f"{job_id} ({reason})" for job_id, reason in
                           service.refused_at_start)
        warnings.append(f"WARNING: {count_of(len(service.refused_at_start), 'stored job')} "
                        f"can never run on this cluster and ended failed: {listed}")
    tenants = service.tenants
    if tenants is not None:
        from dlsched.tenancy.assignment import empty_flavors

        # as `dlsched simulate` warns: a flavor no node has admits jobs that never run
        warnings += [f"WARNING: {warning}" for warning in
                     empty_flavors(tenants, service.cluster, service.cluster.name)]
        known = {*tenants.local_queues, *tenants.cluster_queues}
        stranded = sorted((job.job_id, job.spec.queue) for job in service.core.jobs.values()
                          if not job.status.is_terminal and job.spec.queue not in known)
        if stranded:
            listed = ", ".join(f"{job_id} (queue {queue!r})" for job_id, queue in stranded)
            warnings.append(
                f"WARNING: {count_of(len(stranded), 'stored job')} "
                f"{'waits' if len(stranded) == 1 else 'wait'} in a queue the tenant file "
                f"does not have, and cannot start until it has: {listed}")
    return warnings


def service_url(host: str, port: int) -> str:
    """The URL clients and workers reach the service at (``service.json``,
    ``DLSCHED_SERVICE_URL``): an IPv6 address goes in brackets (RFC 3986), else
    ``http://::1:8765`` is no URL and every worker's progress report was lost."""
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def _tenants(path: Path | None) -> TenantConfig | None:
    """The tenant model of ``path`` (``--tenants``), or None."""
    if path is None:
        return None
    from dlsched.tenancy.loader import load_tenants

    return load_tenants(path)


def _remove_info(data_dir: Path) -> None:
    """Remove ``service.json`` as the service stops, if it is this process's: it named a URL
    and pid no service had once it stopped (a ``kill -9`` still leaves it: check its pid)."""
    path = data_dir / "service.json"
    try:
        if json.loads(path.read_text()).get("pid") == os.getpid():
            path.unlink()
    except (OSError, ValueError, AttributeError):
        pass  # none, or not ours to remove


def _write_info(data_dir: Path, url: str) -> None:
    """``DATA_DIR/service.json``: where the running service listens (for scripts and tests)."""
    info = {"url": url, "pid": os.getpid()}
    tmp = data_dir / "service.json.tmp"
    tmp.unlink(missing_ok=True)
    with os.fdopen(open_private(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC), "w") as file:
        file.write(json.dumps(info) + "\n")  # 0600, as every file of the service
    tmp.replace(data_dir / "service.json")
