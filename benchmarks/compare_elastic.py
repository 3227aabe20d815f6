"""Elastic policies on the Pollux and Sia workloads under the goodput model (issue 5).

Run on demand (2-core shared machine: wall seconds are noisy)::

    python benchmarks/compare_elastic.py                      # 8 Pollux workloads, pollux-64
    python benchmarks/compare_elastic.py --setting sia        # Sia's Philly workloads, sia-64
    python benchmarks/compare_elastic.py --workloads 1,2 --policies pollux,tiresias

Every run uses the ``goodput`` throughput model, re-rated each round from the job's progress
(``scheduling/rerating.py``, on by default for the goodput model; ``--no-rerate`` keeps one
mean rate per allocation). The Sia
setting gives the model Sia's per-GPU-type fits when ``$DLSCHED_DATA/profiles/sia`` exists
(``DLSCHED_DATA=../shared/data``)
(as the Sia policy uses them), else every type runs at T4's speed. Prints mean and p99 JCT and
makespan (hours) per workload and policy, the mean over workloads, and each run's wall seconds
(issue 5: "a whole Pollux workload simulates in under a minute").

In the Sia setting Gavel (``gavel-maxmin``, heterogeneity-aware max-min fairness in 6-minute
rounds) runs on the same goodput model: its LP's ``T[j, t]`` is each job's rate on type ``t`` at
its requested size (``policies/gavel/inputs.from_rates``). Gavel does not resize jobs nor tune
their batch size: each job keeps the GPU count it asked for, as in Sia's own Gavel baseline.
"""

from __future__ import annotations

import argparse
import statistics
import time
from dataclasses import dataclass, replace
from pathlib import Path

from dlsched.cluster.builtin import resolve_cluster
from dlsched.perf.goodput import GoodputThroughputs
from dlsched.perf.goodput.bundle import sia_perf_params
from dlsched.report.metrics import Summary, summarize
from dlsched.scheduling.registry import build_policy
from dlsched.sim.simulator import SimConfig, Simulator
from dlsched.workload.bundled import resolve_trace
from dlsched.workload.trace import Trace

SIA_WORKLOADS = Path("../shared/data/traces/sia-workloads/philly")


@dataclass(frozen=True)
class Setting:
    cluster: str
    policies: str
    workloads: str

    def trace(self, n: int) -> Trace:
        if self.cluster == "pollux-64":
            trace = resolve_trace(f"pollux-{n}")
        else:
            trace = resolve_trace(str(SIA_WORKLOADS / f"workload-{n}.csv"), "pollux")
            trace = replace(trace, name=f"sia-philly-{n}")
        return replace(trace, throughput="goodput")

    def model(self) -> GoodputThroughputs:
        return GoodputThroughputs(params=sia_perf_params() if self.cluster == "sia-64" else None)


SETTINGS = {
    "pollux": Setting("pollux-64", "pollux,sia,optimus,afs,tiresias", "1,2,3,4,5,6,7,8"),
    "sia": Setting("sia-64", "sia,pollux,gavel-maxmin", "1,2,3,4,5,6,7,8"),
}


def run_one(setting: Setting, n: int, policy: str, rerate: bool) -> tuple[Summary, float]:
    sim = Simulator(resolve_cluster(setting.cluster), setting.trace(n), build_policy(policy),
                    SimConfig(restart_overhead=30.0), throughput=setting.model())
    if not rerate:
        sim.core.rerater = None  # one mean rate per allocation
    started = time.perf_counter()
    result = sim.run()
    return summarize(result), time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--setting", choices=sorted(SETTINGS), default="pollux")
    parser.add_argument("--policies", default=None)
    parser.add_argument("--workloads", default=None)
    parser.add_argument("--no-rerate", action="store_true")
    args = parser.parse_args()
    setting = SETTINGS[args.setting]
    policies = (args.policies or setting.policies).split(",")
    workloads = [int(w) for w in (args.workloads or setting.workloads).split(",")]
    columns: dict[str, list[tuple[float, float, float]]] = {p: [] for p in policies}
    print(f"{setting.cluster}, goodput model, re-rated: {not args.no_rerate}")
    print("workload policy        meanJCT_h p99JCT_h makespan_h finished resizes wall_s")
    for n in workloads:
        for policy in policies:
            s, wall = run_one(setting, n, policy, not args.no_rerate)
            row = (s.jct_mean or float("nan"), s.jct_p99 or float("nan"),
                   s.makespan or float("nan"))
            columns[policy].append(row)
            print(f"{n:>8} {policy:<14} {row[0] / 3600:9.2f} {row[1] / 3600:8.2f} "
                  f"{row[2] / 3600:10.2f} {s.jobs_finished:>4}/{s.jobs_submitted:<4}"
                  f"{s.resizes:>7} {wall:6.1f}", flush=True)
    print("mean over workloads (h):   meanJCT  p99JCT  makespan")
    for policy, rows in columns.items():
        means = [statistics.mean(r[i] for r in rows) / 3600 for i in range(3)]
        print(f"  {policy:<22} {means[0]:7.2f} {means[1]:7.2f} {means[2]:9.2f}")


if __name__ == "__main__":
    main()
