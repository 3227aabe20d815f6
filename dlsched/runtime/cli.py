"""CLI verbs of the runtime: ``serve``, ``submit``, ``jobs``, ``cancel``, ``logs``, ``status``.

``runtime_app`` is a Typer app of its own; ``register(app)`` adds the same commands to the main
``dlsched`` app. Nothing here imports the runtime's optional dependencies until a command runs,
so ``dlsched simulate`` does not pay for FastAPI.
"""

from __future__ import annotations

import difflib
import enum
import json
import os
import re
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Column, Table

from dlsched.errors import DlschedError
from dlsched.extras import CLIENT, MissingExtra, require
from dlsched.runtime.display import (
    listed_gpus,
    print_job,
    reason_shown,
    shared_use,
    shown_status,
)
from dlsched.wording import did_you_mean
from dlsched.yamlinput import YamlSource, load_yaml_file

runtime_app = typer.Typer(help="The dlsched service: run jobs for real (local GPUs or Ray).",
                          no_args_is_help=True, add_completion=False)
console = Console(stderr=True, soft_wrap=True, emoji=False)
DEFAULT_URL = "http://127.0.0.1:8765"

UrlOpt = Annotated[str, typer.Option("--url", help="The service's URL.")]
TokenOpt = Annotated[str | None, typer.Option("--token", help="API token, if the service has "
                                                             "one.")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON (the API's own objects) "
                                                      "instead of a table.")]


class State(enum.StrEnum):
    """The states ``--status`` accepts (a typo is refused, not an empty list): the API's, and
    ``retrying``, the listing's word for a failed job waiting out its backoff (the API's
    ``preempted``; ``shown_status``)."""

    pending = "pending"
    running = "running"
    preempted = "preempted"
    finished = "finished"
    failed = "failed"
    cancelled = "cancelled"
    retrying = "retrying"


def _state(value: str | State) -> State:
    """``--status``'s state, in any case; a typo names the closest state, as every other
    mistyped choice of the CLI does (``runing``: did you mean 'running'?)."""
    if isinstance(value, State):
        return value
    try:
        return State(value.casefold())
    except ValueError:
        names = [state.value for state in State]
        raise typer.BadParameter(f"{value!r} is not one of {', '.join(names)}"
                                 f"{did_you_mean(value.casefold(), names)}") from None


def _client(verb: str, url: str, token: str | None, wait: float = 0.0) -> Any:
    require("runtime", f"dlsched {verb}", CLIENT)
    from dlsched.runtime.client import Client

    return Client(url, token, connect_wait=wait)


def _fail(exc: Exception) -> None:
    """The service's (or our) message on one line, exit 1; a missing extra exits 2."""
    console.print(f"[red]error:[/] {escape(str(exc))}")
    raise typer.Exit(2 if isinstance(exc, MissingExtra) else 1)


def _print_json(data: Any) -> None:
    print(json.dumps(data, indent=2, sort_keys=True))


def _policy_options(pairs: list[str] | None) -> dict[str, str]:
    from dlsched.errors import ConfigError
    from dlsched.run_config import parse_policy_options

    try:
        return dict(parse_policy_options(pairs or []))
    except ConfigError as exc:
        raise ConfigError(f"--policy-opt: {exc}") from None


def _read_token(token: str | None, token_file: Path | None) -> str | None:
    if token_file is not None:
        text = token_file.read_text().strip()
        if not text:
            raise DlschedError(f"token file {token_file} is empty")
        return text
    return token


@runtime_app.command()
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
            orphan_timeout)
        run_service(options)
    except (DlschedError, OSError) as exc:
        _fail(exc)


WaitOpt = Annotated[float, typer.Option(
    "--wait", help="Seconds to keep trying while the service cannot be reached yet (one "
                   "started with `dlsched serve &` a moment ago); 0: fail at once.")]


@runtime_app.command()
def submit(
    command: Annotated[list[str] | None, typer.Argument(
        help="The job's argv, after `--`: dlsched submit --gpus 2 -- python train.py")] = None,
    gpus: Annotated[float | None, typer.Option(
        "--gpus", help="Workers, one GPU each, started together as a gang; a fraction below "
                       "1 is one worker on that share of a GPU (--gpus 0.5 = --gpus 1 "
                       "--gpu-share 0.5). Required (unless --file gives gpus).")] = None,
    gpu_type: Annotated[str | None, typer.Option(
        "--gpu-type", help="Only GPUs of this type (default: any).")] = None,
    min_gpus: Annotated[int | None, typer.Option(
        "--min-gpus", help="An elastic job's fewest GPUs: an allocation policy (optimus, "
                           "pollux, ...) may resize it within --min-gpus..--max-gpus.")] = None,
    max_gpus: Annotated[int | None, typer.Option(
        "--max-gpus", help="An elastic job's most GPUs.")] = None,
    queue: Annotated[str | None, typer.Option(
        "--queue", help="The job's queue (tenant; default: default).")] = None,
    priority: Annotated[int | None, typer.Option(
        "--priority", help="Higher first, for policies and tenants that use it "
                           "(default: 0).")] = None,
    name: Annotated[str | None, typer.Option("--name", help="A name to show in listings.")
                    ] = None,
    checkpoint_dir: Annotated[str | None, typer.Option(
        "--checkpoint-dir", help="Kept across attempts; relative to the working directory "
                                 "(default: DATA_DIR/jobs/ID/checkpoint).")] = None,
    work_seconds: Annotated[float | None, typer.Option(
        "--work-seconds", help="Estimated run time, for policies that use one (sjf, srtf).")
    ] = None,
    file: Annotated[Path | None, typer.Option(
        "--file", help="A YAML job with the API's fields; flags override it.")] = None,
    gpu_share: Annotated[float | None, typer.Option(
        "--gpu-share", help="Each worker's share of a GPU's compute, in (0, 1] (MPS).")] = None,
    gpu_memory_gb: Annotated[float | None, typer.Option(
        "--gpu-memory-gb", help="GPU memory (GiB) per worker.")] = None,
    mig_profile: Annotated[str | None, typer.Option(
        "--mig-profile", help="A MIG instance instead of a GPU, e.g. 3g.20gb (one worker).")
    ] = None,
    cpus_per_gpu: Annotated[float | None, typer.Option(
        "--cpus-per-gpu", help="Host CPUs per worker.")] = None,
    memory_gb_per_gpu: Annotated[float | None, typer.Option(
        "--memory-gb-per-gpu", help="Host memory (GiB) per worker.")] = None,
    max_per_node: Annotated[int | None, typer.Option(
        "--max-per-node", help="At most this many workers of --group (of this job, without "
                               "one) on one node: spread replicas (docs/sharing.md).")] = None,
    group: Annotated[str | None, typer.Option(
        "--group", help="The jobs whose workers --max-per-node counts together.")] = None,
    env: Annotated[list[str] | None, typer.Option(
        "--env", metavar="KEY=VALUE", help="A variable of the job's environment; repeatable; "
                                           "over the --file's env.")] = None,
    job_dir: Annotated[bool, typer.Option(
        "--job-dir", help="Send no working directory (default: the current one): the "
                          "service chooses it, DATA_DIR/jobs/ID/work for a tenant's job (a "
                          "tenant without paths in the tokens file may use no other).")
    ] = False,
    url: UrlOpt = DEFAULT_URL, token: TokenOpt = None, wait: WaitOpt = 10.0,
) -> None:
    """Submit a job; prints its id."""
    try:
        body, source = _load_job_file(file) if file is not None else ({}, None)
        workers, gpu_share = _workers_and_share(gpus, gpu_share)
        flags = {"command": command or None, "gpus": workers, "gpu_type": gpu_type,
                 "min_gpus": min_gpus, "max_gpus": max_gpus,
                 "queue": queue, "priority": priority, "name": name,
                 "checkpoint_dir": checkpoint_dir, "work_seconds": work_seconds,
                 "gpu_share": gpu_share, "gpu_memory_gb": gpu_memory_gb,
                 "mig_profile": mig_profile, "cpus_per_gpu": cpus_per_gpu,
                 "memory_gb_per_gpu": memory_gb_per_gpu, "max_per_node": max_per_node,
                 "group": group}
        body.update({k: v for k, v in flags.items() if v is not None})
        if env:
            given = body.get("env")
            body["env"] = {**(given if isinstance(given, dict) else {}), **_env_pairs(env)}
        asked = body.get("gpus")
        if gpus is None and isinstance(asked, float) and 0 < asked < 1:  # the file's gpus: 0.5
            body["gpus"], body["gpu_share"] = _workers_and_share(
                asked, body.get("gpu_share"), (f"{file}: gpus:", "gpu_share:"))
        for key, flag in (("gpus", "--gpus N"), ("command", "the command after --")):
            if key not in body:
                raise _missing(key, flag, file, source)
        if job_dir:
            body["working_dir"] = None  # the service chooses the job's own
        else:
            body.setdefault("working_dir", os.getcwd())
        with _client("submit", url, token, wait) as client:
            try:
                job = client.submit(body)
            except DlschedError as exc:  # the client's ``ClientError`` (httpx: imported late)
                raise _in_file(exc, source, flags) from None
        print(job.id)
    except DlschedError as exc:
        _fail(exc)


def _missing(key: str, flag: str, file: Path | None, source: YamlSource | None
             ) -> DlschedError:
    """A required field neither a flag nor the job file gave; a file key that looks like it
    (``gpu: 1``) is named at its line, not left for the reader to find."""
    if file is None or source is None:
        return DlschedError(f"give {flag} (or a --file that has it)")
    top = [k for k in source.lines if k and "." not in k and "[" not in k]
    close = difflib.get_close_matches(key, top, n=1)
    if close:
        return source.error(close[0], f"not a job field (did you mean {key!r}?); the job "
                                      f"needs {key} here or {flag}")
    return DlschedError(f"give {flag} ({file} has none)")


def _workers_and_share(gpus: float | None, gpu_share: float | None,
                       names: tuple[str, str] = ("--gpus", "--gpu-share")
                       ) -> tuple[int | float | None, float | None]:
    """``--gpus`` as workers, and a fraction of one GPU (``--gpus 0.5``, what an Alibaba
    pod's ``gpu_milli`` 500 asks) as one worker on that share: "Input should be a valid
    integer" answered the fraction. A share given both ways must agree; more than one GPU
    but not whole (1.5) is refused: each worker holds one GPU or one share of one."""
    if gpus is None or gpus == int(gpus):
        return (None if gpus is None else int(gpus)), gpu_share
    if not 0 < gpus < 1:
        raise DlschedError(f"--gpus {gpus:g}: workers are whole (a gang of N GPUs) or one "
                           "fraction of a GPU below 1 (--gpus 0.5); for several fractional "
                           "workers give --gpus N --gpu-share S")
    if gpu_share is not None and gpu_share != gpus:
        raise DlschedError(f"{names[0]} {gpus:g} asks for a share of {gpus:g}, {names[1]} "
                           f"{gpu_share:g} for another: give one of them")
    return 1, gpus


def _env_pairs(pairs: list[str]) -> dict[str, str]:
    """``--env KEY=VALUE`` flags as a mapping (the value may hold ``=``; a later key wins)."""
    env = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise DlschedError(f"--env expects KEY=VALUE, got {pair!r}")
        env[key] = value
    return env


def _load_job_file(path: Path) -> tuple[dict[str, Any], YamlSource]:
    """The job file's fields and where each is; a file that cannot be read or parsed is one
    located line (``job.yaml:2: not valid YAML: ...``), as every YAML input's errors are;
    its ``env`` values are strings (``STEPS: 4`` is ``"4"``: ``job_env``)."""
    from dlsched.runtime.job_env import file_env

    doc, source = load_yaml_file(path, keep_texts=True)
    if not isinstance(doc, dict):
        raise DlschedError(f"{path}: expected a mapping of job fields")
    if "env" in doc:
        doc["env"] = file_env(doc["env"], source)
    return doc, source


def _in_file(exc: DlschedError, source: YamlSource | None,
             flags: dict[str, Any]) -> DlschedError:
    """The service's refusal, located in the job file when the field it names came from
    there (``job.yaml:4:command[0]: 422: ...``); as it was otherwise (a flag gave it)."""
    field = getattr(exc, "field", None)
    if source is None or field is None or getattr(exc, "status", 0) not in (400, 422):
        return exc
    top = re.split(r"[.\[]", field, maxsplit=1)[0]
    if flags.get(top) is not None or top not in source.lines:
        return exc
    return source.error(field, str(exc))


@runtime_app.command()
def jobs(
    job_id: Annotated[str | None, typer.Argument(help="Show one job in detail.")] = None,
    status: Annotated[State | None, typer.Option(
        "--status", help="Only jobs in this state (retrying: failed, waiting out its backoff; "
                         "the API's preempted, which --status preempted lists too).",
        parser=_state, metavar=f"<{'|'.join(State)}>")] = None,
    queue: Annotated[str | None, typer.Option("--queue", help="Only jobs of this queue.")
                     ] = None,
    as_json: JsonOpt = False,
    url: UrlOpt = DEFAULT_URL, token: TokenOpt = None,
) -> None:
    """List jobs, or show one (with why it is pending, its attempts and events)."""
    try:
        with _client("jobs", url, token) as client:
            if job_id is not None:
                job, events = client.job(job_id), client.events(job_id)
                if as_json:
                    _print_json({**job.model_dump(), "events": [e.model_dump()
                                                                for e in events]})
                else:
                    print_job(Console(emoji=False), job, events)
                return
            listed = _listed(client, status, queue)
    except DlschedError as exc:
        _fail(exc)
        return
    if as_json:
        _print_json([job.model_dump() for job in listed])
    elif listed:
        Console(emoji=False).print(jobs_table(listed))
    else:
        console.print(_no_jobs(status, queue))


def _listed(client: Any, status: State | None, queue: str | None) -> list[Any]:
    """The service's jobs of ``status`` and ``queue``; ``retrying`` ones are asked for as the
    API's ``preempted`` and told apart as the listing shows them."""
    if status is not State.retrying:
        return client.jobs(status.value if status else None, queue)
    return [job for job in client.jobs(State.preempted.value, queue)
            if shown_status(job) == State.retrying]


def _no_jobs(status: State | None, queue: str | None) -> str:
    """What an empty listing says (it printed a table of headers only)."""
    asked = " ".join(f"{flag} {escape(value)}" for flag, value in (
        ("--status", status.value if status else None), ("--queue", queue)) if value)
    return f"no jobs match {asked}" if asked else "no jobs yet"


def jobs_table(listed: list[Any]) -> Table:
    """The job listing. Ids and states never wrap nor shrink (an 80-column terminal showed
    ``job-0000…`` beside a long pending reason: an id no one could copy); the reason wraps.
    Its last column is why a job waits or why it ended (a failure), as on the dashboard: a
    failed job's "pending reason" was its failure."""
    def fixed(title: str, values: list[str]) -> Column:
        width = max([len(title), *map(len, values)])
        return Column(title, no_wrap=True, min_width=width)

    table = Table(fixed("id", [job.id for job in listed]), "name",
                  fixed("status", [shown_status(job) for job in listed]), "queue", "GPUs",
                  "attempts", "why it waits (or ended)")
    for job in listed:
        table.add_row(job.id, escape(job.name or ""), shown_status(job), escape(job.queue),
                      listed_gpus(job), str(job.attempts), escape(reason_shown(job)))
    return table


@runtime_app.command()
def cancel(job_id: Annotated[str, typer.Argument(help="The job's id (see `dlsched jobs`).")],
           url: UrlOpt = DEFAULT_URL, token: TokenOpt = None) -> None:
    """Cancel a job (its workers get SIGTERM, then SIGKILL after the grace period)."""
    try:
        with _client("cancel", url, token) as client:
            print(f"{job_id}: {client.cancel(job_id).status}")
    except DlschedError as exc:
        _fail(exc)


@runtime_app.command()
def logs(job_id: Annotated[str, typer.Argument(help="The job's id (see `dlsched jobs`).")],
         max_bytes: Annotated[int, typer.Option("--bytes", help="At most this many bytes, "
                                                                "from the end.")] = 65536,
         url: UrlOpt = DEFAULT_URL, token: TokenOpt = None) -> None:
    """The end of a job's latest log."""
    try:
        with _client("logs", url, token) as client:
            text = client.logs(job_id, max_bytes)
        print(text, end="")
        if not text:  # stdout stays empty for scripts; a reader learns it was not a failure
            console.print(f"({escape(job_id)}: its latest log is empty, or it has not run)")
    except DlschedError as exc:
        _fail(exc)


@runtime_app.command("status")
def status_(as_json: JsonOpt = False, url: UrlOpt = DEFAULT_URL, token: TokenOpt = None
            ) -> None:
    """The cluster (who holds which GPU) and the queues."""
    try:
        with _client("status", url, token) as client:
            cluster, queues = client.cluster(), client.queues()
    except DlschedError as exc:
        _fail(exc)
        return
    if as_json:
        _print_json({"cluster": cluster.model_dump(),
                     "queues": [q.model_dump() for q in queues]})
        return
    out = Console(emoji=False)
    out.print(escape(f"{cluster.name}: {cluster.gpus_allocated:g}/{cluster.gpus_total} GPUs "
                     f"allocated{shared_use(cluster)}, policy {cluster.policy}"))
    for node in cluster.nodes:
        held = ", ".join(f"{g.index}:{'+'.join(g.job_ids or [g.job_id or '-'])}"
                         for g in node.gpus)
        down = " DOWN" if node.down else ""
        out.print(escape(f"  {node.name} ({node.gpu_type}){down}: {held}"))
    table = Table("queue", "pending", "running", "GPUs")
    for queue in queues:
        table.add_row(escape(queue.name), str(queue.pending), str(queue.running),
                      f"{queue.gpus_allocated:g}")
    out.print(table)


def register(app: typer.Typer) -> None:
    """Add the runtime's verbs to the main ``dlsched`` app."""
    for command in runtime_app.registered_commands:
        app.registered_commands.append(command)


if __name__ == "__main__":
    runtime_app()
