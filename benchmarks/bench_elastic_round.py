"""Benchmark: one allocation round (``allocate()``) of Pollux and of Sia (issue 5).

Run on demand: ``python benchmarks/bench_elastic_round.py [--large-jobs 5000] [--repeat 3]``.

Two scales, each with jobs drawn from the bundled Pollux workloads (``pollux-1..8``, their
six applications and requested sizes) at progress uniform in 0–90 % of training:

- ``pollux-64`` (16 nodes × 4 T4) with the 160 jobs of ``pollux-1`` (Pollux and Sia);
- 2,048 GPUs: 512 nodes × 4 T4 for Pollux; for Sia the same 512 nodes split into three types
  (171 × 4 T4, 171 × 4 A100, 170 × 4 RTX 2080 Ti), with ``--large-jobs`` active jobs (5,000 by
  default, the issue's figure; Sia's paper scales its workloads with the cluster).

For each it times a *cold* round (empty goodput-curve caches, every job waiting) and a *warm*
round: the next round, 60 s later, with the jobs running where the first round put them (the
steady state of a simulation, where curves are cached per application and progress bucket).
Sia uses the per-type parameters fitted from ``$DLSCHED_DATA/profiles/sia`` when present
(``DLSCHED_DATA=../shared/data``)
(fitted once, before timing), else the bundled T4 ones. Targets: ≤ 0.1 s at 64 GPUs, ≤ 1 s at
2,048 GPUs (warm).
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from dataclasses import replace

import numpy as np

from dlsched.cluster.builtin import resolve_cluster
from dlsched.cluster.cluster import Cluster, Node
from dlsched.perf.goodput.bundle import sia_perf_params
from dlsched.perf.model import LinearScaling
from dlsched.policies.elastic import configs
from dlsched.policies.pollux import PolluxAllocator
from dlsched.policies.sia import SiaAllocator
from dlsched.scheduling.allocation import Assignment
from dlsched.scheduling.state import ClusterSnapshot, CycleState, whole_free_per_node
from dlsched.workload.bundled import resolve_trace
from dlsched.workload.job import Job, JobSpec, JobStatus

Allocator = PolluxAllocator | SiaAllocator


def pollux_specs(count: int, seed: int = 0) -> list[JobSpec]:
    """``count`` jobs drawn from the 8 Pollux workloads (in order, then resampled)."""
    pool = [s for n in range(1, 9) for s in resolve_trace(f"pollux-{n}").jobs]
    if count <= 160:
        return list(resolve_trace("pollux-1").jobs[:count])
    picks = np.random.default_rng(seed).integers(0, len(pool), count)
    return [replace(pool[i], job_id=f"j{k}", submit_time=float(k)) for k, i in enumerate(picks)]


def large_cluster(types: tuple[str, ...]) -> Cluster:
    counts = [512 // len(types) + (1 if i < 512 % len(types) else 0) for i in range(len(types))]
    return Cluster(f"large-{len(types)}", tuple(
        Node(f"{t}-{i}", t, 4) for t, n in zip(types, counts, strict=True) for i in range(n)))


def fresh_jobs(specs: list[JobSpec], seed: int = 1) -> list[Job]:
    rng = np.random.default_rng(seed)
    jobs = [Job(s) for s in specs]
    for job in jobs:
        job.done_work = rng.uniform(0.0, 0.9) * job.spec.work
    return jobs


def state_of(cluster: Cluster, jobs: list[Job], now: float) -> CycleState:
    free = np.ones(cluster.num_gpus)
    for job in jobs:
        free[list(job.allocation)] = 0.0
    snapshot = ClusterSnapshot(cluster, now, free, whole_free_per_node(cluster, free),
                               np.zeros(cluster.num_nodes, dtype=np.int64),
                               tuple(j for j in jobs if j.allocation),
                               tuple(j for j in jobs if not j.allocation), LinearScaling())
    return CycleState.begin(snapshot)


def carried_out(cluster: Cluster, jobs: list[Job], result: dict[str, Assignment]) -> list[Job]:
    """The jobs after the core applied ``result`` (each on the first free GPUs of its nodes)."""
    next_gpu = cluster.node_first_gpu.copy()
    after = []
    for job in jobs:
        fresh = Job(job.spec)
        fresh.done_work = job.done_work
        target = result.get(job.job_id)
        if target is not None:
            gpus = []
            for node in target.nodes:
                gpus.append(int(next_gpu[node]))
                next_gpu[node] += 1
            fresh.set_status(JobStatus.RUNNING)
            fresh.allocation, fresh.shares = tuple(gpus), (1.0,) * len(gpus)
        after.append(fresh)
    return after


def timed(make: Callable[[], Allocator], cluster: Cluster, specs: list[JobSpec],
          repeat: int) -> tuple[float, float, float, int]:
    """Cold and warm wall seconds, warm CPU seconds (medians of ``repeat``) and the GPUs the
    warm round allocates. CPU time is the steadier figure on a shared machine."""
    colds, warms, cpus, used = [], [], [], 0
    for _ in range(repeat):
        configs._cached_curves.cache_clear()
        policy, jobs = make(), fresh_jobs(specs)
        started = time.perf_counter()
        first = dict(policy.allocate(state_of(cluster, jobs, 3600.0)))
        colds.append(time.perf_counter() - started)
        state = state_of(cluster, carried_out(cluster, jobs, first), 3660.0)
        started, cpu_started = time.perf_counter(), time.process_time()
        second = policy.allocate(state)
        warms.append(time.perf_counter() - started)
        cpus.append(time.process_time() - cpu_started)
        used = sum(a.num_workers for a in second.values())
    return statistics.median(colds), statistics.median(warms), statistics.median(cpus), used


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--large-jobs", type=int, default=5000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    sia_params = sia_perf_params()  # fitted once (about 12 s) before any timing
    print(f"Sia parameters: {'fitted from Sia profiles' if sia_params else 'bundled T4'}")
    small, specs160 = resolve_cluster("pollux-64"), pollux_specs(160)
    big_specs = pollux_specs(args.large_jobs)
    cases = [
        ("pollux", "pollux-64", small, specs160, PolluxAllocator),
        ("sia", "pollux-64", small, specs160, lambda: SiaAllocator(perf_params=sia_params)),
        ("pollux", "512x4 T4", large_cluster(("T4",)), big_specs, PolluxAllocator),
        ("sia", "512x4, 3 types", large_cluster(("T4", "A100", "RTX2080Ti")), big_specs,
         lambda: SiaAllocator(perf_params=sia_params)),
    ]
    print(f"{'policy':>7} {'cluster':>16} {'GPUs':>5} {'jobs':>5} {'cold s':>8} {'warm s':>8} "
          f"{'warm CPU s':>10} {'GPUs used':>9}")
    for name, label, cluster, specs, make in cases:
        cold, warm, cpu, used = timed(make, cluster, specs, args.repeat)
        print(f"{name:>7} {label:>16} {cluster.num_gpus:>5} {len(specs):>5} {cold:8.3f} "
              f"{warm:8.3f} {cpu:10.3f} {used:>9}")


if __name__ == "__main__":
    main()
