"""Compare policies on the 8 Pollux workloads (160 jobs each, 64 T4 GPUs).

Run on demand: ``python benchmarks/compare_pollux.py [--policies fifo,sjf,srtf,tiresias]
[--throughput linear|pollux]``. Prints mean and p99 JCT (hours) and makespan per workload and
policy, and the mean over workloads.
"""

from __future__ import annotations

import argparse
import statistics
from dataclasses import replace

from dlsched.cluster.builtin import resolve_cluster
from dlsched.perf.model import get_throughput_model
from dlsched.report.metrics import summarize
from dlsched.scheduling.registry import build_policy
from dlsched.sim.simulator import SimConfig, Simulator
from dlsched.workload.bundled import resolve_trace


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--policies", default="fifo,sjf,srtf,backfill,tiresias")
    parser.add_argument("--throughput", default=None, help="override the trace's model")
    args = parser.parse_args()
    policies = args.policies.split(",")
    cluster = resolve_cluster("pollux-64")
    means: dict[str, list[float]] = {p: [] for p in policies}
    print(f"{'workload':>9} " + " ".join(f"{p:>22}" for p in policies))
    for n in range(1, 9):
        trace = resolve_trace(f"pollux-{n}")
        if args.throughput:
            trace = replace(trace, throughput=args.throughput)
        cells = []
        for policy in policies:
            result = Simulator(cluster, trace, build_policy(policy), SimConfig(),
                               throughput=get_throughput_model(trace.throughput)).run()
            s = summarize(result)
            means[policy].append(s.jct_mean)
            cells.append(f"{s.jct_mean / 3600:6.2f} {s.jct_p99 / 3600:6.2f} "
                         f"{s.makespan / 3600:7.2f}")
        print(f"{n:>9} " + " ".join(f"{c:>22}" for c in cells))
    print("mean JCT over workloads (h): " + ", ".join(
        f"{p} {statistics.mean(v) / 3600:.2f}" for p, v in means.items()))
    print("(columns per policy: mean JCT h, p99 JCT h, makespan h)")


if __name__ == "__main__":
    main()
