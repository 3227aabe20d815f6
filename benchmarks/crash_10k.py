"""Crash test at scale (issue 12): 10,000 jobs that do NOT guard themselves, submitted while the
service is ``kill -9``-ed at random moments and restarted on the same data directory.

Run on demand: ``python benchmarks/crash_10k.py [--jobs 10000] [--kills 6] [--gpus 32]
[--seed 1]``. The test suite's small version is ``tests/runtime/test_crash_restart.py``.

Each job is ``/bin/sh -c 'sleep S; echo "$DLSCHED_ATTEMPT" >> OUT/$DLSCHED_JOB_ID.done'``
(rank 0 only; S from 0.05 to 2 s, and 20 to 40 s for one job in 50, so that some run through a
restart): no checkpoint, no marker, so a second run of a job that had completed adds a second
line. Eight client threads submit every job with its own ``Idempotency-Key``
and retry, with the same key, whenever the service cannot be reached (it is being killed or
restarted): a retried request must return the first job. A killer thread sends ``kill -9`` at
a random moment (uniform in [3, 30] s after the service answers), restarts it, and repeats
``--kills`` times; the last kills land while jobs are queued, running and being submitted.

Exactly once means: as many jobs as keys (no duplicate from a retry), every job ``finished``,
and exactly one line in each ``OUT/JOB.done`` (0 lost, 0 completed twice). Prints one JSON
line with the figures and how each job's crashed attempts were settled (read from the
database after the last stop). Exit status 1 unless exactly once held.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx

JOB = ('sleep "$1"; if [ "$RANK" = 0 ]; then '
       'echo "$DLSCHED_ATTEMPT" >> "$2/$DLSCHED_JOB_ID.done"; fi')


class Service:
    """``dlsched serve`` on a fixed port (a restart binds it again), restarted after kills."""

    def __init__(self, root: Path, gpus: int) -> None:
        self.root, self.gpus = root, gpus
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            self.port = sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc: subprocess.Popen[bytes] | None = None
        self.starts = 0

    def start(self) -> float:
        log = open(self.root / f"serve-{self.starts}.log", "wb")  # noqa: SIM115
        self.starts += 1
        began = time.monotonic()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "dlsched.runtime.cli", "serve", "--gpus", str(self.gpus),
             "--port", str(self.port), "--data-dir", str(self.root / "data"),
             "--grace-seconds", "3"], stdout=log, stderr=subprocess.STDOUT)
        while time.monotonic() - began < 300:
            try:
                if httpx.get(f"{self.url}/healthz", timeout=30).status_code == 200:
                    return time.monotonic() - began
            except httpx.HTTPError:
                pass
            if self.proc.poll() is not None:
                raise SystemExit(f"the service exited: see {log.name}")
            time.sleep(0.1)
        raise SystemExit("the service did not start in 300 s")

    def kill_9(self) -> None:
        assert self.proc is not None
        os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait()

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            self.proc.wait(timeout=120)


def submit(http: httpx.Client, key: str, body: dict[str, object], counts: dict[str, int],
           lock: threading.Lock) -> str:
    """POST until the service answers, always with the same key."""
    while True:
        try:
            response = http.post("/v1/jobs", json=body, headers={"Idempotency-Key": key})
        except httpx.HTTPError:
            with lock:
                counts["retries"] += 1
            time.sleep(0.2)
            continue
        if response.status_code != 201:
            raise SystemExit(f"submit answered {response.status_code}: {response.text}")
        if response.headers.get("Idempotent-Replayed") == "true":
            with lock:
                counts["replayed"] += 1
        return str(response.json()["id"])


def _seconds(rng: random.Random, i: int) -> float:
    return rng.uniform(20.0, 40.0) if i % 50 == 7 else rng.uniform(0.05, 2.0)


def finished(url: str) -> dict[str, int]:
    jobs = httpx.get(f"{url}/v1/jobs", params={"limit": 100_000}, timeout=120).json()
    result: dict[str, int] = {}
    for job in jobs:
        result[job["status"]] = result.get(job["status"], 0) + 1
    return result


def killer(service: Service, kills: int, rng: random.Random, done: threading.Event,
           restarts: list[float]) -> None:
    for _ in range(kills):
        if done.wait(rng.uniform(3.0, 30.0)):
            return
        service.kill_9()
        restarts.append(round(service.start(), 2))


def settled(database: Path) -> dict[str, int]:
    """How the attempts that a crash interrupted were closed (messages written by recovery)."""
    with sqlite3.connect(database) as db:
        adopted = db.execute("SELECT COUNT(DISTINCT job_id) FROM events "
                             "WHERE kind = 'adopted'").fetchone()[0]
        rows = db.execute("SELECT outcome, message, COUNT(*) FROM attempts "
                          "GROUP BY outcome, message").fetchall()
    result = {"jobs_adopted": adopted}
    for outcome, message, count in rows:
        if outcome == "succeeded" and "no service" in message:
            result["completed_while_down"] = count
        elif outcome != "succeeded":
            result[f"attempts_{outcome}"] = result.get(f"attempts_{outcome}", 0) + count
    return result


def run(jobs: int, kills: int, gpus: int, seed: int, root: Path) -> dict[str, object]:
    out = root / "out"
    out.mkdir()
    rng = random.Random(seed)
    service = Service(root, gpus)
    service.start()
    started = time.monotonic()
    counts = {"retries": 0, "replayed": 0}
    lock, done, restarts = threading.Lock(), threading.Event(), []
    kill_thread = threading.Thread(target=killer, args=(service, kills, rng, done, restarts))
    kill_thread.start()
    bodies = [{"command": ["/bin/sh", "-c", JOB, "job", f"{_seconds(rng, i):.2f}", str(out)],
               "gpus": 1 + (i % 10 == 0)} for i in range(jobs)]
    with httpx.Client(base_url=service.url, timeout=120) as http, ThreadPoolExecutor(8) as pool:
        ids = list(pool.map(lambda i: submit(http, f"key-{i}", bodies[i], counts, lock),
                            range(jobs)))
    submitted = time.monotonic() - started
    deadline = time.monotonic() + 3 * 3600
    while time.monotonic() < deadline:
        try:
            state = finished(service.url)
        except (httpx.HTTPError, ValueError):
            state = {}  # being restarted
        ended = sum(state.get(s, 0) for s in ("finished", "failed", "cancelled"))
        if ended >= jobs and not kill_thread.is_alive():
            break
        if state.get("finished", 0) >= jobs:
            done.set()  # no kill left to make: stop the killer
        time.sleep(1)
    done.set()
    kill_thread.join()
    state = finished(service.url)
    elapsed = time.monotonic() - started
    service.stop()
    lines = {job_id: len((out / f"{job_id}.done").read_text().splitlines())
             if (out / f"{job_id}.done").exists() else 0 for job_id in set(ids)}
    lost = sum(1 for n in lines.values() if n == 0)
    twice = sum(1 for n in lines.values() if n > 1)
    exactly_once = (len(set(ids)) == jobs and sum(state.values()) == jobs
                    and state.get("finished") == jobs and lost == 0 and twice == 0)
    return {"jobs": jobs, "gpus": gpus, "seed": seed, "kills": len(restarts),
            "restart_seconds": restarts, "client_retries": counts["retries"],
            "replayed_submissions": counts["replayed"], "distinct_jobs": len(set(ids)),
            "statuses": state, "lost": lost, "completed_twice": twice,
            **settled(root / "data" / "dlsched.db"),
            "submit_seconds": round(submitted, 1), "total_seconds": round(elapsed, 1),
            "exactly_once": exactly_once}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=10_000)
    parser.add_argument("--kills", type=int, default=6)
    parser.add_argument("--gpus", type=int, default=32)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--keep", type=Path, help="work in this directory and keep it")
    args = parser.parse_args()
    if args.keep is not None:
        args.keep.mkdir(parents=True)
        result = run(args.jobs, args.kills, args.gpus, args.seed, args.keep)
    else:
        with tempfile.TemporaryDirectory(prefix="crash10k-") as tmp:
            result = run(args.jobs, args.kills, args.gpus, args.seed, Path(tmp))
    print(json.dumps(result))
    sys.exit(0 if result["exactly_once"] else 1)


if __name__ == "__main__":
    main()
