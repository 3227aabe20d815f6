"""MIG placement (issue 15 item 2): first fit vs MIG-aware on a mixed MIG workload.

Run on demand: ``python benchmarks/compare_mig.py [--gpus 16] [--jobs 3000]
[--loads 0.9,1.0] [--seeds 0,1,2]``. A100 40 GB GPUs. Jobs: long-lived small instances (1g 40 %,
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
    args = parser.parse_args()
    for load in (float(x) for x in args.loads.split(",")):
        totals: dict[str, list[tuple[float, ...]]] = {}
        for seed in (int(s) for s in args.seeds.split(",")):
            jobs = workload(args.jobs, args.gpus, load, seed)
            horizon = max(j.submit_time for j in jobs)
            for name in ("first-fit", "mig-aware"):
                cpu = time.process_time()
                report = _run(jobs, args.gpus, placer(name, profiles_of()), horizon)
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


if __name__ == "__main__":
    main()
