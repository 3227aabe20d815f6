"""The verbs that read the service or act on one job: ``jobs``, ``cancel``, ``logs``,
``status``."""

from __future__ import annotations

import enum
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Column, Table

from dlsched.errors import DlschedError
from dlsched.runtime.cli_common import (
    DEFAULT_URL,
    ClientTokenOpt,
    JsonOpt,
    TokenFileOpt,
    UrlOpt,
    connect,
    console,
    fail,
    print_json,
)
from dlsched.runtime.display import (
    listed_gpus,
    print_job,
    reason_shown,
    shared_use,
    shown_status,
)
from dlsched.wording import did_you_mean


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


def parse_state(value: str | State) -> State:
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


def jobs(
    job_id: Annotated[str | None, typer.Argument(help="Show one job in detail.")] = None,
    status: Annotated[State | None, typer.Option(
        "--status", help="Only jobs in this state (retrying: failed, waiting out its backoff; "
                         "the API's preempted, which --status preempted lists too).",
        parser=parse_state, metavar=f"<{'|'.join(State)}>")] = None,
    queue: Annotated[str | None, typer.Option("--queue", help="Only jobs of this queue.")
                     ] = None,
    as_json: JsonOpt = False,
    url: UrlOpt = DEFAULT_URL, token: ClientTokenOpt = None,
    token_file: TokenFileOpt = None,
) -> None:
    """List jobs, or show one (with why it is pending, its attempts and events)."""
    try:
        with connect("jobs", url, token, token_file=token_file) as client:
            if job_id is not None:
                job, events = client.job(job_id), client.events(job_id)
                if as_json:
                    print_json({**job.model_dump(), "events": [e.model_dump()
                                                               for e in events]})
                else:
                    print_job(Console(emoji=False), job, events)
                return
            listed = _listed(client, status, queue)
    except DlschedError as exc:
        fail(exc)
    if as_json:
        print_json([job.model_dump() for job in listed])
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


def cancel(job_id: Annotated[str, typer.Argument(help="The job's id (see `dlsched jobs`).")],
           url: UrlOpt = DEFAULT_URL, token: ClientTokenOpt = None,
           token_file: TokenFileOpt = None) -> None:
    """Cancel a job (its workers get SIGTERM, then SIGKILL after the grace period)."""
    try:
        with connect("cancel", url, token, token_file=token_file) as client:
            print(f"{job_id}: {client.cancel(job_id).status}")
    except DlschedError as exc:
        fail(exc)


def logs(job_id: Annotated[str, typer.Argument(help="The job's id (see `dlsched jobs`).")],
         max_bytes: Annotated[int, typer.Option("--bytes", help="At most this many bytes, "
                                                                "from the end.")] = 65536,
         url: UrlOpt = DEFAULT_URL, token: ClientTokenOpt = None,
         token_file: TokenFileOpt = None) -> None:
    """The end of a job's latest log."""
    try:
        if max_bytes < 1:  # the API's refusal named its query.max_bytes, not --bytes
            raise DlschedError(f"--bytes {max_bytes}: give at least 1 byte")
        with connect("logs", url, token, token_file=token_file) as client:
            text = client.logs(job_id, max_bytes)
        print(text, end="")
        if not text:  # stdout stays empty for scripts; a reader learns it was not a failure
            console.print(f"({escape(job_id)}: its latest log is empty, or it has not run)")
    except DlschedError as exc:
        fail(exc)


def status(as_json: JsonOpt = False, url: UrlOpt = DEFAULT_URL,
           token: ClientTokenOpt = None, token_file: TokenFileOpt = None) -> None:
    """The cluster (who holds which GPU) and the queues."""
    try:
        with connect("status", url, token, token_file=token_file) as client:
            cluster, queues = client.cluster(), client.queues()
    except DlschedError as exc:
        fail(exc)
    if as_json:
        print_json({"cluster": cluster.model_dump(),
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
