"""The command line: ``dlsched simulate | compare | traces | clusters | policies``."""

from __future__ import annotations

import re
import sys
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Column, Table

from dlsched import __version__, quick_exit
from dlsched.cli_help import HelpGroup
from dlsched.cli_options import config_from, run_command, workers_parameter
from dlsched.data_location import DataWarning
from dlsched.errors import ClusterWarning, DlschedError, policy_file_bug
from dlsched.extras import extra_of, message
from dlsched.gcpause import gc_paused
from dlsched.policies.elastic.mip_budget import SolverWallClockWarning
from dlsched.run_config import RunConfig
from dlsched.scheduling.resilience import CrawlWarning
from dlsched.wording import count_of, duration_text

if TYPE_CHECKING:
    from dlsched.cluster.cluster import Cluster
    from dlsched.experiment import RunOutcome
    from dlsched.report.metrics import Summary
    from dlsched.workload.trace import Trace

class _App(typer.Typer):
    """The ``dlsched`` app: a module of a missing optional extra ends in one line naming the
    extra to install and exit code 2, never a traceback (commands check their extras first;
    this is the last line of defence)."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        quick_exit.enable()  # the console script: a finished run may skip the teardown
        try:
            with warnings.catch_warnings():
                warnings.showwarning = _one_line_warning
                return super().__call__(*args, **kwargs)
        except SystemExit as exc:
            quick_exit.leave(exc.code)
            raise
        except ModuleNotFoundError as exc:
            extra = extra_of(exc.name)
            if extra is None:
                raise
            console.print(f"[red]error:[/] {escape(message(extra, 'this command', exc.name))}")
            sys.exit(2)


def _one_line_warning(message: Warning | str, category: type[Warning], filename: str,
                      lineno: int, file: Any = None, line: str | None = None) -> None:
    """A ``DataWarning`` (data missing, a bundled fallback used), a
    ``SolverWallClockWarning`` (a MILP cut short by wall clock), a ``ClusterWarning`` (a
    cluster file read as the model allows) or a ``CrawlWarning`` (failures slow a job past
    100x) as one ``warning:`` line like
    the CLI's own, not Python's "FILE:LINE: DataWarning: ..." and the source line below it."""
    if issubclass(category, (DataWarning, SolverWallClockWarning, ClusterWarning,
                             CrawlWarning)):
        console.print(f"[yellow]warning:[/] {escape(str(message))}")
        return
    _python_showwarning(message, category, filename, lineno, file, line)


_python_showwarning = warnings.showwarning
app = _App(help="dlsched: schedule deep-learning jobs on GPU clusters, or simulate it.",
           no_args_is_help=True, cls=HelpGroup)
# Messages print as given: never wrapped, and ':x:' in a path or option is not an emoji.
console = Console(stderr=True, soft_wrap=True, emoji=False)

def _checked_inputs(config: RunConfig) -> tuple[Cluster, Trace]:
    """The run's cluster and trace, read and checked (with their warnings printed)."""
    from dlsched.cluster.builtin import resolve_cluster
    from dlsched.cluster.warnings import unknown_gpu_types
    from dlsched.experiment import check_run, input_warnings, load_trace

    cluster = resolve_cluster(config.cluster)
    for warning in unknown_gpu_types(cluster, config.cluster):
        console.print(f"[yellow]warning:[/] {escape(warning)}")
    trace = load_trace(config, cluster)
    for warning in input_warnings(config, trace, cluster):
        console.print(f"[yellow]warning:[/] {escape(warning)}")
    check_run(config)
    return cluster, trace


def _run_all(config: RunConfig, compare: bool, workers: int = 1) -> list[RunOutcome]:
    from dlsched.experiment import out_checked

    with out_checked(Path(config.out)):  # nothing ran on a bad input: no empty folder left
        cluster, trace = _checked_inputs(config)
    if trace.skipped:
        console.print(f"[yellow]skipped {count_of(trace.skipped, 'invalid row')}[/] (first: "
                      f"{escape(str(trace.warnings[0]))})")
    for note in trace.warnings[trace.skipped:]:  # rows the reader left out, by reason
        console.print(f"[yellow]note:[/] {escape(note)}")
    console.print(escape(f"trace {trace.name}: {count_of(len(trace), 'job')}; cluster "
                         f"{cluster.describe()}"
                         + (f"; tenants {config.tenants}" if config.tenants else "")))
    out = Path(config.out)

    def out_of(policy: str) -> Path:
        return out / policy if compare else out

    if workers > 1 and len(config.policies) > 1:
        return _run_parallel(config, trace, cluster, out_of, workers)
    return [_run_one(config, policy, trace, cluster, out_of(policy))
            for policy in config.policies]


def _bar() -> Progress:
    columns = (TextColumn("{task.description:>10}"), BarColumn(), MofNCompleteColumn(),
               TextColumn("jobs finished, {task.fields[where]}"), TimeElapsedColumn())
    # Only on a terminal: piped or redirected, a transient bar leaves blank lines behind.
    return Progress(*columns, console=console, transient=True, disable=not console.is_terminal)


def _run_one(config: RunConfig, policy: str, trace: Any, cluster: Any, out: Path) -> RunOutcome:
    from dlsched.experiment import run_policy

    with _bar() as bar:
        task = bar.add_task(policy, total=len(trace), where="starting")
        outcome = run_policy(config, policy, trace, cluster, out, progress=lambda p: bar.update(
            task, completed=p.finished, where=escape(p.describe())),
            simulated=lambda: _close(bar))
    _print_outcome(policy, outcome, out)
    return outcome


def _close(bar: Progress) -> None:
    """Take the bar off the screen once the simulation ends, and wait for its refresh thread
    (rich's ``stop`` does not join it): the reports may then be written on two processes
    (``report/aside.py`` forks only from a process with no other thread)."""
    refresh = getattr(bar.live, "_refresh_thread", None)
    bar.stop()
    if refresh is not None:
        refresh.join(timeout=1.0)


def _run_parallel(config: RunConfig, trace: Any, cluster: Any,
                  out_of: Callable[[str], Path], workers: int) -> list[RunOutcome]:
    """The policies on ``workers`` processes (compare_pool.py), a bar each; each run's lines
    (and the warnings it gave, as the serial loop prints them: once per command for one text)
    are printed in the order of the policies, as soon as it and those before it are done."""
    from dlsched.compare_pool import PolicyRuns

    policies = config.policies
    runs = PolicyRuns(config, policies, trace, cluster, out_of, workers)  # before the bar
    try:
        with _bar() as bar:
            tasks = {policy: bar.add_task(policy, total=len(trace), where="waiting for a "
                                          "worker") for policy in policies}

            def on_progress(policy: str, p: Any) -> None:
                bar.update(tasks[policy], completed=p.finished, where=escape(p.describe()))

            def on_done(policy: str, outcome: RunOutcome) -> None:
                bar.update(tasks[policy], completed=outcome.summary.jobs_finished,
                           where="done")

            def in_order(policy: str, outcome: RunOutcome) -> None:
                _print_outcome(policy, outcome, out_of(policy))

            return runs.collect(on_progress, on_done, in_order)
    finally:
        runs.close()


def _slices_used(outcome: RunOutcome) -> str:
    """A MIG run's slice utilization beside the GPU utilization, which counts a GPU in MIG mode
    as wholly busy (one 1g instance on a single A100 read "utilization 100.0%")."""
    used = (outcome.result.mig or {}).get("slice_utilization")
    return f" (MIG slices {used * 100:.1f}%)" if isinstance(used, int | float) else ""


def _failures_seen(s: Summary) -> str:
    """A run under ``--failures``: its node failures, the jobs they stopped and the ETTR
    (docs/llm.md), which the line left to summary.json."""
    if s.ettr is None:
        return ""
    return (f", {count_of(s.node_failures, 'node failure')} stopping "
            f"{count_of(s.job_interruptions, 'job')}, ETTR {s.ettr * 100:.1f}%")


def _print_outcome(policy: str, outcome: RunOutcome, out: Path) -> None:
    s = outcome.summary
    console.print(escape(f"{policy}: {s.jobs_finished}/{s.jobs_submitted} finished, mean JCT "
                         f"{duration_text(s.jct_mean)}, makespan {duration_text(s.makespan)}, "
                         f"mean total wait {duration_text(s.wait_total_mean)}, "
                         f"utilization {(s.utilization or 0) * 100:.1f}%"
                         f"{_slices_used(outcome)}{_failures_seen(s)}, "
                         f"simulated in {_wall_text(s.wall_seconds)} -> {out}"))
    stalled = outcome.result.stalled_at
    if stalled is not None:
        waiting = s.jobs_submitted - s.jobs_finished
        console.print("[yellow]warning:[/] " + escape(
            f"{policy}: stopped at t={stalled:.0f} s: nothing ran and nothing could start "
            f"({count_of(waiting, 'job')} not finished; see pending_reason in jobs.csv)"))
    if outcome.left_unfinished:
        console.print("[yellow]warning:[/] " + escape(left_unfinished_text(policy, outcome)))
    wall_stops = dict(outcome.result.solver).get("mip_wall_stops", 0)
    if wall_stops:
        console.print("[yellow]warning:[/] " + escape(
            f"{policy}: {count_of(wall_stops, 'MILP solve')} stopped on the wall-clock safety "
            "net, not the deterministic node budget: this result may depend on the machine's "
            "load (solver in summary.json)"))
    if outcome.never_admitted:
        named = ", ".join(f"{job} ({cq})" for job, cq, _ in outcome.never_admitted[:10])
        more = len(outcome.never_admitted) - 10
        console.print("[yellow]warning:[/] " + escape(
            f"{policy}: {count_of(len(outcome.never_admitted), 'job')} can never be admitted "
            f"({_asks_beyond_queue(len(outcome.never_admitted))}): {named}"
            f"{f' and {more} more' if more > 0 else ''}; see never_admitted.csv"))


def _wall_text(seconds: float) -> str:
    """The run's wall-clock time, labelled apart from the schedule's durations ("0.16 s ->
    DIR" read as one more of them): hundredths below a minute, where a run is fast."""
    return f"{seconds:.2f} s" if seconds < 59.995 else duration_text(seconds)


def _asks_beyond_queue(jobs: int) -> str:
    """Why jobs can never be admitted, in the number of the count ('1 job ... (they ask' read
    wrong)."""
    return ("it asks more than its queue may ever use" if jobs == 1
            else "they ask more than their queue may ever use")


def left_unfinished_text(policy: str, outcome: RunOutcome) -> str:
    """The warning for training jobs left unfinished when the run ran out of events."""
    left = outcome.left_unfinished
    named = ", ".join(left[:5]) + (f" and {len(left) - 5} more" if len(left) > 5 else "")
    return (f"{policy}: {count_of(len(left), 'training job')} never finished: the run ran out "
            f"of events with {'it' if len(left) == 1 else 'them'} still running or waiting "
            f"({named}); a job that makes no progress never ends (see status and "
            f"pending_reason in jobs.csv)")


def fail(exc: Exception) -> None:
    """One line, ``error: ...`` (the message escaped: ``dlsched[parquet]`` is not markup),
    exit code 2."""
    console.print(f"[red]error:[/] {escape(str(exc))}")
    raise typer.Exit(2)


def _simulate(config_file: Path | None, given: dict[str, Any]) -> None:
    """Simulate one policy on a trace and cluster; write summary.json and jobs.csv to --out."""
    run = None
    try:
        run = config_from(config_file, given, "--policy")
        if len(run.policies) != 1:
            raise DlschedError("simulate runs one policy; use `dlsched compare` for several")
        if run.services is not None:
            from dlsched.serving.cli import simulate_services

            simulate_services(run, trace_given=given.get("trace") is not None or _in_file(
                config_file, "trace"), cluster_given=given.get("cluster") is not None
                or _in_file(config_file, "cluster"))
            return
        with gc_paused():  # to the end: no collection between the run's and the exit
            _run_all(run, compare=False)
            quick_exit.arm()
    except DlschedError as exc:
        fail(exc)
    except Exception as exc:
        bug = policy_file_bug(exc, run.policy_files if run else ())
        if bug is None:
            raise
        fail(bug)


def _in_file(config_file: Path | None, key: str) -> bool:
    if config_file is None:
        return False
    from dlsched.yamlinput import load_yaml_file

    data, _ = load_yaml_file(config_file)
    return isinstance(data, dict) and key in data


def _compare(config_file: Path | None, given: dict[str, Any]) -> None:
    """Run several policies on the same trace and cluster; write one folder per policy and
    --out/report.html comparing them."""
    run = None
    try:
        from dlsched.compare_pool import default_workers
        from dlsched.experiment import write_comparison

        workers = given.pop("workers", None)
        if workers is not None and workers < 1:  # checked here: a typer range widens --help
            raise DlschedError(f"--workers: at least 1, got {workers}")
        run = config_from(config_file, given, "--policies")
        if run.services is not None:
            from dlsched.serving.cli import compare_services

            compare_services(run, trace_given=given.get("trace") is not None or _in_file(
                config_file, "trace"), cluster_given=given.get("cluster") is not None
                or _in_file(config_file, "cluster"))
            quick_exit.arm()
            return
        outcomes = _run_all(run, compare=True, workers=workers or default_workers(
            len(run.policies)))
        out_dir = Path(run.out)
        title = f"dlsched: {', '.join(run.policies)} on {run.trace} / {run.cluster}"
        report = write_comparison(outcomes, out_dir, title, run)
        console.print(f"report: {escape(str(report))}")
        quick_exit.arm()
    except DlschedError as exc:
        fail(exc)
    except Exception as exc:
        bug = policy_file_bug(exc, run.policy_files if run else ())
        if bug is None:
            raise
        fail(bug)


simulate = app.command("simulate")(run_command(_simulate, "--policy", "Policy name (see "
                                               "`dlsched policies`)."))
compare = app.command("compare")(run_command(_compare, "--policies",
                                             extra=[workers_parameter()]))


@app.command()
def traces() -> None:
    """List the traces bundled with dlsched and the trace formats it reads."""
    from dlsched.workload.bundled import BUNDLED_TRACES
    from dlsched.workload.readers.base import READERS, _load_all

    table = Table("name", "format", "description", title="Bundled traces")
    for name, bundled in BUNDLED_TRACES.items():
        table.add_row(name, bundled.format, bundled.description)
    table.add_row("synthetic", "-", "Poisson arrivals resampling a real trace (--synthetic-*)")
    Console(emoji=False).print(table)
    _load_all()
    Console(emoji=False).print("Formats for trace files: " + ", ".join(sorted(READERS)))


@app.command()
def clusters() -> None:
    """List the built-in clusters (any cluster YAML file works too)."""
    from dlsched.cluster.builtin import BUILTIN_CLUSTERS, resolve_cluster

    table = Table("name", "nodes", "GPUs", "GPU types", title="Built-in clusters")
    for name in BUILTIN_CLUSTERS:
        c = resolve_cluster(name)
        types = ", ".join(f"{n} {t}" for t, n in c.gpus_by_type().items())
        table.add_row(name, str(c.num_nodes), str(c.num_gpus), types)
    Console(emoji=False).print(table)


@app.command()
def policies(policy_file: Annotated[list[str] | None, typer.Option(
        "--policy-file", metavar="FILE", help="Also Python files (.py) or modules defining "
        "policies (@register_policy); comma-separated or repeated.")] = None) -> None:
    """List the scheduling policies and their options."""
    import inspect

    from dlsched.run_config import normalized
    from dlsched.scheduling.registry import load_policy_files
    from dlsched.scheduling.registry import policies as registered

    load_policy_files(normalized("policy_files", policy_file or []))

    # fold, not "same_queue_preemption=Fa…": an option name too long for the column
    table = Table("name", "summary", Column("options", overflow="fold"), title="Policies")
    for name, info in registered().items():
        params = inspect.signature(info.builder).parameters.values()
        opts = ", ".join(f"{p.name}={p.default!r}" for p in params)
        table.add_row(name, escape(policy_summary(inspect.getdoc(info.builder) or "")),
                      escape(opts))
    Console(emoji=False).print(table)


_RST_ROLE = re.compile(r":[a-z]+:`([^`]*)`")


def policy_summary(doc: str) -> str:
    """A docstring's first paragraph as plain text: whole sentences (a summary wrapped onto a
    second line is not cut there) without reStructuredText markup (````x````, ``:ref:`x```)."""
    paragraph = " ".join(doc.split("\n\n")[0].split())
    return _RST_ROLE.sub(r"\1", paragraph).replace("``", "")


@app.command()
def version() -> None:
    """Print the dlsched version."""
    print(__version__)


def _print_version(asked: bool) -> None:
    if asked:
        print(__version__)
        raise typer.Exit()


@app.callback()
def _root(show_version: Annotated[bool, typer.Option(
        "--version", is_eager=True, callback=_print_version,
        help="Print the dlsched version and exit (as `dlsched version`).")] = False) -> None:
    """dlsched: schedule deep-learning jobs on GPU clusters, or simulate it."""


# The runtime's verbs (serve, submit, jobs, cancel, logs, status); importing them loads no
# optional dependency, so `dlsched simulate` does not pay for FastAPI.
from dlsched.perf.llm.cli import register as register_plan  # noqa: E402
from dlsched.runtime.cli import register  # noqa: E402
from dlsched.serving.cli import register as register_replicas  # noqa: E402
from dlsched.tenancy.cli import register as register_tenants  # noqa: E402

register(app)
register_tenants(app)
register_plan(app)
register_replicas(app)

from dlsched.reproduce.cli import register as register_reproduce  # noqa: E402

register_reproduce(app)

from dlsched.sweeps.cli import register as register_sweep  # noqa: E402

register_sweep(app)

from dlsched.whatif.cli import register as register_history  # noqa: E402

register_history(app)

from dlsched.mig.cli import register as register_mig  # noqa: E402

register_mig(app)

if __name__ == "__main__":
    app()
