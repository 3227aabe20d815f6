"""Benchmark: the whole Philly trace (82,247 jobs) on the `philly` cluster, per policy.

Run on demand: ``python benchmarks/bench_philly.py [--policies fifo,tiresias] [--trace PATH]``.
Prints reading time, simulation wall time, jobs/s and peak memory (RSS) per policy.
Target (issue 2): each policy ≤ 10 s on one core of the 2-core dev machine, memory < 1 GiB.
"""

from __future__ import annotations

import argparse
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
    args = parser.parse_args()
    cluster = resolve_cluster("philly")
    started = time.perf_counter()
    trace = read_trace(args.trace)
    print(f"read {len(trace)} jobs in {time.perf_counter() - started:.2f} s")
    for policy in args.policies.split(","):
        started, cpu_started = time.perf_counter(), time.process_time()
        result = Simulator(cluster, trace, build_policy(policy), SimConfig()).run()
        wall = time.perf_counter() - started
        cpu = time.process_time() - cpu_started
        summary = summarize(result)
        rss_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(f"{policy:>10}: {wall:6.2f} s (CPU {cpu:6.2f} s)  {len(trace) / wall:8.0f} jobs/s  "
              f"cycles {result.cycles}  mean JCT {summary.jct_mean / 3600:7.3f} h  "
              f"p99 {summary.jct_p99 / 3600:8.2f} h  preemptions {summary.preemptions}  "
              f"peak RSS {rss_mib:.0f} MiB")


if __name__ == "__main__":
    main()
