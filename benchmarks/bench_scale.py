"""Benchmark: synthetic Helios-sized traces at scale (issue 14 item 3).

Run on demand: ``python benchmarks/bench_scale.py --jobs 100000 [--gpus 6416] [--load 0.75]
[--policies fifo,tiresias] [--seed 0]``. The trace is SYNTHETIC (``dlsched/workload/
helios_like.py``: distributions fitted to Helios' published per-cluster summaries, not its
jobs); the cluster is ``gpus / 8`` nodes of 8 V100 in one pool. Each policy runs in its own
process; per policy it prints the generation and simulation wall and CPU seconds, jobs/s,
cycles, utilization and peak RSS. Ended jobs leave the core (``keep_finished=False``): memory
follows the jobs alive. Targets (issue 14): 3.4 M jobs on 6,416 GPUs, FIFO <= 5 min,
Tiresias <= 10 min, peak RSS <= 4 GiB; 1 M jobs on 100,000 GPUs <= 15 min. Quote the load:
the dev machine is shared.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

SUMMARY = (Path(__file__).resolve().parents[2]
           / "shared/data/clusters/helios/helios_cluster_summary.csv")


def run_one(policy: str, jobs: int, gpus: int, load: float, seed: int, summary: str) -> None:
    from dlsched.cluster.cluster import Cluster
    from dlsched.cluster.loader import NodeGroup
    from dlsched.report.metrics import timeline_integral
    from dlsched.scheduling.registry import build_policy
    from dlsched.sim.simulator import SimConfig, Simulator
    from dlsched.workload.helios_like import fit_summary, generate

    started, cpu_started = time.perf_counter(), time.process_time()
    trace = generate(jobs, gpus, load, seed, fit_summary(Path(summary)))
    nodes = tuple(NodeGroup(gpus // 8, "V100", 8, prefix="n", nodes_per_rack=32).expand())
    cluster = Cluster(f"helios-like-{gpus}", nodes)
    gen_wall, gen_cpu = time.perf_counter() - started, time.process_time() - cpu_started
    started, cpu_started = time.perf_counter(), time.process_time()
    result = Simulator(cluster, trace, build_policy(policy), SimConfig(keep_finished=False)).run()
    wall, cpu = time.perf_counter() - started, time.process_time() - cpu_started
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    timeline = result.timeline
    # over the arrivals (first to last submission): the steady state, not the drain of the
    # last long jobs
    start, last = trace.jobs[0].submit_time, trace.jobs[jobs - 1].submit_time
    used = timeline_integral(timeline.times, timeline.used_gpus, start, last)
    utilization = used / (gpus * (last - start))
    finished = finished_count(result)
    digest = schedule_digest(result)
    print(f"{policy:>10} {jobs:>9} jobs {gpus:>6} GPUs: generate {gen_wall:6.2f} s (CPU "
          f"{gen_cpu:6.2f} s); simulate {wall:8.2f} s (CPU {cpu:8.2f} s) "
          f"{jobs / cpu:7.0f} jobs/CPU-s  cycles {result.cycles}  finished {finished}  "
          f"utilization {utilization:.3f} (arrivals: {(last - start) / 86400:.1f} d)  "
          f"peak RSS {rss:.0f} MiB  digest {digest}", flush=True)


def finished_count(result: object) -> int:
    """Jobs that finished, from the ended jobs' status column and the live records (iterating
    ``result.jobs`` would make a record per job: seconds at 3.4 M jobs)."""
    jobs = result.jobs  # type: ignore[attr-defined]
    return (jobs.finished.columns["status"].count("finished")
            + sum(record.status == "finished" for record in jobs.live))


# Columns added after the digests in benchmarks/RESULTS.md were recorded, left out so that
# those digests still compare: run_seconds (session 27, total wait); min_gpus, max_gpus and
# last_gpus (session 33, elastic jobs' sizes; on this trace's rigid jobs each is num_gpus).
_NOT_DIGESTED = frozenset(("run_seconds", "min_gpus", "max_gpus", "last_gpus"))


def schedule_digest(result: object) -> str:
    """sha256 (16 hex digits) of every job's record and the timeline, read from the finished
    jobs' columns (``sim/finished.py``; a record at a time would cost minutes at 3.4 M jobs):
    equal digests, equal schedules."""
    import hashlib

    import numpy as np

    digest = hashlib.sha256()
    jobs = result.jobs  # type: ignore[attr-defined]
    finished = jobs.finished
    digest.update(np.asarray(finished.seq).tobytes())
    for name, column in finished.columns.items():
        if name in _NOT_DIGESTED:
            continue
        digest.update(name.encode())
        digest.update("\x1f".join(column).encode() if isinstance(column, list)
                      else np.asarray(column).tobytes())
    for record in jobs.live:
        digest.update(repr(record).encode())
    timeline = result.timeline  # type: ignore[attr-defined]
    for column in (timeline.times, timeline.used_gpus, timeline.waiting, timeline.running):
        digest.update(np.asarray(column).tobytes())
    return digest.hexdigest()[:16]


def arguments_problem(jobs: int, gpus: int, load: float, summary: str) -> str | None:
    """What stops the trace from being made (a size, or the summary file at its line and
    column), or None."""
    from dlsched.errors import InputError
    from dlsched.workload.helios_like import fit_summary, generation_problem

    problem = generation_problem(jobs, gpus, load)
    if problem is not None:
        return "--" + problem.replace("n_jobs", "jobs", 1)
    try:
        fit_summary(Path(summary))
    except InputError as error:
        return str(error)
    return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--jobs", type=int, default=100_000)
    parser.add_argument("--gpus", type=int, default=6416)
    parser.add_argument("--load", type=float, default=0.75, help="offered load")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--policies", default="fifo,tiresias")
    parser.add_argument("--summary", default=str(SUMMARY))
    parser.add_argument("--one", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        run_one(args.one, args.jobs, args.gpus, args.load, args.seed, args.summary)
        return
    problem = arguments_problem(args.jobs, args.gpus, args.load, args.summary)
    if problem is not None:  # one line here, not a traceback from each policy's process
        sys.exit(f"error: {problem}")
    for policy in args.policies.split(","):
        load = " ".join(f"{x:.2f}" for x in os.getloadavg())
        print(f"(load before {policy}: {load})", flush=True)
        subprocess.run([sys.executable, __file__, "--one", policy, "--jobs", str(args.jobs),
                        "--gpus", str(args.gpus), "--load", str(args.load),
                        "--seed", str(args.seed), "--summary", args.summary], check=False)


if __name__ == "__main__":
    main()
