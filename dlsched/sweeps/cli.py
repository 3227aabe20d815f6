"""``dlsched sweep``: the command. Importing this module loads nothing heavy (pandas, the
simulator and Ray are imported when the command runs)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape

from dlsched.errors import DlschedError, policy_file_bug
from dlsched.wording import count_of, duration_text

console = Console(stderr=True, soft_wrap=True, emoji=False)
SWEEP_KEYS = ("traces", "clusters", "policies", "seeds", "options", "vary")


def sweep_command(
    trace: Annotated[list[str] | None, typer.Option(
        "--trace", metavar="<str>", help="A trace (bundled name, file, or synthetic:NAME, a "
        "synthetic trace resampled from NAME whose jobs differ by seed); repeatable.")] = None,
    cluster: Annotated[list[str] | None, typer.Option(
        "--cluster", metavar="<str>",
        help="A built-in cluster or cluster YAML; repeatable.")] = None,
    policies: Annotated[str | None, typer.Option(
        "--policies", help="Comma-separated policies.")] = None,
    seeds: Annotated[str | None, typer.Option(
        "--seeds", help="Seeds: N, N-M or a comma list (e.g. 0-4).")] = None,
    set_: Annotated[list[str] | None, typer.Option(
        "--set", metavar="KEY=VALUE", help="Any option of `dlsched simulate` for every run, "
        "by its field name (limit=500, synthetic_jobs=300, round_seconds=60); repeatable.")
    ] = None,
    policy_opt: Annotated[list[str] | None, typer.Option(
        "--policy-opt", metavar="KEY=VALUE", help="A policy option for every run (key=value "
        "or policy:key=value); repeatable.")] = None,
    policy_file: Annotated[list[str] | None, typer.Option(
        "--policy-file", metavar="FILE", help="Python files (.py) or module names that define "
        "more policies with @register_policy (docs/scheduling.md); comma-separated or "
        "repeated.")] = None,
    vary: Annotated[list[str] | None, typer.Option(
        "--vary", metavar="KEY=V1,V2", help="One more axis: an option (field name) or a policy "
        "option (policy:key) and its values; repeatable.")] = None,
    out: Annotated[Path, typer.Option(
        "--out", help="Output folder: results.csv/.parquet, ci.csv, plots/, done/ (a run "
                      "found there is not redone), runs/.")] = Path("runs/sweep"),
    workers: Annotated[int | None, typer.Option(
        "--workers", min=1, help="Local processes (default: this machine's CPUs; 1: run "
                                 "serially in this process).")] = None,
    ray_address: Annotated[str | None, typer.Option(
        "--ray-address", help="Run on this Ray cluster (HOST:PORT or auto) instead.")] = None,
    plots: Annotated[bool, typer.Option("--plots/--no-plots", help="Write plots/*.png.")
                     ] = True,
    config: Annotated[Path | None, typer.Option(
        "--config", exists=True, dir_okay=False, help="A YAML sweep file with keys "
        f"{', '.join(SWEEP_KEYS)}; flags override it.")] = None,
) -> None:
    """Run policies × traces × clusters × seeds × options in parallel (local processes, or a
    Ray cluster); write one row per run to --out/results.csv, with 95% intervals over seeds."""
    kwargs: dict[str, Any] = {}
    try:
        kwargs = _arguments(config, trace, cluster, policies, seeds, set_, policy_opt, vary,
                            policy_file)
        _run(kwargs, out, workers, ray_address, plots)
    except DlschedError as exc:
        console.print(f"[red]error:[/] {escape(str(exc))}")
        raise typer.Exit(2) from None
    except Exception as exc:
        files = kwargs.get("options", {}).get("policy_files", ())
        bug = policy_file_bug(exc, [files] if isinstance(files, str) else list(files))
        if bug is None:
            raise
        console.print(f"[red]error:[/] {escape(str(bug))}")
        raise typer.Exit(2) from None


def _arguments(config: Path | None, trace: list[str] | None, cluster: list[str] | None,
               policies: str | None, seeds: str | None, set_: list[str] | None,
               policy_opt: list[str] | None, vary: list[str] | None,
               policy_file: list[str] | None = None) -> dict[str, Any]:
    from dlsched.run_config import normalized
    from dlsched.sweeps.grid import parse_assignments, parse_seeds

    given = _from_file(config) if config is not None else {}
    if trace:
        given["traces"] = tuple(trace)
    if cluster:
        given["clusters"] = tuple(cluster)
    if policies is not None:  # an empty value is an error (check), not the default grid
        given["policies"] = tuple(p.strip() for p in policies.split(",") if p.strip())
    if seeds is not None:
        given["seeds"] = parse_seeds(seeds)
    options = dict(given.get("options", {}))
    options.update(parse_assignments(set_ or [], "--set", many=False))
    if policy_opt:
        options["policy_options"] = [*options.get("policy_options", []), *policy_opt]
    if policy_file:  # beside any of the sweep file's options.policy_files
        options["policy_files"] = [*normalized("policy_files", options.get("policy_files", ())),
                                   *normalized("policy_files", policy_file)]
    given["options"] = options
    given["vary"] = {**given.get("vary", {}),
                     **parse_assignments(vary or [], "--vary", many=True)}
    return given


def _from_file(path: Path) -> dict[str, Any]:
    from dlsched.cluster.loader import unknown_key_message
    from dlsched.yamlinput import load_yaml_file

    data, src = load_yaml_file(path)
    data = data or {}
    if not isinstance(data, dict):
        raise src.error("", "a sweep file is a mapping with keys " + ", ".join(SWEEP_KEYS))
    for key, value in data.items():
        if key not in SWEEP_KEYS:
            raise src.error(str(key), unknown_key_message(key, dict.fromkeys(SWEEP_KEYS)))
        if key in ("options", "vary") and not isinstance(value, dict):
            raise src.error(key, "expected a mapping")
        if key in ("traces", "clusters", "policies", "seeds") and not isinstance(
                value, list | str | int):
            raise src.error(key, "expected a list")
    _check_values(data, src)
    if "seeds" in data and isinstance(data["seeds"], str | int):
        from dlsched.sweeps.grid import parse_seeds

        data["seeds"] = parse_seeds(str(data["seeds"]))
    for i, seed in enumerate(data.get("seeds", ())):
        if not isinstance(seed, int) or isinstance(seed, bool):
            raise src.error(f"seeds[{i}]", f"expected a whole number, got {seed!r}")
    data["vary"] = {k: v if isinstance(v, list) else [v] for k, v in data.get("vary", {}).items()}
    return data


def _check_values(data: dict[str, Any], src: Any) -> None:
    """The file's options and varied option values, each named at its line (they were named
    after the file was read: 'sweep option limit: expected an integer', no file nor line)."""
    from dlsched.run_config import RunConfig
    from dlsched.sweeps.grid import option_problem

    fields = RunConfig.__dataclass_fields__
    for key, value in data.get("options", {}).items():
        if (problem := option_problem(str(key))) is not None:
            raise src.error(f"options.{key}", problem)
        _checked_value(src, f"options.{key}", key, value)
    for key, values in data.get("vary", {}).items():
        for i, value in enumerate(values if isinstance(values, list) else [values]):
            if key in fields:
                _checked_value(src, f"vary.{key}[{i}]", key, value)


def _checked_value(src: Any, at: str, key: str, value: Any) -> None:
    from dlsched.errors import ConfigError
    from dlsched.run_config import RunConfig

    try:
        RunConfig().with_values({key: value})
    except ConfigError as exc:
        raise src.error(at, str(exc).removeprefix(f"{key}: ")) from None


def _run(kwargs: dict[str, Any], out: Path, workers: int | None, ray_address: str | None,
         plots: bool) -> None:
    from dlsched.sweeps.api import default_workers, sweep
    from dlsched.sweeps.grid import LABELS, SweepRun
    from dlsched.sweeps.table import point_name

    started, done = time.perf_counter(), [0]

    def report(run: SweepRun, row: dict[str, Any]) -> None:
        done[0] += 1
        # 'fifo 1', not 'fifo 1 600': a tiresias threshold does not apply to a fifo run
        labels = point_name(run.labels, [k for k in run.labels if k not in LABELS])
        jct = row.get("jct_mean")
        console.print(escape(f"[{done[0]}] {labels}: mean JCT {duration_text(jct)}"))

    def header(runs: int) -> None:  # once the inputs are checked: an error comes alone
        console.print(escape(f"sweep of {count_of(runs, 'run')} -> {out} "
                             f"{_where(workers or default_workers(), ray_address)}"))

    def warn(text: str) -> None:  # once each, whichever run or process gave it
        console.print(f"[yellow]warning:[/] {escape(text)}")

    try:
        table = sweep(**kwargs, out=out, workers=workers, ray_address=ray_address, plots=plots,
                      on_done=report, on_start=header, on_warning=warn)
    except KeyboardInterrupt:  # Ctrl-C: the finished runs are kept; say so, and how to resume
        console.print(escape(f"interrupted: {count_of(done[0], 'run')} finished now are kept in "
                             f"{out / 'done'}; the same command runs the rest"))
        raise typer.Exit(130) from None
    executed, unique = table.attrs["executed"], table["key"].nunique()
    # rows alike (a policy option's axis leaves another policy's run as it was) run once:
    # "4 runs (3 run now, 0 found done)" did not add up
    alike = "" if unique == len(table) else f", {unique} distinct"
    console.print(escape(f"{count_of(len(table), 'run')}{alike} ({executed} run now, "
                         f"{unique - executed} found done) in "
                         f"{time.perf_counter() - started:.1f} s -> {out / 'results.csv'}"))


def _where(workers: int, ray_address: str | None) -> str:
    if ray_address:
        return f"on Ray at {ray_address}"
    return "in this process" if workers <= 1 else f"on {workers} local processes"


def register(app: typer.Typer) -> None:
    app.command("sweep")(sweep_command)
