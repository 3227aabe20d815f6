"""Benchmark: the runtime service's submit path, through its HTTP API.

Run on demand: ``python benchmarks/bench_runtime_submit.py [--jobs 10000] [--threads 16]``.
Starts ``dlsched serve`` (local executor, 4 fake GPUs, SQLite in a temporary directory), then:
1. submit -> running: sequential one-GPU jobs on a free cluster, from the request to the moment
   the worker process runs (it writes ``time.time()`` first thing); target <= 1 s;
2. a burst of JOBS submissions from THREADS clients while a blocker holds every GPU: p50/p99
   latency per request and throughput; then checks that every accepted job is listed once
   (none lost).
"""

from __future__ import annotations

import argparse
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import service_process

STAMP = "import sys, time; open(sys.argv[1], 'w').write(repr(time.time()))"


def start_service(root: Path, policy: str) -> tuple[subprocess.Popen[bytes], str]:
    return service_process.start_service(
        root / "data", ["--gpus", "4", "--policy", policy, "--grace-seconds", "2"])


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def submit_to_running(client: httpx.Client, root: Path, count: int) -> list[float]:
    latencies = []
    for i in range(count):
        stamp = root / f"stamp-{i}"
        sent = time.time()
        job = client.post("/v1/jobs", json={"command": [sys.executable, "-c", STAMP, str(stamp)],
                                            "gpus": 1}).json()["id"]
        while not stamp.exists() or not stamp.read_text():
            time.sleep(0.002)
        latencies.append(float(stamp.read_text()) - sent)
        while client.get(f"/v1/jobs/{job}").json()["status"] != "finished":
            time.sleep(0.01)
    return latencies


def burst(url: str, jobs: int, threads: int) -> tuple[list[float], list[str], float]:
    body = {"command": ["true"], "gpus": 1}
    clients = [httpx.Client(base_url=url, timeout=60) for _ in range(threads)]

    def one(i: int) -> tuple[float, str]:
        started = time.perf_counter()
        response = clients[i % threads].post("/v1/jobs", json=body)
        response.raise_for_status()
        return time.perf_counter() - started, response.json()["id"]

    started = time.perf_counter()
    with ThreadPoolExecutor(threads) as pool:
        results = list(pool.map(one, range(jobs)))
    wall = time.perf_counter() - started
    for client in clients:
        client.close()
    return [r[0] for r in results], [r[1] for r in results], wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--jobs", type=int, default=2000)
    parser.add_argument("--threads", type=int, default=16)
    parser.add_argument("--policy", default="fifo")
    parser.add_argument("--latency-jobs", type=int, default=20)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        proc, url = start_service(Path(tmp), args.policy)
        try:
            run(url, Path(tmp), args)
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=60)


def run(url: str, root: Path, args: argparse.Namespace) -> None:
    with httpx.Client(base_url=url, timeout=60) as client:
        running = submit_to_running(client, root, args.latency_jobs)
        p50 = statistics.median(running) * 1000
        print(f"submit -> running ({len(running)} jobs): p50 {p50:.0f} ms, "
              f"max {max(running) * 1000:.0f} ms")
        client.post("/v1/jobs", json={"command": ["sleep", "3600"], "gpus": 4})  # holds the GPUs
        latencies, ids, wall = burst(url, args.jobs, args.threads)
        print(f"burst of {args.jobs} submissions, {args.threads} clients: {wall:.1f} s "
              f"({args.jobs / wall:.0f}/s); latency p50 {percentile(latencies, 0.5) * 1000:.1f}"
              f" ms, p99 {percentile(latencies, 0.99) * 1000:.1f} ms, max "
              f"{max(latencies) * 1000:.1f} ms")
        listed = [j["id"] for j in client.get("/v1/jobs", params={"limit": 100_000}).json()]
        missing = set(ids) - set(listed)
        duplicates = len(listed) - len(set(listed))
        print(f"accepted {len(set(ids))} unique ids; listed {len(listed)} jobs; missing "
              f"{len(missing)}; duplicates {duplicates}")
        if missing or duplicates or len(set(ids)) != args.jobs:
            raise SystemExit("LOST OR DUPLICATED JOBS")


if __name__ == "__main__":
    main()
