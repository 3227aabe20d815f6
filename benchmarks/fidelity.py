"""Fidelity: the same ~20 short jobs run for real (``dlsched serve``, local executor, 4 fake
GPUs) and in the simulator with the same policy; compares mean job completion time (JCT).

Run on demand: ``python benchmarks/fidelity.py [--jobs 20] [--policy fifo] [--seed 1]``.

Each job is this file run as ``--worker STEPS STEP_SECONDS``: a tiny CPU job of STEPS steps
that reports its throughput (samples/s) through the job library (``dlsched.job.Reporter``),
like a training script. Jobs arrive at seeded exponential gaps and ask for 1, 2 or 4 GPUs.

The simulator gets the real submission times and, per job, what the real run measured:
- ``throughput``: work = steps x samples per step / the samples/s the job reported (seconds at
  its GPU count, the ``linear`` model's unit), plus a start-up overhead per start and restart
  = the mean of (attempt wall time - that work) over the jobs that ran once (process start,
  first report);
- ``duration``: work = the wall time of its attempts (start-ups included, no overhead).
Jobs checkpoint every step, so a preempted one (a preemptive policy) resumes where it stopped.
Target: mean JCT within 10% of the real one. Prints one JSON line.
"""

from __future__ import annotations

import argparse
import json
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import service_process

SAMPLES_PER_STEP = 32
GPU_CHOICES = (1, 1, 1, 2, 2, 4)


def worker(steps: int, step_seconds: float) -> None:
    """Checkpoints its step after each one and resumes from it; on SIGTERM (preemption) it
    stops at the end of the step in flight and exits 0, as the job library's protocol says."""
    from dlsched.job import JobContext, Reporter

    ctx = JobContext.from_env()
    ctx.install_signal_handler()
    saved = ctx.checkpoint_dir / f"step-r{ctx.rank}"
    done = int(saved.read_text()) if saved.exists() else 0
    with Reporter(ctx, min_interval=0.2) as reporter:
        for step in range(done + 1, steps + 1):
            if ctx.stop_requested:
                return
            began = time.perf_counter()
            time.sleep(step_seconds)
            elapsed = time.perf_counter() - began
            saved.write_text(str(step))
            reporter.report(step, SAMPLES_PER_STEP / elapsed)


def workload(jobs: int, seed: int) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    arrival, result = 0.0, []
    for _ in range(jobs):
        result.append({"at": arrival, "gpus": rng.choice(GPU_CHOICES),
                       "steps": rng.randint(10, 40), "step_seconds": 0.05})
        arrival += rng.expovariate(1 / 0.6)
    return result


def start_service(root: Path, policy: str) -> tuple[subprocess.Popen[bytes], str]:
    return service_process.start_service(
        root / "data", ["--gpus", "4", "--policy", policy, "--grace-seconds", "2"])


def run_real(jobs: list[dict[str, Any]], policy: str, root: Path) -> list[dict[str, Any]]:
    proc, url = start_service(root, policy)
    ids = []
    try:
        with httpx.Client(base_url=url, timeout=60) as http:
            began = time.monotonic()
            for job in jobs:
                time.sleep(max(0.0, began + job["at"] - time.monotonic()))
                command = [sys.executable, str(Path(__file__).resolve()), "--worker",
                           str(job["steps"]), str(job["step_seconds"])]
                ids.append(http.post("/v1/jobs", json={"command": command,
                                                       "gpus": job["gpus"]}).json()["id"])
            while {http.get(f"/v1/jobs/{i}").json()["status"] for i in ids} != {"finished"}:
                time.sleep(0.2)
            return [http.get(f"/v1/jobs/{i}").json() for i in ids]
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)


def simulate(details: list[dict[str, Any]], jobs: list[dict[str, Any]], policy: str,
             works: list[float], overhead: float) -> list[float]:
    from dlsched.cluster.cluster import Cluster, Node
    from dlsched.scheduling.registry import build_policy
    from dlsched.sim.simulator import SimConfig, Simulator
    from dlsched.workload.job import JobSpec
    from dlsched.workload.trace import Trace

    origin = min(d["submitted_at"] for d in details)
    specs = tuple(JobSpec(d["id"], d["submitted_at"] - origin, job["gpus"], work)
                  for d, job, work in zip(details, jobs, works, strict=True))
    cluster = Cluster("fidelity", (Node("local", "generic", 4),))
    sim = Simulator(cluster, Trace("fidelity", specs), build_policy(policy, {}),
                    SimConfig(restart_overhead=overhead))
    sim.core.config.start_overhead = overhead  # SimConfig has no field for it yet
    return [record.jct for record in sim.run().jobs]


def compare(details: list[dict[str, Any]], jobs: list[dict[str, Any]],
            policy: str) -> dict[str, Any]:
    real = [d["finished_at"] - d["submitted_at"] for d in details]
    walls = [sum(a["ended_at"] - a["started_at"] for a in d["attempt_history"])
             for d in details]
    rates = [(d["last_progress"] or {}).get("samples_per_second") for d in details]
    if any(not rate for rate in rates):
        raise SystemExit("a job reported no throughput")
    works = [job["steps"] * SAMPLES_PER_STEP / rate
             for job, rate in zip(jobs, rates, strict=True)]
    once = [(w, k) for w, k, d in zip(walls, works, details, strict=True)
            if len(d["attempt_history"]) == 1]
    overhead = statistics.fmean(w - k for w, k in once)
    result: dict[str, Any] = {"jobs": len(jobs), "policy": policy,
                              "preempted_jobs": sum(len(d["attempt_history"]) > 1
                                                    for d in details),
                              "real_mean_jct": round(statistics.fmean(real), 3),
                              "startup_overhead": round(overhead, 3)}
    for name, sim_works, sim_overhead in (("throughput", works, overhead),
                                          ("duration", walls, 0.0)):
        simulated = simulate(details, jobs, policy, sim_works, sim_overhead)
        mean = statistics.fmean(simulated)
        result[f"sim_mean_jct_{name}"] = round(mean, 3)
        result[f"difference_{name}"] = round(abs(mean - result["real_mean_jct"])
                                             / result["real_mean_jct"], 4)
    return result


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        worker(int(sys.argv[2]), float(sys.argv[3]))
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=20)
    parser.add_argument("--policy", default="fifo")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    jobs = workload(args.jobs, args.seed)
    with tempfile.TemporaryDirectory(prefix="fidelity-") as tmp:
        details = run_real(jobs, args.policy, Path(tmp))
    result = compare(details, jobs, args.policy)
    print(json.dumps(result))
    sys.exit(0 if result["difference_throughput"] <= 0.10 else 1)


if __name__ == "__main__":
    main()
