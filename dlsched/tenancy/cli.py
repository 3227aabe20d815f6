"""``dlsched tenants``: write a tenant file for a trace (``generate.py`` has the rule)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Annotated

import typer
import yaml
from rich.console import Console
from rich.markup import escape

from dlsched.errors import DlschedError
from dlsched.wording import count_of

tenants_app = typer.Typer(add_completion=False)
console = Console(stderr=True, emoji=False)


@tenants_app.command("tenants")
def tenants(
        trace: Annotated[str, typer.Argument(help="A bundled trace name or a trace file.")],
        cluster: Annotated[str, typer.Option(help="Built-in cluster name or YAML file.")],
        sizes: Annotated[Path | None, typer.Option(
            exists=True, dir_okay=False,
            help="CSV of queue sizes in GPUs (queue,size; or Helios' date-by-VC table: its "
                 "last row). Without it, quotas follow each queue's demand.")] = None,
        scale: Annotated[float, typer.Option(
            help="Multiply the sizes (8 for Philly's servers x 8 GPUs).")] = 1.0,
        strict: Annotated[bool, typer.Option(
            "--strict", help="No cohort: queues never borrow or lend.")] = False,
        trace_format: Annotated[str | None, typer.Option(
            "--format", help="Trace format, when it cannot be told from the columns.")] = None,
        sacct_queue: Annotated[str, typer.Option(
            "--sacct-queue", help="A Slurm sacct export's field that is each job's queue: "
            "partition, account, qos or user (docs/what-if.md).")] = "partition",
        sacct_resources: Annotated[bool, typer.Option(
            "--sacct-resources", help="A Slurm sacct export's jobs ask the CPUs and memory "
            "Slurm gave them, as in simulate: the file then has cpu and memory quotas "
            "(docs/what-if.md).")] = False,
        out: Annotated[Path | None, typer.Option(help="Write here (default: stdout).")] = None,
) -> None:
    """Write a tenant file for a trace: one cluster queue per queue (VC) of its jobs, quotas
    from the queues' sizes or demand (docs/tenancy.md)."""
    from dlsched.cluster.builtin import resolve_cluster
    from dlsched.tenancy.generate import read_sizes, tenants_for
    from dlsched.tenancy.loader import parse_tenants
    from dlsched.workload.bundled import resolve_traces
    from dlsched.workload.readers.base import ReaderOptions

    try:
        _check_scale(scale, sizes)
        target = resolve_cluster(cluster)
        jobs = resolve_traces(trace, trace_format, ReaderOptions(
            max_gpus=target.num_gpus, sacct_queue=sacct_queue, sacct_resources=sacct_resources))
        table = read_sizes(sizes, scale) if sizes is not None else None
        if table is not None and not {j.queue for j in jobs.jobs} & set(table):
            raise DlschedError(f"{sizes}: none of its queues ({', '.join(sorted(table)[:3])}, "
                               f"...) is a queue of trace {jobs.name}: every quota would be 0")
        doc = tenants_for(jobs, target, table, borrowing=not strict)
        rule = (f"sizes from {sizes}" + (f" x {scale:g}" if scale != 1 else "")
                if sizes is not None else "quotas in proportion to each queue's GPU-seconds")
        asked = ("" if sacct_queue == "partition" else f" --sacct-queue {sacct_queue}") + (
            " --sacct-resources" if sacct_resources else "")
        text = (f"# dlsched tenants {trace} --cluster {cluster}{asked}: one cluster queue per "
                f"queue of the trace;\n# {rule}; "
                f"{'strict quotas' if strict else 'one cohort, borrowing'} (docs/tenancy.md).\n"
                + yaml.safe_dump(doc, sort_keys=False))
        parse_tenants(text)  # what we write loads
    except DlschedError as exc:
        console.print(f"[red]error:[/] {escape(str(exc))}")
        raise typer.Exit(2) from None
    if out is None:
        print(text, end="")
    else:
        try:  # its folder made as every other --out is (README: --out runs/vcs.yaml)
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_text(text)
        except OSError as exc:
            console.print(f"[red]error:[/] {escape(f'--out {out}: cannot write: {exc.strerror}')}")
            raise typer.Exit(2) from None
        console.print(escape(f"{count_of(len(doc['cluster_queues']), 'cluster queue')} -> {out}"))


def _check_scale(scale: float, sizes: Path | None) -> None:
    """``--scale`` multiplies ``--sizes``' numbers: without them it was ignored without a word,
    and 0 or a negative scale gave quotas of 0 or a loader error at '<string>:13'."""
    from dlsched.errors import ConfigError

    if not (math.isfinite(scale) and scale > 0):
        raise ConfigError(f"--scale: must be a finite number > 0, got {scale:g}")
    if scale != 1 and sizes is None:
        raise ConfigError("--scale multiplies the sizes of --sizes FILE; without --sizes the "
                          "quotas follow the queues' demand and there is nothing to scale")


def register(app: typer.Typer) -> None:
    """Add ``tenants`` to the main ``dlsched`` app."""
    app.registered_commands.extend(tenants_app.registered_commands)
