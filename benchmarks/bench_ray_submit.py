"""Benchmark: submit -> running with the Ray executor, on a 3-node Ray cluster with fake GPUs
started on this machine (``dlsched.runtime.executors.ray_local``).

Run on demand: ``python benchmarks/bench_ray_submit.py [--jobs 10] [--gpus 1,2,4]``.
The service runs in this process (no HTTP: ``commands.submit``). For each size, JOBS jobs are
submitted one at a time on a free cluster; the latency is from the submission to the moment
the first worker process runs (it writes ``time.time()`` first thing), which includes the
cycle, the placement group, one new Ray worker process per actor and the worker's Python
start-up. Target: <= 5 s. Prints one JSON line.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

STAMP = ("import os, sys, time; open(os.path.join(sys.argv[1], os.environ['DLSCHED_JOB_ID'] "
         "+ '-' + os.environ['RANK']), 'w').write(repr(time.time()))")


def measure(service: object, sizes: list[int], jobs: int, out: Path) -> dict[str, object]:
    from dlsched.runtime.commands import submit
    from dlsched.runtime.models import SubmitRequest

    result: dict[str, object] = {}
    for gpus in sizes:
        latencies = []
        for _ in range(jobs):
            submitted = time.time()
            row = submit(service, SubmitRequest(  # type: ignore[arg-type]
                command=[sys.executable, "-c", STAMP, str(out)], gpus=gpus))
            stamps = [out / f"{row.id}-{rank}" for rank in range(gpus)]
            deadline = time.monotonic() + 60
            while not all(p.exists() and p.read_text() for p in stamps):
                if time.monotonic() > deadline:
                    raise SystemExit(f"{row.id} did not start within 60 s")
                time.sleep(0.01)
            latencies.append(min(float(p.read_text()) for p in stamps) - submitted)
            time.sleep(0.5)  # let it finish and its placement group go
        result[f"{gpus}_gpus"] = {"p50_s": round(statistics.median(latencies), 3),
                                  "max_s": round(max(latencies), 3)}
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=10)
    parser.add_argument("--gpus", default="1,2,4")
    args = parser.parse_args()
    sizes = [int(g) for g in args.gpus.split(",")]

    from dlsched.runtime.executors.ray_cluster import connect
    from dlsched.runtime.executors.ray_local import local_ray_cluster
    from dlsched.runtime.service import Service, ServiceConfig

    started = time.monotonic()
    with local_ray_cluster(("T4", "T4", "T4")), tempfile.TemporaryDirectory() as tmp:
        cluster_seconds = time.monotonic() - started
        ray_cluster = connect(None)
        service = Service(ServiceConfig(ray_cluster.cluster, Path(tmp) / "data",
                                        poll_seconds=0.05, ray_cluster=ray_cluster))
        service.start()
        try:
            out = Path(tmp) / "out"
            out.mkdir()
            result = measure(service, sizes, args.jobs, out)
        finally:
            service.shutdown()
    print(json.dumps({"cluster_start_s": round(cluster_seconds, 1), "jobs_per_size": args.jobs,
                      **result}))


if __name__ == "__main__":
    main()
