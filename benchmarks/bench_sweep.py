"""Benchmark: ``dlsched sweep`` of 5 policies × 3 traces × 5 seeds (75 runs), serially, on
local processes and on a 3-node Ray cluster started here (``ray_local``), with the same
results table each way (issue 18 item 4).

Run on demand: ``python benchmarks/bench_sweep.py [--modes serial,local,ray] [--workers 2]
[--jobs 200]``. Each mode starts from an empty output folder. Prints one JSON line per mode
(wall seconds, CPU seconds of this process and its reaped children: the local pool's workers
are counted, Ray's worker processes are not), then whether every mode's table equals the
serial one (the metrics that do not measure the host).
"""

from __future__ import annotations

import argparse
import json
import resource
import tempfile
import time
from pathlib import Path

import pandas as pd

POLICIES = ("fifo", "sjf", "srtf", "tiresias", "backfill")
TRACES = ("synthetic:philly-sample", "synthetic:pollux-1", "synthetic:elasticflow-195")
COMPARED = ["trace", "policy", "seed", "key", "jobs_finished", "jct_mean", "jct_p99",
            "makespan", "utilization", "preemptions"]


def cpu_seconds() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def run(mode: str, out: Path, workers: int, jobs: int) -> tuple[pd.DataFrame, dict]:
    import dlsched

    grid = {"traces": TRACES, "clusters": ["pollux-64"], "policies": POLICIES,
            "seeds": range(5), "options": {"synthetic_jobs": jobs, "synthetic_rate": 300},
            "out": out, "plots": False}
    started, cpu = time.perf_counter(), cpu_seconds()
    if mode == "ray":
        from dlsched.runtime.executors.ray_local import local_ray_cluster

        with local_ray_cluster(("generic",) * 3, gpus_per_node=1, cpus_per_node=1) as nodes:
            ready = time.perf_counter()
            table = dlsched.sweep(**grid, ray_address=nodes.address)
            sweep_wall = time.perf_counter() - ready
    else:
        table = dlsched.sweep(**grid, workers=1 if mode == "serial" else workers)
        sweep_wall = time.perf_counter() - started
    figures = {"mode": mode, "runs": len(table), "wall_s": round(time.perf_counter() - started,
                                                                  1),
               "sweep_wall_s": round(sweep_wall, 1),
               "cpu_s": round(cpu_seconds() - cpu, 1), "workers": workers}
    return table, figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--modes", default="serial,local,ray")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--jobs", type=int, default=200)
    args = parser.parse_args()
    tables = {}
    with tempfile.TemporaryDirectory(prefix="bench-sweep-") as folder:
        for mode in args.modes.split(","):
            tables[mode], figures = run(mode, Path(folder) / mode, args.workers, args.jobs)
            print(json.dumps(figures), flush=True)
    first, *others = tables
    same = {mode: tables[first][COMPARED].equals(tables[mode][COMPARED]) for mode in others}
    print(json.dumps({"same_table_as": first, **same}))


if __name__ == "__main__":
    main()
