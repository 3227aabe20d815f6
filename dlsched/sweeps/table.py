"""A sweep's results: one row per run (``results.csv``, and ``results.parquet`` with pyarrow),
the mean and a 95% confidence interval over seeds (``ci.csv``), and plots of them.

The interval is Student's t over the seeds of each grid point (``mean ± t(0.975, n-1) ·
s/√n``): seeds are independent replications, few of them, and the metric's spread unknown.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import fields
from pathlib import Path
from typing import Any

import pandas as pd

from dlsched.run_config import RunConfig
from dlsched.sweeps.execute import DoneStore
from dlsched.sweeps.grid import LABELS, SweepRun

METRICS = ("jct_mean", "jct_p99", "queueing_delay_mean", "makespan", "utilization",
           "preemptions", "ftf_rho_max")
PLOTTED = ("jct_mean", "makespan", "utilization")
UNITS = {"jct_mean": "s", "jct_p99": "s", "queueing_delay_mean": "s", "makespan": "s"}
FRACTIONS = ("utilization",)  # in [0, 1]: an interval's bar stops at 1
_RUN_FIELDS = frozenset(f.name for f in fields(RunConfig))  # varied options every run has
# summary.json's own identity and host-timing fields: the labels and the machine say those
_DROPPED = ("policy", "trace", "cluster", "seed", "version", "placement", "restart_overhead")


def results(runs: Sequence[SweepRun], store: DoneStore) -> pd.DataFrame:
    """One row per grid run (labels, key, then its summary metrics); runs not finished are
    left out."""
    rows = []
    for run in runs:
        saved = store.row(run.key)
        if saved is None:
            continue
        metrics = {k: v for k, v in saved.items() if k not in _DROPPED and k != "key"}
        rows.append({**run.labels, "key": run.key, **metrics})
    table = pd.DataFrame(rows)
    # a metric that is null in every run (ettr without failures) is a float column of NaN,
    # as results.csv reads back, not an object column of None
    empty = [c for c in table.columns[len(LABELS):] if table[c].isna().all()]
    table = table.astype(dict.fromkeys(empty, "float64"))
    # a policy option's values are text ('600', as --policy-opt takes them): the table holds
    # them as results.csv reads back, numbers, as a field's (round_seconds) already are; the
    # notebook's table had '0', '1', '4' where the file's had 0, 1, 4 (and sorted '10' < '4')
    for column in _label_columns(table)[len(LABELS):]:
        table[column] = _numbers_if_all(table[column])
    return table


def _numbers_if_all(values: pd.Series) -> pd.Series:
    """``values`` as numbers when every one is text that reads as a number, else as is."""
    if not all(isinstance(value, str) for value in values):
        return values
    try:
        return pd.to_numeric(values)
    except (TypeError, ValueError):
        return values


def confidence(table: pd.DataFrame, metrics: Sequence[str] = METRICS) -> pd.DataFrame:
    """Per grid point (every label but the seed): runs, and each metric's mean, standard
    deviation and 95% interval over the seeds (the interval is NaN with one seed)."""
    from scipy import stats

    groups = [c for c in _label_columns(table) if c != "seed"]
    present = [m for m in metrics if m in table.columns]
    out = []
    for values, group in table.groupby(groups, sort=False, dropna=False):
        row: dict[str, Any] = dict(zip(groups, _tuple(values), strict=True))
        row["runs"] = len(group)
        for metric in present:
            series = pd.to_numeric(group[metric], errors="coerce").dropna()
            n, mean = len(series), float(series.mean()) if len(series) else math.nan
            std = float(series.std(ddof=1)) if n > 1 else math.nan
            half = float(stats.t.ppf(0.975, n - 1) * std / math.sqrt(n)) if n > 1 else math.nan
            row.update({metric: mean, f"{metric}_std": std, f"{metric}_ci_low": mean - half,
                        f"{metric}_ci_high": mean + half})
        out.append(row)
    return pd.DataFrame(out)


def _label_columns(table: pd.DataFrame) -> list[str]:
    """The label columns: LABELS, then the varied options (every column before ``key``)."""
    columns = list(table.columns)
    return columns[:columns.index("key")] if "key" in columns else list(LABELS)


def _tuple(values: Any) -> tuple[Any, ...]:
    return values if isinstance(values, tuple) else (values,)


def write_tables(table: pd.DataFrame, out: Path) -> list[Path]:
    """``results.csv`` (+ ``results.parquet`` when pyarrow is installed) and ``ci.csv``."""
    from dlsched.extras import missing

    written = [out / "results.csv", out / "ci.csv"]
    table.to_csv(written[0], index=False)
    confidence(table).to_csv(written[1], index=False)
    if not missing(("pyarrow",)):
        written.append(out / "results.parquet")
        table.to_parquet(written[-1], index=False)
    return written


def point_name(row: dict[str, Any], varied: Sequence[str]) -> str:
    """A bar's label (and a run's progress line): the policy and the varied options that
    apply to it, ``key=value`` (an option of that policy without its ``policy:`` prefix). A
    policy option of another policy (``tiresias:thresholds`` on a fifo run) is left out: the
    run is the same at each of its values (one key, run once), so it is one bar."""
    from dlsched.experiment import options_for

    policy = str(row.get("policy", ""))
    parts = []
    for column, value in row.items():
        if column not in varied:
            parts.append(str(value))
        elif column in _RUN_FIELDS or options_for(policy, ((column, str(value)),)):
            # the bar already names its policy: 'tiresias thresholds=600', not 'tiresias
            # tiresias:thresholds=600'
            parts.append(f"{column.removeprefix(policy + ':')}={value}")
    return " ".join(parts)


def plot(table: pd.DataFrame, out: Path, metrics: Sequence[str] = PLOTTED) -> list[Path]:
    """One PNG per metric: a panel per trace × cluster, a bar per policy (and varied option
    values, as ``key=value``) at the mean over seeds, with its 95% interval as an error bar;
    every plotted metric is >= 0, so the bar's lower end stops at 0 (with few seeds the
    interval is wide: two seeds multiply the standard error by 12.7)."""
    # an Agg canvas per figure, not pyplot: matplotlib.use("Agg") switched a notebook's own
    # (inline) backend off for the rest of the session
    from matplotlib.artist import setp
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    ci = confidence(table, metrics)
    labels = [c for c in _label_columns(table) if c not in ("trace", "cluster", "seed")]
    varied = [c for c in labels if c not in LABELS]
    panels = list(ci.groupby(["trace", "cluster"], sort=False))
    folder = out / "plots"
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for metric in (m for m in metrics if m in ci.columns):
        fig = Figure(figsize=(4 * len(panels), 4.2 if varied else 3.5))
        FigureCanvasAgg(fig)
        axes = fig.subplots(1, len(panels), squeeze=False)
        for ax, ((trace, cluster), group) in zip(axes[0], panels, strict=True):
            names = [point_name(dict(zip(labels, row, strict=True)), varied)
                     for row in group[labels].itertuples(index=False)]
            group = group.assign(_name=names).drop_duplicates("_name")  # one fifo bar
            half = (group[f"{metric}_ci_high"] - group[metric]).fillna(0)
            low = half.where(half < group[metric], group[metric].clip(lower=0))
            if metric in FRACTIONS:  # nor above 1 for a fraction
                half = half.clip(upper=(1.0 - group[metric]).clip(lower=0))
            ax.bar(group["_name"], group[metric], yerr=[low, half], capsize=3)
            ax.set_title(f"{trace} / {cluster}", fontsize=9)
            ax.tick_params(axis="x", labelsize=8)
            setp(ax.get_xticklabels(), rotation=40, ha="right", rotation_mode="anchor")
        unit = f"{UNITS[metric]}; " if metric in UNITS else ""
        axes[0][0].set_ylabel(f"{metric} ({unit}mean, 95% CI over seeds)", fontsize=9)
        fig.tight_layout()
        paths.append(folder / f"{metric}.png")
        fig.savefig(paths[-1], dpi=100)
    return paths
