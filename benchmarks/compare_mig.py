"""MIG placement (issue 15 item 2): first fit vs MIG-aware on a mixed MIG workload.

Run on demand: ``python benchmarks/compare_mig.py [--gpus 16] [--jobs 3000]
[--loads 0.9,1.0] [--seeds 0,1,2] [--core]``; ``--core`` runs the same jobs through the
scheduler core (``dlsched simulate``'s path: FIFO letting later jobs try, the core's MIG book)
instead of the standalone MIG model. A100 40 GB GPUs. Jobs: long-lived small instances (1g 40 %,
2g 20 %, mean 8 h: inference services, notebooks) and short large ones (3g 15 %, 4g 15 %, 7g
10 %, mean 1 h: training), exponential durations, Poisson arrivals offering ``load`` times the
compute slices. Counted up to the last arrival: large profiles (3g and above) placed, the mean
wait of 7g jobs, compute-slice utilization, drains and MIG reconfigurations (instances created
or destroyed).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

MIX = np.array([0.4, 0.2, 0.15, 0.15, 0.1])
HOURS = np.array([8.0, 8.0, 1.0, 1.0, 1.0])
COMPUTE = np.array([1, 2, 3, 4, 7])


def workload(jobs: int, gpus: int, load: float, seed: int) -> list:
    from dlsched.mig.profiles import profiles_of
    from dlsched.mig.run import MigJob

    profiles = profiles_of("a100")
    rng = np.random.default_rng(seed)
    kinds = rng.choice(len(MIX), size=jobs, p=MIX)
    durations = rng.exponential(HOURS[kinds] * 3600)
    rate = gpus * 7 * load / float((MIX * COMPUTE * HOURS * 3600).sum())
    arrivals = np.cumsum(rng.exponential(1 / rate, jobs))
    return [MigJob(f"j{i}", float(arrivals[i]), float(durations[i]), profiles[kinds[i]])
            for i in range(jobs)]


def main() -> None:
    from dlsched.mig.placement import placer
    from dlsched.mig.profiles import profiles_of

    parser = argparse.ArgumentParser()
    parser.add_argument("--gpus", type=int, default=16)
    parser.add_argument("--jobs", type=int, default=3000)
    parser.add_argument("--loads", default="0.9,1.0")
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--core", action="store_true", help="through the scheduler core")
    args = parser.parse_args()
    for load in (float(x) for x in args.loads.split(",")):
        totals: dict[str, list[tuple[float, ...]]] = {}
        for seed in (int(s) for s in args.seeds.split(",")):
            jobs = workload(args.jobs, args.gpus, load, seed)
            horizon = max(j.submit_time for j in jobs)
            for name in ("first-fit", "mig-aware"):
                cpu = time.process_time()
                report = (_run_core(jobs, args.gpus, name, horizon) if args.core
                          else _run(jobs, args.gpus, placer(name, profiles_of()), horizon))
                row = (report.large_placed, report.mean_wait_by_profile.get("7g.40gb", 0) / 3600,
                       report.slice_utilization, report.drains, report.reconfigurations)
                totals.setdefault(name, []).append(row)
                print(f"load {load} seed {seed} {name:9s} large placed {row[0]:5d}  7g wait "
                      f"{row[1]:6.2f} h  slices used {row[2]:.3f}  drains {row[3]:4d}  "
                      f"reconfigurations {row[4]:5d}  ({time.process_time() - cpu:.1f} s CPU)",
                      flush=True)
        for name, rows in totals.items():
            mean = [float(np.mean(col)) for col in zip(*rows, strict=True)]
            print(f"load {load} {name:9s} mean: large placed {mean[0]:.1f}, 7g wait "
                  f"{mean[1]:.2f} h, slices used {mean[2]:.3f}, drains {mean[3]:.1f}")


def _run(jobs: list, gpus: int, chosen: object, horizon: float) -> object:
    from dlsched.mig.run import run_mig

    return run_mig(jobs, gpus, chosen, until=horizon)  # type: ignore[arg-type]


def _run_core(jobs: list, gpus: int, placement: str, horizon: float) -> object:
    """The jobs as ``JobSpec``s (``mig_profile``) through the simulator up to ``horizon``; a
    ``MigReport`` of what it placed."""
    from dlsched.cluster.cluster import Cluster, Node
    from dlsched.mig.run import MigReport
    from dlsched.scheduling.registry import build_policy
    from dlsched.sim.simulator import SimConfig, Simulator
    from dlsched.workload.job import JobSpec
    from dlsched.workload.trace import Trace

    specs = tuple(JobSpec(j.job_id, j.submit_time, 1, max(j.duration, 1e-3),
                          gpu_share=j.profile.compute / 7, mig_profile=j.profile.name)
                  for j in sorted(jobs, key=lambda j: (j.submit_time, j.job_id)))
    cluster = Cluster("a100", tuple(Node(f"n{i}", "A100", 8) for i in range(-(-gpus // 8))))
    sim = Simulator(cluster, Trace("mig", specs), build_policy("fifo", {"strict": False}),
                    SimConfig(restart_overhead=0.0, max_time=horizon, mig_placement=placement))
    result = sim.run()
    profile = {j.job_id: j.profile.name for j in jobs}
    waits: dict[str, list[float]] = {}
    for record in result.jobs:
        if record.first_start is not None:
            waits.setdefault(profile[record.job_id], []).append(
                record.first_start - record.submit_time)
    book = sim.core.mig.report(horizon)  # type: ignore[union-attr]
    report = MigReport(placement, gpus, len(jobs))
    report.placed_by_profile = {k: len(v) for k, v in sorted(waits.items())}
    report.mean_wait_by_profile = {k: sum(v) / len(v) for k, v in waits.items()}
    report.compute_slice_seconds, report.end_time = float(book["compute_slice_seconds"]), horizon
    report.drains, report.reconfigurations = int(book["drains"]), int(book["reconfigurations"])
    return report


if __name__ == "__main__":
    main()
