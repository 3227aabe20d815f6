"""Synergy (issue 15 item 5): GPU-proportional CPUs and memory vs Synergy-GREEDY,
Synergy-TUNE and Synergy-OPT (``--policies`` to run a part) on a mix of CPU-hungry and
GPU-bound jobs.

Run on demand: ``python benchmarks/compare_synergy.py [--jobs 800] [--servers 16]
[--load 1.0] [--cpu-share 0.5] [--seeds 0,1,2]``. The cluster is Synergy's: servers of 8 V100,
24 CPUs and 500 GB. Jobs: (duration, GPUs) pairs drawn from Gavel's Philly distribution
(``shared/data/profiles/gavel/philly_job_distribution.csv``; durations over 24 h dropped),
the duration being at the GPU-proportional share; the model is a CPU-hungry one (alexnet,
res18, shufflenet, mobilenet, m5, res50, deepspeech) with probability ``cpu-share``, else a
GPU-bound one (bert, gnmt, lstm, transformer, vae); Poisson arrivals offering ``load`` times
the cluster's GPUs. Throughput model ``synergy``, restart overhead 30 s. Prints mean JCT (h)
per policy and seed, and the speed-up of each over ``synergy-proportional``.
"""

from __future__ import annotations

import argparse
import csv
import time
from pathlib import Path

import numpy as np

POLICIES = ("synergy-proportional", "synergy-greedy", "synergy-tune", "synergy-opt")
CPU_HUNGRY = ("alexnet", "res18", "shufflenet", "mobilenet", "m5", "res50", "deepspeech")
GPU_BOUND = ("bert", "gnmt", "lstm", "transformer", "vae")
PHILLY = (Path(__file__).resolve().parents[2]
          / "shared/data/profiles/gavel/philly_job_distribution.csv")


def workload(jobs: int, gpus: int, load: float, cpu_share: float, seed: int) -> object:
    from dlsched.workload.job import JobSpec
    from dlsched.workload.trace import Trace

    pairs = [(float(r["duration_seconds"]), int(float(r["num_gpus"])))
             for r in csv.DictReader(PHILLY.read_text().splitlines())]
    pairs = [p for p in pairs if p[0] <= 24 * 3600]
    rng = np.random.default_rng(seed)
    drawn = [pairs[int(i)] for i in rng.integers(len(pairs), size=jobs)]
    gpu_seconds = float(np.mean([d * g for d, g in drawn]))
    gap = gpu_seconds / (gpus * load)
    arrivals = np.cumsum(rng.exponential(gap, jobs)) - gap
    specs = []
    for i, (duration, size) in enumerate(drawn):
        pool = CPU_HUNGRY if rng.random() < cpu_share else GPU_BOUND
        model = pool[int(rng.integers(len(pool)))]
        specs.append(JobSpec(f"j{i}", max(0.0, float(arrivals[i])), size, duration,
                             model=model))
    return Trace(f"synergy-mix-{seed}", tuple(specs), throughput="synergy")


def run(policy: str, trace: object, servers: int) -> tuple[float, float]:
    from dlsched.cluster.cluster import Cluster, Node
    from dlsched.report.metrics import summarize
    from dlsched.scheduling.registry import build_policy
    from dlsched.sim.simulator import SimConfig, Simulator

    cluster = Cluster("synergy", tuple(Node(f"s{i}", "V100", 8, cpus=24, memory_gb=500)
                                       for i in range(servers)))
    sim = Simulator(cluster, trace, build_policy(policy), SimConfig())  # type: ignore[arg-type]
    summary = summarize(sim.run())
    return summary.jct_mean / 3600, summary.makespan / 3600


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--jobs", type=int, default=800)
    parser.add_argument("--servers", type=int, default=16)
    parser.add_argument("--load", type=float, default=1.0)
    parser.add_argument("--cpu-share", type=float, default=0.5)
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--policies", default=",".join(POLICIES))
    args = parser.parse_args()
    policies = [p for p in args.policies.split(",") if p]
    if "synergy-proportional" not in policies:
        policies.insert(0, "synergy-proportional")  # the baseline of the speed-ups
    means: dict[str, list[float]] = {p: [] for p in policies}
    for seed in (int(s) for s in args.seeds.split(",")):
        trace = workload(args.jobs, 8 * args.servers, args.load, args.cpu_share, seed)
        for policy in policies:
            start, cpu = time.perf_counter(), time.process_time()
            jct, span = run(policy, trace, args.servers)
            means[policy].append(jct)
            print(f"seed {seed} {policy:21s} mean JCT {jct:7.2f} h  makespan {span:7.2f} h  "
                  f"({time.perf_counter() - start:.1f} s wall, "
                  f"{time.process_time() - cpu:.1f} s CPU)", flush=True)
    base = np.mean(means["synergy-proportional"])
    for policy, values in means.items():
        print(f"{policy:21s} mean JCT over seeds {np.mean(values):7.2f} h  "
              f"speed-up over proportional {base / np.mean(values):.2f}x")


if __name__ == "__main__":
    main()
