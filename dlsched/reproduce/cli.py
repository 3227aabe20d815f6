"""``dlsched reproduce NAME --out DIR`` and ``dlsched reproduce --list`` (docs/reproduce.md)."""

from __future__ import annotations

import functools
import shlex
import sys
import textwrap
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.table import Column, Table

from dlsched.errors import ConfigError, DlschedError

if TYPE_CHECKING:
    from dlsched.reproduce.registry import Experiment
    from dlsched.reproduce.rows import ReproduceRow

reproduce_app = typer.Typer(add_completion=False)
console = Console(stderr=True, soft_wrap=True, emoji=False)


def _split(text: str | None) -> tuple[str, ...] | None:
    return None if text is None else tuple(p.strip() for p in text.split(",") if p.strip())


def _seeds(text: str | None) -> tuple[int, ...] | None:
    parts = _split(text)
    if parts is None:
        return None
    try:
        return tuple(int(p) for p in parts)
    except ValueError:
        raise ConfigError(f"--seeds expects comma-separated integers, got {text!r}") from None


def _pairs(pairs: list[str] | None) -> dict[str, str]:
    parsed = {}
    for pair in pairs or []:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"--opt expects key=value, got {pair!r}")
        parsed[key.strip()] = value.strip()
    return parsed


@reproduce_app.command("reproduce")
def reproduce(
        name: Annotated[str | None, typer.Argument(
            help="The experiment (see --list), e.g. pollux-osdi21.")] = None,
        out: Annotated[Path | None, typer.Option(
            "--out", help="Write reproduce.csv, reproduce.html and reproduce.svg here "
            "(default: runs/reproduce-NAME).")] = None,
        list_: Annotated[bool, typer.Option("--list", help="List the experiments.")] = False,
        cases: Annotated[str | None, typer.Option(
            "--cases", help="Comma-separated cases to run (e.g. workload-1,workload-6), or all.")]
        = None,
        variants: Annotated[str | None, typer.Option(
            "--variants", help="Comma-separated variants (e.g. job loads 0.5,1.0), or all.")]
        = None,
        seeds: Annotated[str | None, typer.Option(
            "--seeds", help="Comma-separated seeds to average over (randomized experiments).")]
        = None,
        opt: Annotated[list[str] | None, typer.Option(
            "--opt", metavar="KEY=VALUE",
            help="Experiment option key=value (see --list); repeatable.")] = None,
        workers: Annotated[int | None, typer.Option(
            "--workers", min=1, help="Simulations run at the same time, each on its own "
            "process (default: one per CPU; 1: one after another in this process). The rows "
            "are the same either way.")] = None,
) -> None:
    """Regenerate a paper's headline comparison: dlsched's value beside the published or
    artifact number for every cell (docs/reproduce.md)."""
    from dlsched.reproduce.registry import registered_experiments

    try:
        if list_:
            _print_list(registered_experiments())
            return
        if name is None:
            raise ConfigError("name an experiment (dlsched reproduce --list shows them)")
        _run(name, out or Path(f"runs/reproduce-{name}"), cases, variants, seeds, opt,
             workers)
    except DlschedError as exc:
        console.print(f"[red]error:[/] {exc}")
        raise typer.Exit(2) from None


def _run(name: str, out: Path, cases: str | None, variants: str | None, seeds: str | None,
         opt: list[str] | None, workers: int | None = None) -> None:
    from dlsched.compare_pool import available_cpus
    from dlsched.experiment import check_out
    from dlsched.reproduce.output import write_outputs
    from dlsched.reproduce.registry import ExperimentOptions, get_experiment, registered_experiments
    from dlsched.reproduce.runner import run_experiment

    experiment = get_experiment(name)
    chosen_seeds = _seeds(seeds)
    experiment.check_seeds(chosen_seeds, [known.name for known in
                                          registered_experiments().values() if known.seeded])
    options = ExperimentOptions(experiment.select("cases", _split(cases)),
                                experiment.select("variants", _split(variants)), chosen_seeds,
                                _pairs(opt), out, log=lambda m: console.print(m))
    experiment.check_options(options.options)
    check_out(out)  # before the runs: `--out FILE` was a traceback once they had run
    started = time.perf_counter()
    rows = run_experiment(experiment, options, workers or available_cpus())
    command = "dlsched " + " ".join(shlex.quote(a) for a in sys.argv[1:])
    path = write_outputs(rows, out, f"dlsched reproduce {name}: {experiment.summary}", command)
    _print_rows(name, rows)
    console.print(f"{len(rows)} cells in {time.perf_counter() - started:.1f} s -> {path}, "
                  f"{path.with_suffix('.html')}")


def _print_list(known: Mapping[str, Experiment]) -> None:
    """One block per experiment, its lines wrapped at spaces to the terminal: a five-column
    table at 80 columns cut names, case and variant keys and option defaults to "comma-sepa…",
    "gpushare10…", "(default 50,80,90,1…" (what one types next)."""
    out = Console(emoji=False, highlight=False)
    say = functools.partial(out.print, markup=False, soft_wrap=True)
    say(_wrapped("Experiments (dlsched reproduce NAME [--cases A,B] [--variants X,Y] "
                 "[--opt key=value]):", out.width, ""))
    for experiment in known.values():
        lines = [experiment.summary,
                 f"cases: {_listed(experiment.cases, experiment.default_cases)}",
                 f"variants: {_listed(experiment.variants, experiment.default_variants)}"]
        if experiment.seeded:
            lines.append("--seeds: yes (comma-separated; averaged over)")
        lines += [f"--opt {key}: {text}" for key, text in experiment.options.items()]
        say(f"\n{experiment.name}")
        for line in lines:
            say(_wrapped(line, out.width, "  "))


def _wrapped(text: str, width: int, indent: str) -> str:
    return textwrap.fill(text, width=max(width, 40), initial_indent=indent,
                         subsequent_indent=indent + "  ", break_long_words=False,
                         break_on_hyphens=False)


def _listed(known: tuple[str, ...], default: tuple[str, ...] | None) -> str:
    if not known:
        return "-"
    text = ", ".join(known)
    return text if default is None or default == known else f"{text} (default {', '.join(default)})"


def _print_rows(name: str, rows: Sequence[ReproduceRow]) -> None:
    """The cells as a table whose numbers are never cut: at 80 columns llama3-405b's read
    "0.92…", "229,…", "+0.…"; names fold onto more lines instead."""
    cells = [(row.case, row.policy, row.metric, _fmt(row.dlsched), _fmt(row.reference),
              "" if row.rel_diff is None else f"{row.rel_diff * 100:+.1f}%") for row in rows]

    def number(title: str, at: int) -> Column:
        width = max([len(title), *(len(cell[at]) for cell in cells)])
        return Column(title, no_wrap=True, min_width=width, justify="right")

    table = Table(Column("case", overflow="fold"), Column("policy", overflow="fold"),
                  Column("metric", overflow="fold"), number("dlsched", 3),
                  number("reference", 4), number("diff", 5), title=name)
    for cell in cells:
        table.add_row(*cell)
    Console(emoji=False).print(table)


def _fmt(value: float | None) -> str:
    return "" if value is None else f"{value:,.6g}"


def register(app: typer.Typer) -> None:
    """Add ``reproduce`` to the main ``dlsched`` app."""
    app.registered_commands.extend(reproduce_app.registered_commands)
