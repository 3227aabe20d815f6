"""``dlsched serve``: its options, read into ``ServeOptions`` for ``server.serve``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from dlsched.errors import DlschedError
from dlsched.extras import require
from dlsched.runtime.cli_common import TokenOpt, fail


def serve(
    executor: Annotated[str, typer.Option(
        "--executor", help="local (subprocesses here) or ray (actors on a Ray cluster).")
    ] = "local",
    ray_address: Annotated[str | None, typer.Option(
        "--ray-address", help="With --executor ray: the cluster to join (HOST:PORT or auto).")
    ] = None,
    gpus: Annotated[int | None, typer.Option("--gpus", help="GPUs of the local node.")] = None,
    gpu_type: Annotated[str, typer.Option("--gpu-type", help="Their type.")] = "generic",
    cluster: Annotated[str | None, typer.Option(
        "--cluster", help="A cluster YAML instead of --gpus (all nodes run on this machine).")
    ] = None,
    db: Annotated[str | None, typer.Option(
        "--db", help="Database URL (default sqlite:///DATA_DIR/dlsched.db).")] = None,
    host: Annotated[str, typer.Option(
        "--host", help="Address to listen on (0.0.0.0: every interface).")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", help="0 picks a free port.")] = 8765,
    policy: Annotated[str, typer.Option("--policy", help="See `dlsched policies`.")] = "fifo",
    policy_opt: Annotated[list[str] | None, typer.Option(
        "--policy-opt", metavar="KEY=VALUE", help="Policy option key=value; repeatable.")] = None,
    policy_file: Annotated[list[str] | None, typer.Option(
        "--policy-file", metavar="FILE", help="Also Python files (.py) or modules defining "
        "policies (@register_policy), as in `simulate`; comma-separated or repeated.")] = None,
    token: TokenOpt = None,
    token_file: Annotated[Path | None, typer.Option(
        "--token-file", help="Read --token from this file (keeps it out of `ps`).")] = None,
    tokens_file: Annotated[Path | None, typer.Option(
        "--tokens-file", help="Per-tenant tokens (YAML): each tenant uses only its queues; "
                              "--token, if also given, is an admin's.")] = None,
    data_dir: Annotated[Path, typer.Option(
        "--data-dir", help="Logs, default checkpoints, the SQLite database.")] = Path(
            "~/.dlsched"),
    grace_seconds: Annotated[float, typer.Option(
        "--grace-seconds", help="SIGTERM to SIGKILL when a job is stopped.")] = 10.0,
    max_attempts: Annotated[int, typer.Option(
        "--max-attempts", help="Give a job up after this many failed attempts.")] = 3,
    retry_backoff: Annotated[float, typer.Option(
        "--retry-backoff", help="Seconds before retrying after a first failure, doubling "
                                "after each (0: at once).")] = 10.0,
    retry_backoff_max: Annotated[float, typer.Option(
        "--retry-backoff-max", help="The longest retry delay.")] = 360.0,
    tenants: Annotated[Path | None, typer.Option(
        "--tenants", help="A tenant YAML (queues, quotas, cohorts; docs/tenancy.md): the "
                          "policy runs inside its quotas.")] = None,
    insecure: Annotated[bool, typer.Option(
        "--insecure", help="Listen beyond loopback (--host) without any token: anyone who "
                           "reaches the port can run commands as this user.")] = False,
    checkpoint_seconds: Annotated[float, typer.Option(
        "--checkpoint-seconds", help="Tell every job's workers to checkpoint at least this "
                                     "often (DLSCHED_CHECKPOINT_SECONDS; 0: they choose).")] = 0.0,
    orphan_timeout: Annotated[float, typer.Option(
        "--orphan-timeout", help="--executor ray: seconds after the service died (and was not "
                                 "restarted) before its Ray workers are stopped and their GPUs "
                                 "freed; a restart within it adopts them.")] = 600.0,
) -> None:
    """Run the scheduler service (REST API, scheduling loop, local or Ray executor). SIGINT or
    SIGTERM stops it: running jobs get SIGTERM and --grace-seconds, and are requeued to resume
    at the next start."""
    try:
        require("runtime", "dlsched serve")
        if executor == "ray" and gpus is None and cluster is None:  # else: the option error
            require("ray", "dlsched serve --executor ray")
        from dlsched.runtime.server import ServeOptions
        from dlsched.runtime.server import serve as run_service

        options = ServeOptions(
            data_dir.expanduser(), gpus, gpu_type, cluster, db, host, port, policy,
            _policy_options(policy_opt), _read_token(token, token_file),
            grace_seconds, max_attempts, executor, ray_address, retry_backoff,
            retry_backoff_max, tokens_file, tenants, insecure, checkpoint_seconds,
            orphan_timeout, _policy_files(policy_file))
        run_service(options)
    except (DlschedError, OSError) as exc:
        fail(exc)


def _policy_options(pairs: list[str] | None) -> dict[str, str]:
    """``--policy-opt`` pairs as a mapping; a malformed one is named by its flag."""
    from dlsched.errors import ConfigError
    from dlsched.run_config import parse_policy_options

    try:
        return dict(parse_policy_options(pairs or []))
    except ConfigError as exc:
        raise ConfigError(f"--policy-opt: {exc}") from None


def _policy_files(sources: list[str] | None) -> tuple[str, ...]:
    """``--policy-file`` as in ``simulate``: comma-separated or repeated; imported once, at
    start (``server.check_policy``), so a relative file is read from the current directory."""
    from dlsched.run_config import normalized

    return tuple(normalized("policy_files", sources or []))


def _read_token(token: str | None, token_file: Path | None) -> str | None:
    """``--token-file``'s token (an empty file is refused), else ``--token``."""
    if token_file is not None:
        text = token_file.read_text().strip()
        if not text:
            raise DlschedError(f"token file {token_file} is empty")
        return text
    return token
