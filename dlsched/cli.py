"""The command line: ``dlsched simulate | compare | traces | clusters | policies``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from dlsched import __version__
from dlsched.errors import DlschedError
from dlsched.experiment import (
    RunConfig,
    RunOutcome,
    check_options,
    load_trace,
    parse_policy_options,
    run_policy,
    write_comparison,
)

app = typer.Typer(help="dlsched: schedule deep-learning jobs on GPU clusters, or simulate it.",
                  no_args_is_help=True, add_completion=False)
console = Console(stderr=True, soft_wrap=True)  # never break a file:line:field message

TraceOpt = Annotated[str | None, typer.Option(
    "--trace", help="A bundled trace name (see `dlsched traces`), a trace file, or 'synthetic'.")]
ClusterOpt = Annotated[str | None, typer.Option(
    "--cluster", help="A built-in cluster (see `dlsched clusters`) or a cluster YAML file.")]
OutOpt = Annotated[Path | None, typer.Option(
    "--out", help="Output directory (simulate: summary.json, jobs.csv, timeline.csv, run.json, "
    "config.yaml; compare: one such folder per policy plus report.html).")]
SeedOpt = Annotated[int | None, typer.Option("--seed", help="Seed (synthetic traces).")]
FormatOpt = Annotated[str | None, typer.Option(
    "--format", help="Trace format when a path's columns do not tell (e.g. philly, pollux).")]
SkipOpt = Annotated[bool | None, typer.Option(
    "--skip-invalid/--strict-input",
    help="Skip malformed rows with a counted warning instead of stopping at the first.")]
LimitOpt = Annotated[int | None, typer.Option("--limit", help="Read at most N jobs.")]
PlacementOpt = Annotated[str | None, typer.Option(
    "--placement", help="consolidated | spread | best-fit | topology (default: the policy's).")]
PolicyOptOpt = Annotated[list[str] | None, typer.Option(
    "--policy-opt", help="Policy option key=value (or policy:key=value); repeatable.")]
OverheadOpt = Annotated[float | None, typer.Option(
    "--restart-overhead", help="Seconds of lost progress each time a preempted job resumes.")]
RoundOpt = Annotated[float | None, typer.Option(
    "--round-seconds", help="Also run a scheduling cycle every N seconds.")]
JobsFormatOpt = Annotated[str | None, typer.Option(
    "--jobs-format", help="csv (default) or parquet (needs dlsched\\[parquet]).")]
ConfigOpt = Annotated[Path | None, typer.Option(
    "--config", help="A YAML run file with the same keys as these options; flags override it.")]
SynthJobsOpt = Annotated[int | None, typer.Option(
    "--synthetic-jobs", help="Jobs in a synthetic trace (--trace synthetic).")]
SynthRateOpt = Annotated[float | None, typer.Option(
    "--synthetic-rate", help="Poisson arrival rate of a synthetic trace, jobs per hour.")]
SynthFromOpt = Annotated[str | None, typer.Option(
    "--synthetic-from", help="Trace whose jobs a synthetic trace resamples (whole job specs).")]
TenantsOpt = Annotated[Path | None, typer.Option(
    "--tenants", help="A tenant YAML file (flavors, cluster queues, cohorts, local queues; see "
    "docs/tenancy.md): every policy runs inside its quotas. Drops the Philly VC pool pins.")]


ThroughputOpt = Annotated[str | None, typer.Option(
    "--throughput", help="Throughput model instead of the trace format's: linear, pollux, gavel, "
    "goodput (Pollux's goodput model, re-rated as training progresses), goodput-sia (with Sia's "
    "per-GPU-type fits); see docs/throughput-models.md.")]


def _config(config_file: Path | None, **values: Any) -> RunConfig:
    if values.get("policy_options") is not None:
        values["policy_options"] = parse_policy_options(values["policy_options"])
    for key in ("out", "tenants"):
        if values.get(key) is not None:
            values[key] = str(values[key])
    if config_file is not None:
        return RunConfig.from_yaml(config_file, values)
    return RunConfig().with_values({k: v for k, v in values.items() if v is not None})


def _config_from_flags(flags: dict[str, Any], policies: str | None) -> RunConfig:
    """The RunConfig that a command's flags (its keyword arguments) describe."""
    config_file = flags.pop("config")
    flags["policy_options"] = flags.pop("policy_opt")
    return _config(config_file, policies=policies, **flags)


def _run_all(config: RunConfig, compare: bool) -> list[RunOutcome]:
    from dlsched.cluster.builtin import resolve_cluster

    check_options(config.policies, config.policy_options)
    cluster = resolve_cluster(config.cluster)
    trace = load_trace(config, cluster)
    if trace.skipped:
        console.print(f"[yellow]skipped {trace.skipped} invalid rows[/] (first: "
                      f"{trace.warnings[0]})")
    console.print(f"trace {trace.name}: {len(trace)} jobs; cluster {cluster.describe()}"
                  + (f"; tenants {config.tenants}" if config.tenants else ""))
    out = Path(config.out)
    outcomes = []
    for policy in config.policies:
        target = out / policy if compare else out
        outcomes.append(_run_one(config, policy, trace, cluster, target))
    return outcomes


def _run_one(config: RunConfig, policy: str, trace: Any, cluster: Any, out: Path) -> RunOutcome:
    columns = (TextColumn(f"{policy:>10}"), BarColumn(), MofNCompleteColumn(),
               TextColumn("jobs finished"), TimeElapsedColumn())
    with Progress(*columns, console=console, transient=True) as bar:
        task = bar.add_task(policy, total=len(trace))
        outcome = run_policy(config, policy, trace, cluster, out,
                             progress=lambda done, total: bar.update(task, completed=done))
    s = outcome.summary
    console.print(f"{policy}: {s.jobs_finished}/{s.jobs_submitted} finished, mean JCT "
                  f"{_hours(s.jct_mean)}, makespan {_hours(s.makespan)}, utilization "
                  f"{(s.utilization or 0) * 100:.1f}%, {s.wall_seconds:.2f} s -> {out}")
    stalled = outcome.result.stalled_at
    if stalled is not None:
        waiting = s.jobs_submitted - s.jobs_finished
        console.print(f"[yellow]warning:[/] {policy}: stopped at t={stalled:.0f} s: nothing ran "
                      f"and nothing could start ({waiting} jobs not finished; see "
                      f"pending_reason in jobs.csv)")
    return outcome


def _hours(seconds: float | None) -> str:
    return "n/a" if seconds is None else f"{seconds / 3600:.2f} h"


def _fail(exc: Exception) -> None:
    console.print(f"[red]error:[/] {exc}")
    raise typer.Exit(2)


@app.command()
def simulate(trace: TraceOpt = None, cluster: ClusterOpt = None,
             policy: Annotated[str | None, typer.Option("--policy", help="Policy name.")] = None,
             seed: SeedOpt = None, out: OutOpt = None, format: FormatOpt = None,
             skip_invalid: SkipOpt = None, limit: LimitOpt = None,
             placement: PlacementOpt = None, policy_opt: PolicyOptOpt = None,
             restart_overhead: OverheadOpt = None, round_seconds: RoundOpt = None,
             jobs_format: JobsFormatOpt = None, config: ConfigOpt = None,
             synthetic_jobs: SynthJobsOpt = None, synthetic_rate: SynthRateOpt = None,
             synthetic_from: SynthFromOpt = None, tenants: TenantsOpt = None,
             throughput: ThroughputOpt = None) -> None:
    """Simulate one policy on a trace and cluster; write summary.json and jobs.csv to --out."""
    options = dict(locals())
    try:
        run = _config_from_flags(options, options.pop("policy"))
        if len(run.policies) != 1:
            raise DlschedError("simulate runs one policy; use `dlsched compare` for several")
        _run_all(run, compare=False)
    except DlschedError as exc:
        _fail(exc)


@app.command()
def compare(trace: TraceOpt = None, cluster: ClusterOpt = None,
            policies: Annotated[str | None, typer.Option(
                "--policies", help="Comma-separated policy names, e.g. fifo,sjf,tiresias.")] = None,
            seed: SeedOpt = None, out: OutOpt = None, format: FormatOpt = None,
            skip_invalid: SkipOpt = None, limit: LimitOpt = None,
            placement: PlacementOpt = None, policy_opt: PolicyOptOpt = None,
            restart_overhead: OverheadOpt = None, round_seconds: RoundOpt = None,
            jobs_format: JobsFormatOpt = None, config: ConfigOpt = None,
            synthetic_jobs: SynthJobsOpt = None, synthetic_rate: SynthRateOpt = None,
            synthetic_from: SynthFromOpt = None, tenants: TenantsOpt = None,
            throughput: ThroughputOpt = None) -> None:
    """Run several policies on the same trace and cluster; write one folder per policy and
    --out/report.html comparing them."""
    options = dict(locals())
    try:
        run = _config_from_flags(options, options.pop("policies"))
        outcomes = _run_all(run, compare=True)
        out_dir = Path(run.out)
        title = f"dlsched: {', '.join(run.policies)} on {run.trace} / {run.cluster}"
        report = write_comparison(outcomes, out_dir, title)
        (out_dir / "summary.json").write_text(json.dumps(
            {o.summary.policy: o.summary.to_dict() for o in outcomes}, indent=2,
            sort_keys=True) + "\n")
        console.print(f"report: {report}")
    except DlschedError as exc:
        _fail(exc)


@app.command()
def traces() -> None:
    """List the traces bundled with dlsched and the trace formats it reads."""
    from dlsched.workload.bundled import BUNDLED_TRACES
    from dlsched.workload.readers.base import READERS, _load_all

    table = Table("name", "format", "description", title="Bundled traces")
    for name, bundled in BUNDLED_TRACES.items():
        table.add_row(name, bundled.format, bundled.description)
    table.add_row("synthetic", "-", "Poisson arrivals resampling a real trace (--synthetic-*)")
    Console().print(table)
    _load_all()
    Console().print("Formats for trace files: " + ", ".join(sorted(READERS)))


@app.command()
def clusters() -> None:
    """List the built-in clusters (any cluster YAML file works too)."""
    from dlsched.cluster.builtin import BUILTIN_CLUSTERS, resolve_cluster

    table = Table("name", "nodes", "GPUs", "GPU types", title="Built-in clusters")
    for name in BUILTIN_CLUSTERS:
        c = resolve_cluster(name)
        types = ", ".join(f"{n} {t}" for t, n in c.gpus_by_type().items())
        table.add_row(name, str(c.num_nodes), str(c.num_gpus), types)
    Console().print(table)


@app.command()
def policies() -> None:
    """List the scheduling policies and their options."""
    import inspect

    from dlsched.scheduling.registry import policies as registered

    table = Table("name", "summary", "options", title="Policies")
    for name, info in registered().items():
        params = inspect.signature(info.builder).parameters.values()
        opts = ", ".join(f"{p.name}={p.default!r}" for p in params)
        table.add_row(name, info.summary, opts)
    Console().print(table)


@app.command()
def version() -> None:
    """Print the dlsched version."""
    print(__version__)


if __name__ == "__main__":
    app()


# The runtime's verbs (serve, submit, jobs, cancel, logs, status); importing them loads no
# optional dependency, so `dlsched simulate` does not pay for FastAPI.
from dlsched.runtime.cli import register  # noqa: E402
from dlsched.tenancy.cli import register as register_tenants  # noqa: E402

register(app)
register_tenants(app)
