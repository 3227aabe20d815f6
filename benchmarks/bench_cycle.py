"""Benchmark: one scheduling cycle (``core.cycle()``) with 1,000 pending jobs.

Run on demand: ``python benchmarks/bench_cycle.py [--pending 1000] [--cluster pollux-64]``.
The cluster is first filled with running jobs, then PENDING jobs of 1-4 GPUs arrive; timed:
the first cycle that sees them all ("cold") and the cycle after one running job finishes
("after finish", the runtime's common case). Target (issue 3): <= 50 ms.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time

from dlsched.cluster.builtin import resolve_cluster
from dlsched.perf.model import LinearScaling
from dlsched.scheduling.registry import build_policy
from dlsched.scheduling.scheduler import Scheduler
from dlsched.sim.clock import SimClock
from dlsched.workload.job import Job, JobSpec


class NullExecutor:
    def start(self, job: Job, now: float) -> None:
        pass

    def stop(self, job: Job, now: float) -> None:
        pass


def loaded_core(policy: str, cluster_name: str, pending: int, seed: int) -> Scheduler:
    rng = random.Random(seed)
    cluster = resolve_cluster(cluster_name)
    clock = SimClock()
    core = Scheduler(cluster, build_policy(policy), LinearScaling(), clock, NullExecutor())
    for i in range(cluster.num_gpus):  # one-GPU jobs fill every GPU
        core.submit(JobSpec(f"run-{i}", 0.0, 1, 1e6))
    core.cycle()
    for i in range(pending):
        clock.time = 1.0 + i * 0.01
        core.submit(JobSpec(f"wait-{i}", clock.time, rng.choice((1, 1, 2, 4)),
                            rng.uniform(60, 36000)))
    clock.time += 1.0
    return core


def time_cycles(policy: str, cluster: str, pending: int, seed: int) -> tuple[float, float]:
    core = loaded_core(policy, cluster, pending, seed)
    started = time.perf_counter()
    core.cycle()
    cold = time.perf_counter() - started
    core.clock.time += 1.0  # type: ignore[attr-defined]
    core.finish(next(iter(core.running)))
    started = time.perf_counter()
    core.cycle()
    return cold, time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--pending", type=int, default=1000)
    parser.add_argument("--cluster", default="pollux-64")
    parser.add_argument("--policies", default="fifo,sjf,srtf,backfill,tiresias")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    print(f"{args.pending} pending jobs on {args.cluster}, median of {args.repeats}")
    for policy in args.policies.split(","):
        runs = [time_cycles(policy, args.cluster, args.pending, seed)
                for seed in range(args.repeats)]
        cold = statistics.median(r[0] for r in runs) * 1000
        warm = statistics.median(r[1] for r in runs) * 1000
        print(f"{policy:>10}: cold cycle {cold:7.2f} ms   after a finish {warm:7.2f} ms")


if __name__ == "__main__":
    main()
