"""Test workers the local executor runs (stdlib only, so they start fast).

``python worker.py MODE OUT [ARG]``; every worker first writes ``OUT/JOB-aATTEMPT-rRANK.json``
with its environment contract and start time.

- ``sleep OUT SECONDS``: sleep, exit 0.
- ``fail OUT``: rank 0 exits 1 once every rank has started; the others sleep (the executor
  must kill them).
- ``preemptible OUT SECONDS``: on SIGTERM save a checkpoint and write ``.sigterm``, exit 0; a
  run that finds the checkpoint writes ``.resumed`` and exits 0 at once.
- ``stubborn OUT``: ignores SIGTERM, sleeps (must be SIGKILLed after the grace period).
- ``steps OUT N``: N steps of 0.1 s, checkpointed after each; resumes from the checkpoint; holds
  a lock per rank (a second concurrent run writes ``JOB.double``); rank 0 appends a line to
  ``JOB.done`` when it completes the last step.
- ``once OUT SECONDS``: a job that does NOT guard itself (no checkpoint, no marker, default
  signal handling): sleep, then rank 0 appends ``attempt N`` to ``OUT/JOB.done``. A second run
  after it completed appends a second line.
- ``elastic OUT N``: data-parallel stand-in: N global steps of 0.4 s / WORLD_SIZE, rank 0 keeps
  the step in the checkpoint directory (saved after each step) under an exclusive lock (a second
  run at once writes ``JOB.double``); SIGTERM stops it between steps, exit 0. Rank 0 appends
  ``{"attempt", "world", "from", "to"}`` to ``JOB.steps``; the other ranks wait for rank 0.
"""

from __future__ import annotations

import fcntl
import json
import os
import signal
import sys
import time
from pathlib import Path

CONTRACT = ("DLSCHED_JOB_ID", "DLSCHED_ATTEMPT", "RANK", "WORLD_SIZE", "LOCAL_RANK",
            "MASTER_ADDR", "MASTER_PORT", "CUDA_VISIBLE_DEVICES", "DLSCHED_CHECKPOINT_DIR",
            "DLSCHED_SERVICE_URL", "DLSCHED_TOKEN", "DLSCHED_GRACE_SECONDS", "LOCAL_WORLD_SIZE",
            "DLSCHED_NODE", "DLSCHED_RAY_NODE_ID", "DLSCHED_CHECKPOINT_SECONDS",
            # a fractional / MIG / CPU-asking job's (dlsched/runtime/executors/sharing.py)
            "DLSCHED_GPU_SHARE", "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE",
            "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT", "DLSCHED_GPU_MEMORY_GB",
            "DLSCHED_GPU_MEMORY_FRACTION", "DLSCHED_MIG_PROFILE", "DLSCHED_MIG_START",
            "DLSCHED_CPUS", "OMP_NUM_THREADS")


def env(name: str) -> str:
    return os.environ.get(name, "")


def stem() -> str:
    return f"{env('DLSCHED_JOB_ID')}-a{env('DLSCHED_ATTEMPT')}-r{env('RANK')}"


def record(out: Path) -> None:
    """Written after the worker's signal handling is set up: a test may signal it next."""
    info = {name: os.environ.get(name) for name in CONTRACT}
    info.update(started=time.time(), pid=os.getpid())
    save(out / f"{stem()}.json", json.dumps(info))  # whole or absent for a reader
    print(f"worker {stem()} cuda={info['CUDA_VISIBLE_DEVICES']}", flush=True)


def save(path: Path, text: str) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(text)
    tmp.replace(path)


def preemptible(out: Path, seconds: float) -> None:
    checkpoint = Path(env("DLSCHED_CHECKPOINT_DIR")) / f"ckpt-r{env('RANK')}"

    def on_term(_signum: int, _frame: object) -> None:
        save(checkpoint, stem())
        (out / f"{stem()}.sigterm").write_text("")
        sys.exit(0)

    signal.signal(signal.SIGTERM, on_term)
    record(out)
    if checkpoint.exists():
        (out / f"{stem()}.resumed").write_text(checkpoint.read_text())
        time.sleep(0.2)
        return
    time.sleep(seconds)


def steps(out: Path, total: int) -> None:
    ckpt = Path(env("DLSCHED_CHECKPOINT_DIR"))
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))  # checkpoint is saved every step
    record(out)
    lock = open(ckpt / f"lock-r{env('RANK')}", "w")  # noqa: SIM115 (held until exit)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        (out / f"{env('DLSCHED_JOB_ID')}.double").write_text("two runs at once\n")
        sys.exit(3)
    state = ckpt / f"step-r{env('RANK')}"
    step = int(state.read_text()) if state.exists() else 0
    if step >= total:
        return
    while step < total:
        time.sleep(0.1)
        step += 1
        save(state, str(step))
    if env("RANK") == "0":
        with open(out / f"{env('DLSCHED_JOB_ID')}.done", "a") as done:
            done.write(f"attempt {env('DLSCHED_ATTEMPT')}\n")


def elastic(out: Path, total: int) -> None:
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(True))
    record(out)
    job, attempt, world = env("DLSCHED_JOB_ID"), env("DLSCHED_ATTEMPT"), int(env("WORLD_SIZE"))
    finished = out / f"{job}-a{attempt}.finished"
    if env("RANK") != "0":
        while not (stop or finished.exists()):
            time.sleep(0.05)
        return
    ckpt = Path(env("DLSCHED_CHECKPOINT_DIR"))
    lock = open(ckpt / "lock", "w")  # noqa: SIM115 (held until exit)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        (out / f"{job}.double").write_text("two runs at once\n")
        sys.exit(3)
    state = ckpt / "step"
    start = step = int(state.read_text()) if state.exists() else 0
    while step < total and not stop:
        time.sleep(0.4 / world)
        step += 1
        save(state, str(step))
    with open(out / f"{job}.steps", "a") as log:
        log.write(json.dumps({"attempt": int(attempt), "world": world, "from": start,
                              "to": step}) + "\n")
    if step >= total:
        finished.write_text("")


def main() -> None:
    mode, out = sys.argv[1], Path(sys.argv[2])
    arg = float(sys.argv[3]) if len(sys.argv) > 3 else 0.0
    if mode == "sleep":
        record(out)
        time.sleep(arg)
    elif mode == "fail":
        record(out)
        if env("RANK") != "0":
            time.sleep(60)
        expected = int(env("WORLD_SIZE") or 1)  # fail once every rank has started
        deadline = time.monotonic() + 120  # a loaded machine may start a rank late
        while len(list(out.glob(f"{env('DLSCHED_JOB_ID')}-a{env('DLSCHED_ATTEMPT')}-r*.json"))) \
                < expected and time.monotonic() < deadline:
            time.sleep(0.02)
        sys.exit(1)
    elif mode == "preemptible":
        preemptible(out, arg)
    elif mode == "stubborn":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        record(out)
        time.sleep(60)
    elif mode == "steps":
        steps(out, int(arg))
    elif mode == "elastic":
        elastic(out, int(arg))
    elif mode == "once":
        record(out)
        time.sleep(arg)
        if env("RANK") == "0":
            with open(out / f"{env('DLSCHED_JOB_ID')}.done", "a") as done:
                done.write(f"attempt {env('DLSCHED_ATTEMPT')}\n")
    else:
        sys.exit(f"unknown mode {mode}")


if __name__ == "__main__":
    main()
