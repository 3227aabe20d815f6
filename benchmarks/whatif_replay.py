"""Benchmark: what-if replay of the service's own history (issue 18 item 3).

Runs JOBS real jobs (``sleep`` for 1-5 s, 1, 2 or 4 workers, Poisson arrivals at a load of
about LOAD of the GPUs) through ``dlsched serve --policy fifo`` with the local executor on a
one-node cluster of GPUS fake GPUs, then ``dlsched history export``s the database and replays
the trace in the simulator under fifo and tiresias on the service's own cluster
(``dlsched history cluster``). Target: the fifo
replay's mean JCT within 10% of what the service measured. Prints one JSON line.

Run on demand from the repository root: ``python benchmarks/whatif_replay.py [--jobs 200]
[--gpus 8] [--load 0.85] [--seed 0] [--keep DIR]`` (about 4 minutes of wall time at the
defaults; the service polls every 0.1 s).
"""

from __future__ import annotations

import argparse
import json
import random
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
from service_process import start_service

SIZES = (1, 2, 4)


def cluster_yaml(path: Path, gpus: int) -> Path:
    path.write_text(f"name: whatif-{gpus}\nnode_groups:\n"
                    f"  - {{count: 1, prefix: n, gpu_type: V100, gpus: {gpus}}}\n")
    return path


def submit_all(url: str, jobs: int, gpus: int, load: float, seed: int) -> None:
    """Jobs arrive as a Poisson process whose rate makes the offered load ``load``."""
    rng = random.Random(seed)
    mean_gpu_seconds = (sum(SIZES) / len(SIZES)) * 3.0  # uniform 1-5 s
    rate = load * gpus / mean_gpu_seconds
    with httpx.Client(base_url=url, timeout=30) as client:
        for index in range(jobs):
            seconds = round(rng.uniform(1.0, 5.0), 2)
            body = {"command": ["sleep", str(seconds)], "gpus": rng.choice(SIZES),
                    "name": f"sleep-{index}", "queue": rng.choice(("team-a", "team-b"))}
            client.post("/v1/jobs", json=body).raise_for_status()
            time.sleep(rng.expovariate(rate))


def wait_done(url: str, jobs: int, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        rows = httpx.get(f"{url}/v1/jobs", params={"limit": jobs + 10}, timeout=30).json()
        if len(rows) >= jobs and all(r["status"] in ("finished", "failed", "cancelled")
                                     for r in rows):
            return
        time.sleep(1.0)
    raise SystemExit("the jobs did not finish in time")


def dlsched(*args: str) -> str:
    done = subprocess.run([sys.executable, "-m", "dlsched.cli", *args], capture_output=True,
                          text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(done.stdout + done.stderr)
    return done.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--jobs", type=int, default=200)
    parser.add_argument("--gpus", type=int, default=8)
    parser.add_argument("--load", type=float, default=0.85)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--keep", type=Path, default=None)
    args = parser.parse_args()
    folder = args.keep or Path(tempfile.mkdtemp(prefix="whatif-"))
    folder.mkdir(parents=True, exist_ok=True)
    data, cluster = folder / "service", cluster_yaml(folder / "cluster.yaml", args.gpus)
    data.mkdir(exist_ok=True)
    started = time.perf_counter()
    proc, url = start_service(data, ["--policy", "fifo", "--cluster", str(cluster),
                                     "--executor", "local"])
    try:
        submit_all(url, args.jobs, args.gpus, args.load, args.seed)
        wait_done(url, args.jobs, timeout=1800)
        replay_cluster = folder / "service-cluster.yaml"  # the service's own description
        dlsched("history", "cluster", "--url", url, "--out", str(replay_cluster))
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)
    served = time.perf_counter() - started
    history = folder / "history.csv"
    measured = json.loads(dlsched("history", "export", "--data-dir", str(data), "--out",
                                  str(history), "--json"))
    import dlsched as api

    replay = api.compare(trace=str(history), cluster=str(replay_cluster),
                         policies=["fifo", "tiresias"], out=folder / "replay",
                         restart_overhead=1.0)
    fifo, tiresias = (replay[p].summary for p in ("fifo", "tiresias"))
    error = fifo["jct_mean"] / measured["jct_mean"] - 1
    print(json.dumps({
        "jobs": measured["jobs"], "gpus": args.gpus, "load": args.load,
        "service_wall_s": round(served, 1),
        "measured": {k: round(v, 2) for k, v in measured.items()},
        "replay_fifo": {"jct_mean": round(fifo["jct_mean"], 2),
                        "queueing_delay_mean": round(fifo["queueing_delay_mean"], 2),
                        "makespan": round(fifo["makespan"], 2)},
        "fifo_jct_error": round(error, 4), "within_10_percent": abs(error) <= 0.10,
        "replay_tiresias": {"jct_mean": round(tiresias["jct_mean"], 2),
                            "queueing_delay_mean": round(tiresias["queueing_delay_mean"], 2),
                            "preemptions": tiresias["preemptions"]},
        "folder": str(folder)}))


if __name__ == "__main__":
    main()
