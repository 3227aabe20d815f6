"""CLI verbs of the runtime: ``serve``, ``submit``, ``jobs``, ``cancel``, ``logs``, ``status``.

``runtime_app`` is a Typer app of its own; ``register(app)`` adds the same commands to the main
``dlsched`` app. Nothing here imports the runtime's optional dependencies until a command runs,
so ``dlsched simulate`` does not pay for FastAPI. ``serve`` is in ``cli_serve``, the listing
verbs in ``cli_listing``, the options they share in ``cli_common``; ``submit`` is here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from dlsched.errors import DlschedError
from dlsched.runtime.cli_common import (
    DEFAULT_URL,
    ClientTokenOpt,
    TokenFileOpt,
    UrlOpt,
    WaitOpt,
    console,
    fail,
)
from dlsched.runtime.cli_common import connect as _client
from dlsched.runtime.cli_listing import State, cancel, jobs, jobs_table, logs, status
from dlsched.runtime.cli_listing import parse_state as _state
from dlsched.runtime.cli_serve import serve
from dlsched.runtime.job_request import job_request

__all__ = ["State", "_state", "console", "jobs_table", "register", "runtime_app"]

runtime_app = typer.Typer(help="The dlsched service: run jobs for real (local GPUs or Ray).",
                          no_args_is_help=True, add_completion=False)


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
    url: UrlOpt = DEFAULT_URL, token: ClientTokenOpt = None, wait: WaitOpt = 10.0,
    token_file: TokenFileOpt = None,
) -> None:
    """Submit a job; prints its id."""
    try:
        flags = {"command": command or None, "gpus": gpus, "gpu_type": gpu_type,
                 "min_gpus": min_gpus, "max_gpus": max_gpus,
                 "queue": queue, "priority": priority, "name": name,
                 "checkpoint_dir": checkpoint_dir, "work_seconds": work_seconds,
                 "gpu_share": gpu_share, "gpu_memory_gb": gpu_memory_gb,
                 "mig_profile": mig_profile, "cpus_per_gpu": cpus_per_gpu,
                 "memory_gb_per_gpu": memory_gb_per_gpu, "max_per_node": max_per_node,
                 "group": group}
        request = job_request(file, flags, env, job_dir)
        with _client("submit", url, token, wait, token_file) as client:
            try:
                job = client.submit(request.body)
            except DlschedError as exc:  # the client's ``ClientError`` (httpx: imported late)
                raise request.located(exc) from None
        print(job.id)
    except DlschedError as exc:
        fail(exc)


# Registered in this order: it is the order `dlsched --help` lists them in.
for _verb in (serve, submit, jobs, cancel, logs):
    runtime_app.command()(_verb)
runtime_app.command("status")(status)


def register(app: typer.Typer) -> None:
    """Add the runtime's verbs to the main ``dlsched`` app."""
    for command in runtime_app.registered_commands:
        app.registered_commands.append(command)


if __name__ == "__main__":
    runtime_app()
