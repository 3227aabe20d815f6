"""Benchmark: the whole Philly trace (82,247 jobs) on the `philly` cluster, per policy.

Run on demand: ``python benchmarks/bench_philly.py [--policies fifo,tiresias] [--trace PATH]
[--jobs N] [--repeat R]``. Prints reading time, simulation wall time, jobs/s and peak memory (RSS)
per policy, and the load average before each run (the dev machine is shared: quote it with any
figure). ``--repeat`` keeps the fastest of R runs; ``--jobs`` takes the first N jobs only.
Target (issue 2): each policy ≤ 10 s on one core of the 2-core dev machine, memory < 1 GiB.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import resource
import time
from pathlib import Path

from dlsched.cluster.builtin import resolve_cluster
from dlsched.report.metrics import summarize
from dlsched.scheduling.registry import build_policy
from dlsched.sim.simulator import SimConfig, Simulator
from dlsched.workload.readers.base import read_trace

DEFAULT_TRACE = Path(__file__).resolve().parents[2] / "shared/data/traces/philly/philly.csv"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--policies", default="fifo,tiresias")
    parser.add_argument("--trace", default=str(DEFAULT_TRACE))
    parser.add_argument("--jobs", type=int, default=None, help="only the first N jobs")
    parser.add_argument("--repeat", type=int, default=1, help="keep the fastest of R runs")
    args = parser.parse_args()
    cluster = resolve_cluster("philly")
    started = time.perf_counter()
    trace = read_trace(args.trace)
    if args.jobs is not None:
        trace = dataclasses.replace(trace, jobs=trace.jobs[:args.jobs])
    print(f"read {len(trace)} jobs in {time.perf_counter() - started:.2f} s")
    for policy in args.policies.split(","):
        load = " ".join(f"{x:.2f}" for x in os.getloadavg())
        wall = cpu = float("inf")
        for _ in range(args.repeat):
            started, cpu_started = time.perf_counter(), time.process_time()
            result = Simulator(cluster, trace, build_policy(policy), SimConfig()).run()
            wall = min(wall, time.perf_counter() - started)
            cpu = min(cpu, time.process_time() - cpu_started)
        summary = summarize(result)
        rss_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(f"{policy:>10}: {wall:6.2f} s (CPU {cpu:6.2f} s)  {len(trace) / wall:8.0f} jobs/s  "
              f"cycles {result.cycles}  mean JCT {summary.jct_mean / 3600:7.3f} h  "
              f"p99 {summary.jct_p99 / 3600:8.2f} h  preemptions {summary.preemptions}  "
              f"peak RSS {rss_mib:.0f} MiB  (load before: {load})")


if __name__ == "__main__":
    main()
