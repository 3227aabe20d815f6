"""``dlsched.sweep(...)``: a grid of runs, in parallel, resumable; the results as a DataFrame.

    import dlsched
    table = dlsched.sweep(traces=["synthetic:philly-sample"], clusters=["philly"],
                          policies=["fifo", "tiresias"], seeds=range(5), out="runs/sweep")
    table.groupby("policy")["jct_mean"].describe()
"""

from __future__ import annotations

import os
import tempfile
import warnings
from collections.abc import Callable, Iterable, Mapping
from numbers import Integral
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from dlsched.errors import ConfigError
from dlsched.run_config import normalized
from dlsched.sweeps.execute import DoneStore, OnDone, OnWarning, execute
from dlsched.sweeps.grid import SweepRun, SweepSpec, expand, parse_seeds
from dlsched.sweeps.preflight import check_inputs
from dlsched.sweeps.table import plot, results, write_tables


def default_workers() -> int:
    """The CPUs this process may use."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def sweep(traces: Iterable[str] | str = ("philly-sample",),
          clusters: Iterable[str] | str = ("philly",),
          policies: Iterable[str] | str = ("fifo", "tiresias"),
          seeds: Iterable[int] | str = (0,), *, options: Mapping[str, Any] | None = None,
          vary: Mapping[str, Iterable[Any]] | None = None, out: str | Path | None = None,
          workers: int | None = None, ray_address: str | None = None, plots: bool = True,
          on_done: OnDone | None = None,
          on_start: Callable[[int], None] | None = None,
          on_warning: OnWarning | None = None) -> pd.DataFrame:
    """Run every combination of ``traces`` × ``clusters`` × ``policies`` × ``vary``'s values ×
    ``seeds`` and return one row per run (labels, key, summary metrics).

    ``options``: the CLI's options (``RunConfig`` fields) for every run, e.g.
    ``{"limit": 500}``; ``vary``: extra axes, a ``RunConfig`` field or a policy option
    (``"tiresias:thresholds"``) to its values. Runs go to ``workers`` local processes (default:
    this machine's CPUs; 1: in this process), or to the Ray cluster at ``ray_address``. With
    ``out`` the sweep is resumable (runs already in ``OUT/done/`` are not redone) and writes
    ``results.csv``, ``ci.csv`` and ``plots/``. ``on_start(runs)`` is called once every
    input is checked, before the first run: a bad input fails before it is called.
    ``on_warning(text)`` is called once for each distinct warning the runs give (default: a
    Python warning, as a single run's in a notebook), wherever they ran."""
    names = normalized("policies", policies)  # "fifo, srtf," as the command reads it
    spec = SweepSpec(_names(traces), _names(clusters), _names(names),
                     _seeds(seeds), dict(options or {}),
                     {key: _axis(values) for key, values in (vary or {}).items()})
    runs = expand(spec)
    check_inputs(runs)
    if out is not None:
        from dlsched.experiment import check_out

        check_out(Path(out))  # a file or an unwritable place: one line, before any run
    if on_start is not None:
        on_start(len(runs))
    if out is None:
        with tempfile.TemporaryDirectory(prefix="dlsched-sweep-") as folder:
            return _run(spec, runs, Path(folder), workers, ray_address, False, on_done,
                        on_warning)[0]
    return _run(spec, runs, Path(out), workers, ray_address, plots, on_done, on_warning)[0]


def _run(spec: SweepSpec, runs: list[SweepRun], out: Path, workers: int | None,
         ray_address: str | None, plots: bool, on_done: OnDone | None,
         on_warning: OnWarning | None = None) -> tuple[pd.DataFrame, int]:
    out.mkdir(parents=True, exist_ok=True)
    (out / "sweep.yaml").write_text(yaml.safe_dump(_spec_data(spec), sort_keys=False))
    store = DoneStore(out)
    executed = execute(runs, store, workers or default_workers(), ray_address,
                       on_done or _quiet, on_warning or _warn)
    table = results(runs, store)
    write_tables(table, out)
    if plots:
        plot(table, out)
    table.attrs["executed"] = executed
    return table, executed


def _quiet(_run: SweepRun, _row: dict[str, Any]) -> None:
    return None


def _warn(text: str) -> None:
    warnings.warn(text, stacklevel=4)


def _spec_data(spec: SweepSpec) -> dict[str, Any]:
    return {"traces": list(spec.traces), "clusters": list(spec.clusters),
            "policies": list(spec.policies), "seeds": list(spec.seeds),
            "options": {k: _plain(v) for k, v in spec.options.items()},
            "vary": {k: [_plain(v) for v in values] for k, values in spec.vary.items()}}


def _plain(value: Any) -> Any:
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    return value


def _seeds(seeds: Iterable[int] | str) -> tuple[int, ...]:
    """Whole numbers, each once: a seed given twice ran once but gave two rows, and its
    point's interval counted it twice. Text reads as ``--seeds`` does (``"0-4"``); one number
    is refused, naming both readings (``seeds=3`` was Python's "'int' object is not
    iterable")."""
    if isinstance(seeds, str):
        return parse_seeds(seeds)
    if isinstance(seeds, Integral):
        raise ConfigError(f"seeds: expected a list of seeds, got {seeds!r} (seeds=range({seeds})"
                          f" for seeds 0-{int(seeds) - 1}, seeds=[{seeds}] for seed {seeds} "
                          "alone)")
    for seed in seeds:
        if not isinstance(seed, Integral) or isinstance(seed, bool):
            raise ConfigError(f"seeds: expected whole numbers, got {seed!r}")
    return tuple(dict.fromkeys(int(seed) for seed in seeds))


def _axis(values: Iterable[Any] | Any) -> tuple[Any, ...]:
    """A ``vary`` axis's values: a list or range, or one value, text or a number
    (``{"limit": 500}`` was Python's "'int' object is not iterable")."""
    if isinstance(values, str | bytes) or not isinstance(values, Iterable):
        return (values,)
    return tuple(values)


def _names(value: Iterable[str] | str) -> tuple[str, ...]:
    if isinstance(value, str):
        return (value,)
    return tuple(value)

