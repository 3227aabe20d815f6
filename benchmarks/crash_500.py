"""Crash test at the issue's scale: ``kill -9`` the service with 500 jobs queued and some
running, restart it on the same SQLite file, and check that every job completes exactly once.

Run on demand: ``python benchmarks/crash_500.py [--jobs 500] [--gpus 8] [--seconds 0.2]``.
(The test suite's small version is ``tests/runtime/test_crash_restart.py``.)

Each job is this file run as ``--worker OUT SECONDS``: it takes a lock in its checkpoint
directory (a second run of the same job at the same time writes ``OUT/JOB.double``), sleeps,
then marks completion in its checkpoint directory with an exclusive create and, only if that
succeeded, appends one line to ``OUT/JOB.done`` (SIGTERM blocked around the two writes). A job
that finds the marker exits 0 at once: a rerun after the crash of an attempt that had already
completed adds nothing, as a real job resumes from a final checkpoint.

Exactly once means: every job ends ``finished``, has exactly one line in ``OUT/JOB.done`` and
no ``.double`` file exists. Prints one JSON summary line.
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
from service_process import start_service


def worker(out: Path, seconds: float) -> None:
    job_id = os.environ["DLSCHED_JOB_ID"]
    checkpoint = Path(os.environ["DLSCHED_CHECKPOINT_DIR"])
    lock = open(checkpoint / "lock", "w")  # noqa: SIM115 (held until exit)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        (out / f"{job_id}.double").write_text("two runs at once\n")
        sys.exit(3)
    if (checkpoint / "completed").exists():
        return
    time.sleep(seconds)
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
    try:
        fd = os.open(checkpoint / "completed", os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    except FileExistsError:
        return
    os.close(fd)
    with open(out / f"{job_id}.done", "a") as done:
        done.write(f"attempt {os.environ['DLSCHED_ATTEMPT']}\n")


class Service:
    def __init__(self, root: Path, gpus: int) -> None:
        self.root, self.gpus = root, gpus
        self.count = 0

    def start(self) -> tuple[subprocess.Popen[bytes], str]:
        log = open(self.root / f"serve-{self.count}.log", "wb")  # noqa: SIM115
        self.count += 1
        return start_service(self.root / "data", ["--gpus", str(self.gpus),
                                                  "--grace-seconds", "3"], log, timeout=120)


def counts(url: str) -> dict[str, int]:
    jobs = httpx.get(f"{url}/v1/jobs", params={"limit": 100_000}, timeout=60).json()
    result: dict[str, int] = {}
    for job in jobs:
        result[job["status"]] = result.get(job["status"], 0) + 1
    return result


def run(jobs: int, gpus: int, seconds: float, root: Path) -> dict[str, object]:
    out = root / "out"
    out.mkdir()
    service = Service(root, gpus)
    proc, url = service.start()
    command = [sys.executable, str(Path(__file__).resolve()), "--worker", str(out),
               str(seconds)]
    with httpx.Client(base_url=url, timeout=60) as http, ThreadPoolExecutor(8) as pool:
        ids = list(pool.map(lambda _: http.post("/v1/jobs", json={
            "command": command, "gpus": 1}).json()["id"], range(jobs)))
    while counts(url).get("finished", 0) < jobs // 20:
        time.sleep(0.05)
    before = counts(url)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    killed_at = time.monotonic()
    proc, url = service.start()
    restarted = time.monotonic() - killed_at
    while counts(url).get("finished", 0) < jobs:
        state = counts(url)
        if state.get("failed") or state.get("cancelled"):
            break
        time.sleep(0.2)
    drained = time.monotonic() - killed_at
    after = counts(url)
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=60)
    done = {job_id: len((out / f"{job_id}.done").read_text().splitlines())
            if (out / f"{job_id}.done").exists() else 0 for job_id in ids}
    exactly_once = (after.get("finished") == jobs and set(done.values()) == {1}
                    and not list(out.glob("*.double")))
    return {"jobs": jobs, "gpus": gpus, "seconds_per_job": seconds,
            "at_kill": before, "after_restart": after, "restart_seconds": round(restarted, 2),
            "kill_to_all_finished_seconds": round(drained, 2),
            "completions_per_job": sorted(set(done.values())),
            "double_runs": len(list(out.glob("*.double"))), "exactly_once": exactly_once}


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        worker(Path(sys.argv[2]), float(sys.argv[3]))
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=500)
    parser.add_argument("--gpus", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=0.2)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="crash500-") as tmp:
        result = run(args.jobs, args.gpus, args.seconds, Path(tmp))
    print(json.dumps(result))
    sys.exit(0 if result["exactly_once"] else 1)


if __name__ == "__main__":
    main()
