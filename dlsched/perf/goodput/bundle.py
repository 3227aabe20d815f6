"""The goodput model's bundled data, under ``dlsched/data/profiles/goodput/``, and how it is made.

- ``grad_stats.csv`` (``application, batch_size, epoch, progress, grad_sqr, grad_var``): the
  statistical-efficiency columns of Pollux's ``validation-<batch>.csv`` files (``progress`` in
  Pollux's unit, steps at the initial batch), without the ``iteration`` and ``metric``
  columns, to 7 significant digits.
- ``perf_params.csv`` (``application, gpu_type, source, alpha_c … gamma, rows, mean_error,
  max_error``): the iteration-time model fitted to Pollux's T4 step times, with its fit error.
- ``epoch_iterations.csv`` (``application, batch_size, epoch, iteration``): the ``iteration``
  column of the same files (steps taken by the end of each epoch, for the epochs
  ``grad_stats.csv`` keeps), which the artifact's Optimus counts remaining steps in.

Both come from the Pollux artifact (Apache-2.0, see ``data/profiles/pollux/LICENSE``) and are
rebuilt by ``write_bundle(shared / "profiles" / "pollux", out_dir)``. Sia's profiles have no
license, so their fits are not bundled: ``fit_sia_params(sia_dir)`` computes them from a local
copy.
"""

from __future__ import annotations

import csv
import functools
import os
import warnings
from collections import defaultdict
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from dlsched.data_location import ENV, DataNotFound, DataWarning, find_data, where
from dlsched.errors import InputError, InputLocation
from dlsched.perf.goodput.efficiency import GradientStats
from dlsched.perf.goodput.fit import FitError, fit_error, fit_perf_params
from dlsched.perf.goodput.iteration_time import PARAM_NAMES, PerfParams
from dlsched.perf.goodput.measurements import (
    SIA_CLUSTER_GPU,
    pollux_measurements,
    sia_measurements,
)

STATS_HEADER = ("application", "batch_size", "epoch", "progress", "grad_sqr", "grad_var")
PARAMS_HEADER = ("application", "gpu_type", "source", *PARAM_NAMES, "rows", "mean_error",
                 "max_error")
ITERATIONS_HEADER = ("application", "batch_size", "epoch", "iteration")
SIA_APPS = ("bert", "cifar10", "deepspeech2", "imagenet", "ncf", "yolov3")  # not gpt_pmp


@dataclass(frozen=True, slots=True)
class FittedParams:
    """One application's iteration-time parameters on one GPU type, and how well they fit."""

    application: str
    gpu_type: str
    source: str
    params: PerfParams
    error: FitError


def bundle_dir() -> Path:
    return Path(str(resources.files("dlsched.data").joinpath("profiles", "goodput")))


def _read(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def _number(path: Path, line: int, row: dict[str, str], field: str) -> float:
    try:
        return float(row[field])
    except (KeyError, TypeError, ValueError):
        raise InputError(InputLocation(str(path), line, field),
                         f"expected a number, got {row.get(field)!r}") from None


def stats_rows(pollux_dir: Path) -> list[list[str]]:
    """``STATS_HEADER`` rows from every ``<app>/validation-<batch>.csv`` under ``pollux_dir``."""
    rows = []
    for app_dir in sorted(p for p in pollux_dir.iterdir() if p.is_dir()):
        for path in sorted(app_dir.glob("validation-*.csv")):
            batch = path.stem.split("-")[1]
            for epoch, row in enumerate(_read(path)):
                values = (float(row[f]) for f in ("progress", "grad_sqr", "grad_var"))
                rows.append([app_dir.name, batch, str(epoch), *(f"{v:.7g}" for v in values)])
    return rows


def iteration_rows(pollux_dir: Path, epochs: dict[str, int]) -> list[list[str]]:
    """``ITERATIONS_HEADER`` rows: each validation file's first ``epochs[app]`` iterations."""
    rows = []
    for app_dir in sorted(p for p in pollux_dir.iterdir() if p.is_dir()):
        for path in sorted(app_dir.glob("validation-*.csv")):
            batch = path.stem.split("-")[1]
            for epoch, row in enumerate(_read(path)[:epochs[app_dir.name]]):
                rows.append([app_dir.name, batch, str(epoch), str(int(float(row["iteration"])))])
    return rows


@functools.cache
def load_epoch_iterations(path: Path | None = None) -> dict[str, dict[int, tuple[int, ...]]]:
    """Steps by the end of each epoch, by application and batch size (``epoch_iterations.csv``)."""
    path = path or bundle_dir() / "epoch_iterations.csv"
    table: dict[str, dict[int, list[int]]] = defaultdict(lambda: defaultdict(list))
    for line, row in enumerate(_read(path), start=2):
        batch = int(_number(path, line, row, "batch_size"))
        table[row["application"]][batch].append(int(_number(path, line, row, "iteration")))
    return {app: {b: tuple(v) for b, v in by_batch.items()} for app, by_batch in table.items()}


def fit_pollux_params(pollux_dir: Path) -> list[FittedParams]:
    """The iteration-time model fitted to each Pollux application (T4)."""
    fitted = []
    for app_dir in sorted(p for p in pollux_dir.iterdir() if p.is_dir()):
        data = pollux_measurements(app_dir)
        params = fit_perf_params(data)
        fitted.append(FittedParams(app_dir.name, "T4", "pollux", params, fit_error(params, data)))
    return fitted


def fit_sia_params(sia_dir: Path) -> list[FittedParams]:
    """The model fitted per application and Sia cluster (GPU type), from Sia's profiles."""
    fitted = []
    for app in SIA_APPS:
        for cluster, gpu in SIA_CLUSTER_GPU.items():
            if not (sia_dir / app / f"placements-{cluster}.csv").exists():
                continue
            data = sia_measurements(sia_dir, app, cluster)
            params = fit_perf_params(data)
            fitted.append(FittedParams(app, gpu, f"sia-{cluster}", params,
                                       fit_error(params, data)))
    return fitted


def write_bundle(pollux_dir: Path, out_dir: Path) -> None:
    """Rebuild ``grad_stats.csv``, ``epoch_iterations.csv`` and ``perf_params.csv`` in
    ``out_dir`` from Pollux's files."""
    with open(out_dir / "grad_stats.csv", "w", newline="") as f:
        writer = csv.writer(f, lineterminator="\n")
        writer.writerow(STATS_HEADER)
        writer.writerows(stats_rows(pollux_dir))
    epochs = {app: len(stats.progress) for app, stats in load_grad_stats(
        out_dir / "grad_stats.csv").items()}
    with open(out_dir / "epoch_iterations.csv", "w", newline="") as f:
        writer = csv.writer(f, lineterminator="\n")
        writer.writerow(ITERATIONS_HEADER)
        writer.writerows(iteration_rows(pollux_dir, epochs))
    with open(out_dir / "perf_params.csv", "w", newline="") as f:
        writer = csv.writer(f, lineterminator="\n")
        writer.writerow(PARAMS_HEADER)
        for fit in fit_pollux_params(pollux_dir):
            values = [f"{v:.9g}" for v in fit.params.as_array()]
            writer.writerow([fit.application, fit.gpu_type, fit.source, *values, fit.error.rows,
                             f"{fit.error.mean:.6f}", f"{fit.error.max:.6f}"])


@functools.cache
def load_grad_stats(stats_file: Path | None = None) -> dict[str, GradientStats]:
    """Gradient statistics per application from ``grad_stats.csv`` (bundled by default).

    ``init_batch`` is the smallest measured batch and an epoch's progress the least over the
    batch files, as in Pollux's ``applications.py``; progress becomes examples (× ``init_batch``).
    """
    path = stats_file or bundle_dir() / "grad_stats.csv"
    table: dict[str, dict[int, list[tuple[float, float, float]]]] = defaultdict(dict)
    for line, row in enumerate(_read(path), start=2):
        batch = int(_number(path, line, row, "batch_size"))
        values = tuple(_number(path, line, row, f) for f in ("progress", "grad_sqr", "grad_var"))
        table[row["application"]].setdefault(batch, []).append(values)  # type: ignore[arg-type]
    return {app: _stats(by_batch) for app, by_batch in table.items()}


def _stats(by_batch: dict[int, list[tuple[float, float, float]]]) -> GradientStats:
    sizes = tuple(sorted(by_batch))
    epochs = min(len(rows) for rows in by_batch.values())
    init = sizes[0]
    progress = tuple(init * min(by_batch[b][e][0] for b in sizes) for e in range(epochs))
    sqr = tuple(tuple(r[1] for r in by_batch[b][:epochs]) for b in sizes)
    var = tuple(tuple(r[2] for r in by_batch[b][:epochs]) for b in sizes)
    return GradientStats(init, sizes, progress, sqr, var)


@functools.cache
def load_perf_params(params_file: Path | None = None) -> dict[tuple[str, str], FittedParams]:
    """Fitted parameters by ``(application, gpu_type)`` from ``perf_params.csv``."""
    path = params_file or bundle_dir() / "perf_params.csv"
    fitted = {}
    for line, row in enumerate(_read(path), start=2):
        params = PerfParams(*(_number(path, line, row, name) for name in PARAM_NAMES))
        error = FitError(int(_number(path, line, row, "rows")),
                         _number(path, line, row, "mean_error"),
                         _number(path, line, row, "max_error"))
        key = (row["application"], row["gpu_type"])
        fitted[key] = FittedParams(*key, row["source"], params, error)
    return fitted


SIA_ENV = "DLSCHED_SIA_PROFILES"  # Sia's profiles alone, before the data directory


def sia_profiles_dir() -> Path | None:
    """Sia's profiles (no license: not bundled): ``$DLSCHED_SIA_PROFILES``, else
    ``profiles/sia`` in the data directory (``data_location``); None when neither exists."""
    if os.environ.get(SIA_ENV):
        return Path(os.environ[SIA_ENV]).expanduser().resolve()
    return find_data("profiles/sia")


def sia_perf_params(sia_dir: Path | None = None) -> dict[tuple[str, str], PerfParams]:
    """Per (application, GPU type) parameters fitted to Sia's profiles in ``sia_dir`` (default:
    ``sia_profiles_dir()``). They cannot be bundled (see ``docs/goodput.md``): without them
    every type falls back to the bundled parameters (T4's for types without a fit), with a
    ``DataWarning`` saying so. An explicit ``sia_dir`` that does not exist is an error."""
    if sia_dir is not None and not sia_dir.is_dir():
        raise DataNotFound(f"Sia's profiles: {sia_dir} is not a directory")
    found = sia_dir or sia_profiles_dir()
    if found is None or not found.is_dir():
        _warn_no_sia_profiles(found)
        return {}
    return _fit_sia(found.resolve())


def _warn_no_sia_profiles(looked: Path | None) -> None:
    warnings.warn(DataWarning(
        f"Sia's per-GPU-type profiles not found ({looked or 'profiles/sia in ' + where()}): "
        f"every GPU type uses the bundled T4 fit. Set {ENV} to a directory holding "
        f"profiles/sia (or {SIA_ENV} to Sia's profiles)"), stacklevel=3)


@functools.cache
def _fit_sia(sia_dir: Path) -> dict[tuple[str, str], PerfParams]:
    fitted: dict[tuple[str, str], PerfParams] = {}
    for fit in fit_sia_params(sia_dir):
        key = (fit.application, fit.gpu_type)
        if key not in fitted:  # the first Sia cluster of a GPU type wins (dgx before dgx-ext)
            fitted[key] = fit.params
    return fitted
