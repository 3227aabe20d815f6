"""Process helpers for executors: process groups, liveness, free ports, stray workers.

Workers run in their own session (``start_new_session``), so a worker's process group id equals
its pid and signalling the group reaches everything the worker started.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

PROC = Path("/proc")


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def signal_group(pgid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie, dead but not yet reaped, counts as gone)."""
    stat = PROC / str(pid) / "stat"
    if PROC.is_dir():
        try:
            text = stat.read_text()
        except OSError:
            return False
        return text.rpartition(")")[2].split()[:1] != ["Z"]
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _environ(pid: int) -> dict[str, str]:
    try:
        raw = (PROC / str(pid) / "environ").read_bytes()
    except OSError:
        return {}
    pairs = (item.partition(b"=") for item in raw.split(b"\0") if item)
    return {k.decode(errors="replace"): v.decode(errors="replace") for k, _, v in pairs}


def find_workers(checkpoint_dirs: Mapping[str, str]) -> list[int]:
    """Live processes whose environment marks them as workers of these jobs (job id ->
    checkpoint directory): both must match, so an unrelated process is never picked.
    Linux only (reads /proc); elsewhere it finds nothing and callers use recorded pids."""
    if not PROC.is_dir() or not checkpoint_dirs:
        return []
    found = []
    for entry in PROC.iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        env = _environ(int(entry.name))
        job_id = env.get("DLSCHED_JOB_ID")
        if job_id in checkpoint_dirs and env.get("DLSCHED_CHECKPOINT_DIR") == \
                checkpoint_dirs[job_id]:
            found.append(int(entry.name))
    return found


@dataclass(frozen=True)
class FoundWorker:
    """A live process of a job's attempt (the worker's wrapper or anything it started)."""

    pid: int
    job_id: str
    attempt: int
    rank: int
    leader: bool  # it leads its process group: the wrapper the executor started


def find_attempt_processes(checkpoint_dirs: Mapping[str, str]) -> list[FoundWorker]:
    """Like ``find_workers``, with each process's attempt (``DLSCHED_ATTEMPT``) and rank."""
    found = []
    for pid in find_workers(checkpoint_dirs):
        env = _environ(pid)
        attempt, rank = env.get("DLSCHED_ATTEMPT", ""), env.get("RANK", "")
        if attempt.isdigit() and rank.isdigit():
            with contextlib.suppress(ProcessLookupError, PermissionError):
                found.append(FoundWorker(pid, env["DLSCHED_JOB_ID"], int(attempt), int(rank),
                                         os.getpgid(pid) == pid))
    return found


# Seconds to wait for SIGKILLed processes to be gone (the kernel tears them down
# asynchronously): recovery starts jobs on their GPUs next.
KILL_WAIT_SECONDS = 2.0


def stop_processes(pids: Iterable[int], grace: float) -> None:
    """SIGTERM each process's group, wait up to ``grace`` seconds, then SIGKILL what is left
    and wait (briefly) until it is gone. Blocking: for start-up recovery and shutdown only."""
    groups = {}
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            groups[pid] = os.getpgid(pid)
    own = os.getpgrp()
    groups = {pid: pgid for pid, pgid in groups.items() if pgid != own}
    for pgid in set(groups.values()):
        signal_group(pgid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while any(alive(pid) for pid in groups) and time.monotonic() < deadline:
        time.sleep(0.05)
    for pid, pgid in groups.items():
        if alive(pid):
            signal_group(pgid, signal.SIGKILL)
    deadline = time.monotonic() + KILL_WAIT_SECONDS
    while any(alive(pid) for pid in groups) and time.monotonic() < deadline:
        time.sleep(0.01)
