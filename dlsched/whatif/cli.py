"""``dlsched history export``: the service's finished jobs as a trace for ``dlsched simulate``
and ``compare`` (what-if replay, docs/what-if.md). Loads SQLAlchemy only when it runs."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape

from dlsched.errors import DlschedError
from dlsched.runtime.cli_common import (
    DEFAULT_URL,
    ClientTokenOpt,
    TokenFileOpt,
    UrlOpt,
    connect,
)
from dlsched.wording import count_of, duration_text

history_app = typer.Typer(help="The service's own history: export it as a trace to replay "
                               "under other policies (what-if: `dlsched compare --trace FILE`, "
                               "docs/what-if.md).",
                          no_args_is_help=True)
console = Console(stderr=True, soft_wrap=True, emoji=False)


@history_app.command("export")
def export(
    out: Annotated[Path, typer.Option("--out", help="The trace file to write (CSV, format "
                                                    "dlsched-history).")],
    data_dir: Annotated[Path, typer.Option(
        "--data-dir", help="The service's data directory (its SQLite database).")] = Path(
            "~/.dlsched"),
    db: Annotated[str | None, typer.Option(
        "--db", help="Any SQLAlchemy database URL instead (default "
                     "sqlite:///DATA_DIR/dlsched.db).")] = None,
    status: Annotated[list[str] | None, typer.Option(
        "--status", metavar="<str>", help="Job states to export (default finished; "
        "repeatable: finished, failed, cancelled).")] = None,
    queue: Annotated[list[str] | None, typer.Option(
        "--queue", metavar="<str>", help="Only these queues (repeatable).")] = None,
    duration: Annotated[str, typer.Option(
        "--duration", help="A job's duration: total (its attempts' run times summed: jobs "
                           "that resume from checkpoints) or last (its last attempt's).")
    ] = "total",
    since: Annotated[str | None, typer.Option(
        "--since", help="Only jobs submitted at or after this ISO date/time (UTC unless it "
                        "names an offset), e.g. 2026-11-23.")] = None,
    until: Annotated[str | None, typer.Option(
        "--until", help="Only jobs submitted before this ISO date/time.")] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print what the service measured "
                                                          "as JSON.")] = False,
) -> None:
    """Write the service's finished jobs (submission, GPUs, queue, measured run time,
    preemptions) as a trace that `dlsched simulate --trace FILE` replays."""
    from dlsched.extras import MissingExtra, require

    try:
        require("runtime", "dlsched history export", ("sqlalchemy",))
        from dlsched.whatif.export import (
            history_rows,
            left_out,
            measured,
            parse_when,
            write_history,
        )

        window = parse_when(since, "--since"), parse_when(until, "--until")
        if window[0] is not None and window[1] is not None and window[0] >= window[1]:
            raise DlschedError(f"--since {since} is not before --until {until}: the window "
                               "holds no submission")

        url = db or f"sqlite:///{data_dir.expanduser() / 'dlsched.db'}"
        if url.startswith("sqlite:///") and not Path(url[len("sqlite:///"):]).exists():
            raise DlschedError(f"no database at {url[len('sqlite:///'):]} (--data-dir or --db)")
        statuses = tuple(status or ("finished",))
        rows = history_rows(url, statuses, duration, queue, *window)
        with writing(out):
            write_history(rows, out)
        missing = left_out(url, rows, statuses, queue, *window)
    except DlschedError as exc:
        console.print(f"[red]error:[/] {escape(str(exc))}")
        raise typer.Exit(2 if isinstance(exc, MissingExtra) else 1) from None
    stats = measured(rows)
    figures: dict[str, object] = {**stats, "left_out": missing}
    if json_out:
        print(json.dumps(figures, indent=2, sort_keys=True))
    # in the units of the replay's own line (wording.duration_text), to compare the two
    console.print(escape(f"{count_of(stats['jobs'], 'job')} -> {out}; the service measured "
                         f"mean JCT {duration_text(stats['jct_mean'])}, mean queueing delay "
                         f"{duration_text(stats['queueing_delay_mean'])}, makespan "
                         f"{duration_text(stats['makespan'])}, "
                         f"{count_of(stats['preemptions'], 'preemption')}"))
    if missing:
        console.print(escape(left_out_note(missing)))


def left_out_note(counts: dict[str, int]) -> str:
    """``left out: 1 failed, 2 not ended`` and how to add the ended ones."""
    parts = ", ".join(f"{n} {why}" for why, n in sorted(counts.items()))
    hint = " (--status failed/cancelled exports those)" if any(
        why in ("failed", "cancelled") for why in counts) else ""
    return f"left out: {parts}{hint}"


@history_app.command("cluster")
def cluster(
    out: Annotated[Path, typer.Option("--out", help="The cluster YAML to write.")],
    url: UrlOpt = DEFAULT_URL, token: ClientTokenOpt = None, token_file: TokenFileOpt = None,
) -> None:
    """Write the running service's cluster (nodes, GPUs, CPUs, memory, topology) as a cluster
    YAML for `dlsched simulate --cluster FILE`."""
    from dlsched.extras import MissingExtra

    try:
        from dlsched.whatif.cluster import cluster_yaml

        with connect("history cluster", url, token, token_file=token_file) as client:
            view = client.cluster()
        with writing(out):
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_text(cluster_yaml(view))
    except (DlschedError, OSError) as exc:
        console.print(f"[red]error:[/] {escape(str(exc))}")
        raise typer.Exit(2 if isinstance(exc, MissingExtra) else 1) from None
    console.print(escape(f"{view.name}: {count_of(len(view.nodes), 'node')}, "
                         f"{count_of(view.gpus_total, 'GPU')} -> {out}"))


@contextmanager
def writing(path: Path) -> Iterator[None]:
    """An output file that cannot be written is one line naming it (it was a traceback)."""
    try:
        yield
    except OSError as exc:
        raise DlschedError(f"{path}: cannot write: {exc.strerror or exc}") from None


def register(app: typer.Typer) -> None:
    app.add_typer(history_app, name="history")
