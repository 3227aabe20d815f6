"""Benchmark: one scheduling cycle inside the tenant model (issue 6: <= 100 ms).

Run on demand: ``python benchmarks/bench_tenancy_cycle.py [--queues 100] [--pending 10000]
[--running 2000] [--strict] [--flavors 2]``. The cluster (``running`` x 2 GPUs, 8 per node) is
filled with 2-GPU running jobs spread unevenly over the queues (so some queues borrow), all
queues in one cohort with nominal quotas adding up to the cluster, ``reclaim_within_cohort:
any``; then ``pending`` jobs of 1-4 GPUs arrive, round-robin over the queues. Timed: the first
cycle that sees them all ("cold") and the cycle after one running job finishes ("after finish",
the runtime's common case; the freed quota and GPUs may admit or preempt). ``--flavors 2``
(issue 19): half the nodes V100, half A100, one flavor each, every queue's quota split between
them, jobs naming no GPU type.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time

import yaml

from dlsched.cluster.cluster import Cluster, Node
from dlsched.perf.model import LinearScaling
from dlsched.policies.fifo import fifo
from dlsched.scheduling.scheduler import Scheduler
from dlsched.sim.clock import SimClock
from dlsched.tenancy.loader import parse_tenants
from dlsched.tenancy.profile import with_tenants
from dlsched.workload.job import Job, JobSpec


class NullExecutor:
    def start(self, job: Job, now: float) -> None:
        pass

    def stop(self, job: Job, now: float) -> None:
        pass


def tenants_yaml(queues: int, gpus: int, strict: bool, flavors: int = 1) -> str:
    share = gpus // flavors // queues
    names = ["v100", "a100"][:flavors] if flavors > 1 else ["any"]
    doc = {"flavors": [{"name": n, **({"gpu_types": [n.upper()]} if flavors > 1 else {})}
                       for n in names],
           "cluster_queues": [
               {"name": f"q{i}", "cohort": "all",
                "queueing_strategy": "StrictFIFO" if strict else "BestEffortFIFO",
                "quotas": {n: {"gpu": share} for n in names},
                "preemption": {"reclaim_within_cohort": "any"}}
               for i in range(queues)]}
    return yaml.safe_dump(doc, sort_keys=False)


def loaded_core(queues: int, pending: int, running: int, seed: int, strict: bool,
                flavors: int = 1) -> Scheduler:
    rng = random.Random(seed)
    nodes = -(-running * 2 // 8)
    types = ("V100", "A100")[:flavors]
    cluster = Cluster("bench", tuple(Node(f"n{i}", types[i % flavors], 8)
                                     for i in range(nodes)))
    config = parse_tenants(tenants_yaml(queues, cluster.num_gpus, strict, flavors))
    clock = SimClock()
    core = Scheduler(cluster, with_tenants(fifo(strict=False), config), LinearScaling(), clock,
                     NullExecutor())
    weights = [1 + (i % 4) for i in range(queues)]  # uneven: some queues borrow
    for i in range(running):
        queue = rng.choices(range(queues), weights)[0]
        core.submit(JobSpec(f"run-{i}", 0.0, 2, 1e6, queue=f"q{queue}"))
    core.cycle()
    for i in range(pending):
        clock.time = 1000.0 + i * 0.01
        core.submit(JobSpec(f"wait-{i}", clock.time, rng.choice((1, 1, 2, 4)),
                            rng.uniform(60, 36000), queue=f"q{i % queues}"))
    clock.time += 1000.0
    return core


def time_cycles(args: argparse.Namespace, seed: int) -> tuple[float, float, int, int, float,
                                                             float]:
    """Wall and CPU (process) seconds of the cold cycle and of the cycle after a finish."""
    core = loaded_core(args.queues, args.pending, args.running, seed, args.strict,
                       args.flavors)
    started, cpu = time.perf_counter(), time.process_time()
    result = core.cycle()
    cold, cold_cpu = time.perf_counter() - started, time.process_time() - cpu
    core.clock.time += 1.0  # type: ignore[attr-defined]
    core.finish(next(iter(core.running)))
    started, cpu = time.perf_counter(), time.process_time()
    core.cycle()
    warm, warm_cpu = time.perf_counter() - started, time.process_time() - cpu
    starts = len(result.starts) if result is not None else 0
    evictions = len(result.preemptions) if result is not None else 0
    return cold, warm, starts, evictions, cold_cpu, warm_cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--queues", type=int, default=100)
    parser.add_argument("--pending", type=int, default=10_000)
    parser.add_argument("--running", type=int, default=2_000)
    parser.add_argument("--strict", action="store_true", help="StrictFIFO queues")
    parser.add_argument("--flavors", type=int, choices=(1, 2), default=1)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    runs = [time_cycles(args, seed) for seed in range(args.repeats)]
    cold = statistics.median(r[0] for r in runs) * 1000
    warm = statistics.median(r[1] for r in runs) * 1000
    cold_cpu = statistics.median(r[4] for r in runs) * 1000
    warm_cpu = statistics.median(r[5] for r in runs) * 1000
    print(f"{args.queues} queues ({'StrictFIFO' if args.strict else 'BestEffortFIFO'}), "
          f"{args.flavors} flavor(s), "
          f"{args.pending} pending, {args.running} running; median of {args.repeats}")
    print(f"cold cycle {cold:8.1f} ms ({runs[0][2]} starts, {runs[0][3]} evictions)   "
          f"after a finish {warm:8.1f} ms")
    print(f"CPU (process time): cold cycle {cold_cpu:8.1f} ms   after a finish {warm_cpu:8.1f} ms")


if __name__ == "__main__":
    main()
