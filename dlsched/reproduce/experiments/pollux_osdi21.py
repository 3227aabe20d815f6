"""Pollux (Qiao et al., OSDI'21) §5.3 / Figure 8: Tiresias, Optimus and Pollux on the artifact's
8 workloads (160 jobs each, 64 T4 GPUs) at relative job loads 0.5, 1.0, 1.5 and 2.0.

References: the artifact's own results (``simulator/results-jobload/*/summary.json``; rows made
by ``benchmarks/pollux_artifact_references.py``). dlsched runs each policy in the
``pollux-osdi21`` setting (``settings/pollux-osdi21.yaml``).
"""

from __future__ import annotations

import statistics
from collections.abc import Iterator

from dlsched.reproduce.registry import ExperimentOptions, chosen_policies, register_experiment
from dlsched.reproduce.rows import Measured
from dlsched.reproduce.simulate import run_setting

WORKLOADS = tuple(f"workload-{n}" for n in range(1, 9))
LOADS = ("0.5", "1.0", "1.5", "2.0")
POLICIES = ("tiresias", "optimus", "pollux")


def trace_name(workload: str, load: str) -> str:
    number = workload.removeprefix("workload-")
    return f"pollux-{number}" if load == "1.0" else f"pollux-{number}-load-{load}"


@register_experiment(
    "pollux-osdi21", "Pollux OSDI'21 Fig. 8: mean JCT and makespan of Tiresias, Optimus and "
    "Pollux on the artifact's 8 workloads (64 T4)", cases=WORKLOADS, variants=LOADS,
    default_variants=("1.0",),
    options={"policies": "comma-separated subset of tiresias,optimus,pollux"},
    pooled=True)
def pollux_osdi21(options: ExperimentOptions) -> Iterator[Measured]:
    policies = chosen_policies(options.options.get("policies"), POLICIES)
    for load in options.variants:
        means: dict[str, list[float]] = {p: [] for p in policies}
        for workload in options.cases:
            case = f"{workload}@{load}"
            for policy in policies:
                summary = run_setting("pollux-osdi21", policy, trace_name(workload, load),
                                      options, case)
                means[policy].append(summary.jct_mean or 0.0)
                yield Measured(case, policy, "jct_mean_s", summary.jct_mean)
                yield Measured(case, policy, "makespan_s", summary.makespan)
        if len(options.cases) == len(WORKLOADS):
            for policy, values in means.items():
                yield Measured(f"mean@{load}", policy, "jct_mean_s", statistics.mean(values))
