"""Experiments by name: ``@register_experiment("pollux-osdi21", ...)`` on a function that
measures dlsched's side of a paper's headline comparison (docs/reproduce.md).

An experiment is a function ``run(options: ExperimentOptions) -> Iterable[Measured]``; the
framework joins each measured value with its reference number (``published.csv``) and writes
``reproduce.csv``, ``reproduce.html`` and ``reproduce.svg``.
"""

from __future__ import annotations

import difflib
import importlib
import math
import pkgutil
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from dlsched.errors import ConfigError
from dlsched.reproduce.rows import Measured

if TYPE_CHECKING:
    from dlsched.reproduce.prefetch import SettingRuns


def quiet(message: str) -> None:
    """The default ``log``: prints nothing."""
    del message


@dataclass(frozen=True)
class ExperimentOptions:
    """What the command line passes through to an experiment. ``cases``/``variants`` are the
    selected ones (already checked against the experiment's lists); ``seeds`` the seeds to
    average over (``None``: the experiment's default); ``options`` the ``--opt key=value``
    pairs; ``out`` a folder the experiment may write its runs into; ``log`` prints progress."""

    cases: tuple[str, ...]
    variants: tuple[str, ...]
    seeds: tuple[int, ...] | None = None
    options: Mapping[str, str] = field(default_factory=dict)
    out: Path | None = None
    log: Callable[[str], None] = quiet
    # How ``run_setting`` is answered when the runs go to a pool (prefetch.py); None: run.
    runs: SettingRuns | None = None


Runner = Callable[[ExperimentOptions], Iterable[Measured]]


def chosen_policies(text: str | None, known: tuple[str, ...]) -> tuple[str, ...]:
    """The policies of ``--opt policies=a,b`` (all of ``known`` when absent); a ConfigError
    names the first unknown one and lists the known."""
    if text is None:
        return known
    chosen = tuple(p.strip() for p in text.split(",") if p.strip())
    unknown = [p for p in chosen if p not in known]
    if unknown or not chosen:
        raise ConfigError(f"--opt policies: {unknown[0] if unknown else text!r} is not one of "
                          f"{', '.join(known)}")
    return chosen


def whole_option(options: Mapping[str, str], key: str, default: int | None,
                 minimum: int = 1) -> int | None:
    """``--opt key=N`` as a whole number >= ``minimum`` (``default`` when absent); anything
    else is a ConfigError naming the option, not a traceback."""
    text = options.get(key)
    if text is None:
        return default
    try:
        value = int(text)
    except ValueError:
        value = minimum - 1
    if value < minimum:
        raise ConfigError(f"--opt {key}: {text!r} is not a whole number >= {minimum}")
    return value


def number_option(options: Mapping[str, str], key: str, default: float,
                  minimum: float = 0.0, above: bool = False) -> float:
    """``--opt key=X`` as a finite number >= ``minimum`` (> with ``above``)."""
    text = options.get(key)
    if text is None:
        return default
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and (value > minimum if above else value >= minimum)):
        bound = f"> {minimum:g}" if above else f">= {minimum:g}"
        raise ConfigError(f"--opt {key}: {text!r} is not a number {bound}")
    return value


def whole_list_option(options: Mapping[str, str], key: str,
                      default: tuple[int, ...]) -> tuple[int, ...]:
    """``--opt key=1,2,3``: comma-separated whole numbers >= 0."""
    text = options.get(key)
    if text is None:
        return default
    items = [item.strip() for item in text.split(",")]
    if not items or not all(item.isdigit() for item in items):
        raise ConfigError(f"--opt {key}: {text!r} is not comma-separated whole numbers")
    return tuple(int(item) for item in items)


@dataclass(frozen=True)
class Experiment:
    """A registered experiment: ``cases`` (e.g. workloads) and ``variants`` (e.g. job loads)
    it knows, those it runs by default, and ``options`` it accepts (name -> help)."""

    name: str
    summary: str
    run: Runner
    cases: tuple[str, ...] = ()
    default_cases: tuple[str, ...] | None = None
    variants: tuple[str, ...] = ()
    default_variants: tuple[str, ...] | None = None
    options: Mapping[str, str] = field(default_factory=dict)
    pooled: bool = False  # register_experiment's
    seeded: bool = False  # it reads ``ExperimentOptions.seeds`` (register_experiment's)

    def select(self, kind: str, asked: tuple[str, ...] | None) -> tuple[str, ...]:
        """The ``kind`` ("cases" or "variants") to run: ``asked`` (``all`` for every one),
        else the defaults; a ConfigError names an unknown one and lists the known."""
        known: tuple[str, ...] = getattr(self, kind)
        default: tuple[str, ...] | None = getattr(self, f"default_{kind}")
        if asked is None:
            return known if default is None else default
        if asked == ("all",):
            return known
        if not asked:  # `--cases ''` ran nothing and wrote an empty table
            raise ConfigError(f"--{kind}: name at least one of experiment {self.name}'s "
                              f"{kind}, or 'all'")
        unknown = [a for a in asked if a not in known]
        if unknown:
            listed = ", ".join(known) if known else "none"
            raise ConfigError(f"--{kind} {unknown[0]}: not one of experiment {self.name}'s "
                              f"{kind} ({listed}; or 'all'){_meant(unknown[0], known)}")
        return asked

    def check_seeds(self, seeds: tuple[int, ...] | None,
                    seeded: Iterable[str] = ()) -> None:
        """``--seeds`` only for an experiment that reads them (``seeded``: the names of
        those that do); elsewhere they were ignored without a word."""
        if seeds is not None and not seeds:
            raise ConfigError("--seeds: name at least one seed")
        if seeds is not None and not self.seeded:
            others = f" (experiments with seeds: {', '.join(seeded)})" if seeded else ""
            raise ConfigError(f"--seeds: experiment {self.name} draws no random numbers, so "
                              f"it has no seeds to average over{others}")

    def check_options(self, options: Mapping[str, str]) -> None:
        for key in options:
            if key not in self.options:
                listed = ", ".join(sorted(self.options)) or "none"
                raise ConfigError(f"--opt {key}: experiment {self.name} has no such option "
                                  f"(its options: {listed}){_meant(key, self.options)}")


def _meant(name: str, names: Iterable[str]) -> str:
    """``; did you mean 'NAME'?`` for the known name most like a mistyped one, or nothing."""
    close = difflib.get_close_matches(name, list(names), n=1)
    return f"; did you mean {close[0]!r}?" if close else ""


_EXPERIMENTS: dict[str, Experiment] = {}


def register_experiment(name: str, summary: str, *, cases: Iterable[str] = (),
                        default_cases: Iterable[str] | None = None,
                        variants: Iterable[str] = (),
                        default_variants: Iterable[str] | None = None,
                        options: Mapping[str, str] | None = None,
                        pooled: bool = False,
                        seeded: bool = False) -> Callable[[Runner], Runner]:
    """Register ``run`` as experiment ``name`` (a module under ``dlsched/reproduce/experiments``
    is imported, hence registered, when the registry is first read). ``pooled``: its
    simulations all go through ``run_setting`` (and nothing else it does is costly), so
    ``--workers`` may run them on a pool of processes (prefetch.py). ``seeded``: it reads
    ``--seeds`` (the others refuse them)."""

    def decorate(run: Runner) -> Runner:
        if name in _EXPERIMENTS and _EXPERIMENTS[name].run is not run:
            raise ValueError(f"experiment {name!r} is registered twice")
        _EXPERIMENTS[name] = Experiment(
            name, summary, run, tuple(cases),
            None if default_cases is None else tuple(default_cases), tuple(variants),
            None if default_variants is None else tuple(default_variants), dict(options or {}),
            pooled, seeded)
        return run

    return decorate


def _load_all() -> None:
    package = importlib.import_module("dlsched.reproduce.experiments")
    for module in pkgutil.iter_modules(package.__path__):
        importlib.import_module(f"{package.__name__}.{module.name}")


def registered_experiments() -> dict[str, Experiment]:
    """Every registered experiment, by name, sorted."""
    _load_all()
    return dict(sorted(_EXPERIMENTS.items()))


def get_experiment(name: str) -> Experiment:
    known = registered_experiments()
    if name not in known:
        raise ConfigError(f"no experiment {name!r} (known: {', '.join(known) or 'none'})"
                          f"{_meant(name, known)}")
    return known[name]
