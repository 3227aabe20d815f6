"""Sia (Jayaram Subramanya et al., "Sia: Heterogeneity-aware, goodput-optimized ML-cluster
scheduling", SOSP'23) §5.2, Table 3: average and p99 JCT and makespan of Sia, Pollux and Gavel
on the heterogeneous 64-GPU cluster (6 t4 nodes, 3 rtx, 2 a100) for its three workload
families, each the mean over its workload files:

- ``philly``: 8 workloads of 160 jobs over 8 hours sampled from Philly;
- ``helios``: 10 workloads sampled from Helios' Saturn cluster (the artifact's ``saturn``);
- ``newtrace``: 10 workloads of 960 jobs over 48 hours (slow: tens of minutes).

Input: Sia's workload files (siasosp23/artifacts ``sia-simulator/workloads``; no license, not
bundled: ``traces/sia-workloads`` in the data directory, or ``--opt data=DIR``), run in the
``sia-sosp23`` setting (Sia's per-GPU-type fits from its profiles, also in the data
directory). Cases ``philly`` etc. give the means over the workloads run, beside Table 3;
``philly/workload-N`` rows each workload's own values (no reference). ``sia/pollux`` and
``sia/gavel-maxmin`` rows give the ratios of mean JCTs, beside the ratios of Table 3's.
dlsched's Gavel is max-min fairness, the paper's max-sum-throughput (docs/reproduce.md).
"""

from __future__ import annotations

import statistics
from collections.abc import Iterator
from pathlib import Path

from dlsched.data_location import require_data
from dlsched.errors import ConfigError
from dlsched.reproduce.registry import (
    ExperimentOptions,
    chosen_policies,
    register_experiment,
    whole_list_option,
    whole_option,
)
from dlsched.reproduce.rows import Measured
from dlsched.reproduce.simulate import run_setting

POLICIES = ("sia", "pollux", "gavel-maxmin")
FOLDERS = {"philly": ("philly", 8), "helios": ("saturn", 10), "newtrace": ("newtrace", 10)}
DATA = "traces/sia-workloads"  # under the data directory ($DLSCHED_DATA; not bundled)
METRICS = (("jct_mean_s", "jct_mean"), ("jct_p99_s", "jct_p99"), ("makespan_s", "makespan"))


@register_experiment(
    "sia-sosp23", "Sia SOSP'23 Table 3: avg/p99 JCT and makespan of Sia, Pollux and Gavel on "
    "the heterogeneous 64-GPU cluster (t4, rtx, a100), Philly/Helios/newTrace workloads",
    cases=tuple(FOLDERS), default_cases=("philly",),
    options={"policies": "comma-separated subset of " + ",".join(POLICIES),
             "workloads": "comma-separated workload numbers (default: all of the case's)",
             "limit": "first N jobs of each workload (a quick subset)",
             "data": f"folder of Sia's workload folders (default: {DATA} in the data "
                     "directory, $DLSCHED_DATA)"},
    pooled=True)
def sia_sosp23(options: ExperimentOptions) -> Iterator[Measured]:
    opts = options.options
    policies = chosen_policies(opts.get("policies"), POLICIES)
    limit = whole_option(opts, "limit", None)
    data = Path(opts["data"]) if "data" in opts else require_data(
        f"{DATA}/philly/workload-1.csv", "sia-sosp23").parents[1]
    for case in options.cases:
        folder, count = FOLDERS[case]
        numbers = whole_list_option(opts, "workloads", tuple(range(1, count + 1)))
        values: dict[str, dict[str, list[float]]] = {p: {m: [] for m, _ in METRICS}
                                                     for p in policies}
        for number in numbers:
            path = data / folder / f"workload-{number}.csv"
            if not path.is_file():
                raise ConfigError(f"sia-sosp23: no {path} (Sia's workloads, see "
                                  "docs/reproduce.md)")
            for policy in policies:
                summary = run_setting("sia-sosp23", policy, str(path), options,
                                      f"{case}/workload-{number}", format="pollux",
                                      limit=limit)
                for metric, field in METRICS:
                    value = getattr(summary, field)
                    yield Measured(f"{case}/workload-{number}", policy, metric, value)
                    if value is not None:
                        values[policy][metric].append(value)
        yield from _means(case, values)


def _means(case: str, values: dict[str, dict[str, list[float]]]) -> Iterator[Measured]:
    means = {policy: {metric: statistics.fmean(v) if v else None for metric, v in by.items()}
             for policy, by in values.items()}
    for policy, by in means.items():
        for metric, value in by.items():
            yield Measured(case, policy, metric, value)
    sia = means.get("sia", {}).get("jct_mean_s")
    for other in ("pollux", "gavel-maxmin"):
        below = means.get(other, {}).get("jct_mean_s")
        if sia and below:
            yield Measured(case, f"sia/{other}", "jct_mean_ratio", sia / below)
