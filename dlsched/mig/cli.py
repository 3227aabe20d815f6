"""``dlsched mig``: run a MIG job file on a cluster of MIG GPUs and print the MIG report."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape

from dlsched.errors import DlschedError

console = Console(stderr=True, soft_wrap=True, emoji=False)  # messages as given
# Every GPU is an object the run scans: a million takes ~20 s a job list and 270 MB; a mistyped
# 100000000 took 4.5 GB and ran on without a word.
MAX_GPUS = 1_000_000


def mig(
        jobs: Annotated[Path, typer.Argument(
            help="CSV with job_id,submit_time,duration,mig_profile (duration may be inf).")],
        gpus: Annotated[int, typer.Option(min=1, max=MAX_GPUS,
                                          help="MIG GPUs in the cluster.")] = 8,
        placement: Annotated[str, typer.Option(
            help="first-fit or mig-aware (docs/mig.md).")] = "mig-aware",
        gpu_type: Annotated[str, typer.Option(
            help="a100 (40 GB), a100-80gb, h100.")] = "a100",
        as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
) -> None:
    """Place MIG jobs (first fit or MIG-aware, drains when a large profile fits nowhere) and
    report slices used, reconfigurations and drains (docs/mig.md)."""
    from dlsched.mig.placement import placer
    from dlsched.mig.profiles import profiles_of
    from dlsched.mig.run import read_mig_jobs, run_mig

    try:
        chosen = placer(placement, profiles_of(gpu_type))
        report = run_mig(read_mig_jobs(jobs, gpu_type), gpus, chosen)
    except (DlschedError, ValueError) as exc:
        console.print(f"[red]error:[/] {escape(str(exc))}")
        raise typer.Exit(2) from None
    summary = {**asdict(report), "large_placed": report.large_placed,
               "slice_utilization": report.slice_utilization}
    if as_json:
        print(json.dumps(summary, indent=2))
        return
    for key, value in summary.items():
        print(f"{key}: {_text(value)}")


def _text(value: object) -> str:
    """A report value as a reader wants it: ``1g.5gb 2, 7g.40gb 1`` and ``0.4783``, not
    Python's ``{'1g.5gb': 2, ...}`` and ``0.4782608695652174``."""
    if isinstance(value, dict):
        return ", ".join(f"{k} {_text(v)}" for k, v in value.items()) or "none"
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def register(app: typer.Typer) -> None:
    app.command("mig")(mig)
