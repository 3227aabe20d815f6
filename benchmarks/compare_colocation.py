"""Co-location under interference (issue 15 item 3): no sharing vs naive packing vs packing with
an interference limit vs interference-aware packing, on one-GPU jobs of Gavel's job types.

Run on demand: ``python benchmarks/compare_colocation.py [--jobs 300] [--gpus 16]
[--load 1.3] [--seeds 0,1,2]``. The workload: jobs of a uniformly drawn Gavel job type (every
type measured on V100 at scale factor 1, co-located pairs included), an isolated run time
log-uniform in [20 min, 4 h] turned into steps with Gavel's V100 rate, Poisson arrivals whose
rate offers ``load`` times the cluster's GPUs. Throughput model ``gavel``: a packed pair runs at
Gavel's measured co-located rates (OSDI'20 §3.1). Restart overhead 30 s (a host restarting at
half a share pays it). Prints mean JCT (h) per policy and seed, and the mean over seeds.
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np

POLICIES = ("fifo", "pack-naive", "pack-limit", "pack-aware")


def workload(jobs: int, gpus: int, load: float, seed: int) -> tuple:
    from dlsched.perf.gavel_table import estimate, job_types, load_colocated, load_isolated
    from dlsched.workload.job import JobSpec, WorkUnit
    from dlsched.workload.trace import Trace

    isolated = load_isolated()
    paired = {key[2] for key in load_colocated() if key[0] == "v100" and key[1] == 1}
    kinds = [(m, b) for m, b in job_types()
             if (m.casefold(), b) in paired and isolated[("v100", (m.casefold(), b))][1] > 0]
    rng = np.random.default_rng(seed)
    hours = np.exp(rng.uniform(math.log(1 / 3), math.log(4.0), jobs))
    gap = float(np.mean(hours)) * 3600 / (gpus * load)
    arrivals = np.cumsum(rng.exponential(gap, jobs)) - gap
    specs = []
    for i in range(jobs):
        model, batch = kinds[int(rng.integers(len(kinds)))]
        rate = estimate(isolated[("v100", (model.casefold(), batch))], 1)
        specs.append(JobSpec(f"j{i}", max(0.0, float(arrivals[i])), 1,
                             float(hours[i]) * 3600 * rate, WorkUnit.ITERATIONS,
                             model=model, batch_size=batch))
    return Trace(f"colocation-{seed}", tuple(specs), throughput="gavel"), len(kinds)


def run(policy: str, trace: object, gpus: int) -> tuple[float, int, float]:
    from dlsched.cluster.cluster import Cluster, Node
    from dlsched.report.metrics import summarize
    from dlsched.scheduling.registry import build_policy
    from dlsched.sim.simulator import SimConfig, Simulator

    cluster = Cluster("v100x", tuple(Node(f"n{i}", "V100", 4) for i in range(gpus // 4)))
    sim = Simulator(cluster, trace, build_policy(policy), SimConfig())  # type: ignore[arg-type]
    summary = summarize(sim.run())
    packings = getattr(sim.profile.queue_sort, "packings", 0)
    return summary.jct_mean / 3600, packings, summary.makespan / 3600


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--jobs", type=int, default=300)
    parser.add_argument("--gpus", type=int, default=16)
    parser.add_argument("--load", type=float, default=1.3)
    parser.add_argument("--seeds", default="0,1,2")
    args = parser.parse_args()
    means: dict[str, list[float]] = {p: [] for p in POLICIES}
    for seed in (int(s) for s in args.seeds.split(",")):
        trace, kinds = workload(args.jobs, args.gpus, args.load, seed)
        for policy in POLICIES:
            start, cpu = time.perf_counter(), time.process_time()
            jct, packings, span = run(policy, trace, args.gpus)
            means[policy].append(jct)
            print(f"seed {seed} {policy:11s} mean JCT {jct:7.2f} h  makespan {span:7.2f} h  "
                  f"packings {packings:4d}  ({time.perf_counter() - start:.1f} s wall, "
                  f"{time.process_time() - cpu:.1f} s CPU; {kinds} job types)")
    for policy, values in means.items():
        print(f"{policy:11s} mean JCT over seeds {np.mean(values):7.2f} h")


if __name__ == "__main__":
    main()
