"""Benchmark: a whole simulated run inside the tenant model, one flavor against two (issue 19:
two flavors within 2x the one-flavor CPU; peak memory flat in cycles, <= 300 MB for 2,000 jobs
and two flavors).

Run on demand: ``python benchmarks/bench_tenancy_run.py --flavors 2 [--jobs 2000]
[--queues 10] [--fair] [--out DIR]``. The cluster has 32 nodes x 8 GPUs; with two flavors half
are V100 and half A100 and every queue has a nominal quota in both (the same total), jobs
naming no GPU type; with one flavor all are V100. Queues share one cohort with
``reclaim_within_cohort: any`` and a 10-minute minimum runtime; jobs of 1-8 GPUs arrive
Poisson, load ~1.3 (so queues form, borrow and reclaim). Prints user CPU seconds, peak RSS
(ru_maxrss) and the outcome; ``--out`` also writes the audit files (then check them with
``benchmarks/check_tenancy_invariants.py DIR``).
"""

from __future__ import annotations

import argparse
import random
import resource
import time
from pathlib import Path

import yaml

from dlsched.cluster.cluster import Cluster, Node
from dlsched.policies.fifo import fifo
from dlsched.report.metrics import summarize
from dlsched.report.output import run_identity, write_run
from dlsched.report.tenant_output import write_audit
from dlsched.sim.simulator import SimConfig, Simulator
from dlsched.tenancy.loader import parse_tenants
from dlsched.tenancy.profile import with_tenants
from dlsched.workload.job import JobSpec
from dlsched.workload.trace import Trace

NODES, GPUS = 32, 8


def cluster(flavors: int) -> Cluster:
    types = ["V100", "A100"] if flavors == 2 else ["V100"]
    return Cluster(f"bench-{flavors}f", tuple(Node(f"n{i}", types[i % len(types)], GPUS)
                                              for i in range(NODES)))


def tenants(queues: int, flavors: int, fair: bool) -> str:
    names = ["v100", "a100"][:flavors]
    per = NODES * GPUS // flavors // queues
    doc = {"flavors": [{"name": n, "gpu_types": [n.upper()]} for n in names],
           "cluster_queues": [
               {"name": f"q{i}", "cohort": "all", "quotas": {n: {"gpu": per} for n in names},
                "preemption": {"reclaim_within_cohort": "any", "min_runtime": 600}}
               for i in range(queues)],
           "fair_sharing": {"enabled": fair}}
    return yaml.safe_dump(doc, sort_keys=False)


def trace(jobs: int, queues: int, seed: int) -> Trace:
    rng = random.Random(seed)
    weights = [1 + (i % 4) for i in range(queues)]  # uneven: some queues borrow
    mean_gpus, mean_work = 3.6, 3600.0
    gap = mean_gpus * mean_work / (NODES * GPUS * 1.3)
    at, specs = 0.0, []
    for i in range(jobs):
        at += rng.expovariate(1.0 / gap)
        queue = rng.choices(range(queues), weights)[0]
        specs.append(JobSpec(f"j{i}", at, rng.choice((1, 1, 2, 4, 8)),
                             rng.expovariate(1.0 / mean_work) + 60.0, queue=f"q{queue}"))
    return Trace(f"bench-{jobs}", tuple(specs))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--flavors", type=int, choices=(1, 2), default=2)
    parser.add_argument("--jobs", type=int, default=2000)
    parser.add_argument("--queues", type=int, default=10)
    parser.add_argument("--fair", action="store_true", help="Kueue fair sharing")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    config = parse_tenants(tenants(args.queues, args.flavors, args.fair))
    profile = with_tenants(fifo(strict=False), config)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_utime
    started = time.perf_counter()
    sim = Simulator(cluster(args.flavors), trace(args.jobs, args.queues, args.seed), profile,
                    SimConfig())
    result = sim.run()
    wall = time.perf_counter() - started
    usage = resource.getrusage(resource.RUSAGE_SELF)
    s = summarize(result)
    print(f"{args.flavors} flavor(s), {args.jobs} jobs, {args.queues} queues"
          f"{', fair sharing' if args.fair else ''}: user CPU {usage.ru_utime - before:.1f} s, "
          f"wall {wall:.1f} s, peak RSS {usage.ru_maxrss / 1024:.0f} MB, {result.cycles} "
          f"cycles; mean JCT {s.jct_mean / 3600:.2f} h, {s.jobs_finished}/{s.jobs_submitted} "
          f"finished, {sum(j.preemptions for j in result.jobs)} preemptions")
    if args.out:
        write_run(result, args.out)
        write_audit(sim.core, sim.profile.queue_sort, args.out, run_identity(result.info))


if __name__ == "__main__":
    main()
