"""Helpers of the runtime tests (not fixtures): worker commands, waiting, clean-up."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from dlsched.runtime.service import Service

WORKER = Path(__file__).parent / "workers" / "worker.py"


def worker(mode: str, out: Path, arg: float | None = None) -> list[str]:
    return [sys.executable, str(WORKER), mode, str(out), *([] if arg is None else [str(arg)])]


def wait_for(predicate: Callable[[], Any], timeout: float = 15.0, what: str = "") -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.03)
    value = predicate()  # once more: a slow check (an HTTP call) may have run only once
    if value:
        return value
    raise AssertionError(f"timed out after {timeout} s waiting for {what or predicate}")


def records(out: Path, job_id: str) -> list[dict[str, Any]]:
    """What each worker of a job wrote when it started, by attempt then rank."""
    return [json.loads(p.read_text()) for p in sorted(out.glob(f"{job_id}-a*-r*.json"))]


def kill_strays(root: Path) -> None:
    """SIGKILL the process group of every live process that is a worker under ``root``."""
    proc = Path("/proc")
    if not proc.is_dir():
        return
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            environ = (entry / "environ").read_bytes().split(b"\0")
            if any(item.startswith(b"DLSCHED_CHECKPOINT_DIR=" + str(root).encode())
                   for item in environ):
                os.killpg(os.getpgid(int(entry.name)), signal.SIGKILL)


def crash(service: Service) -> None:
    """What ``kill -9`` leaves: the loop stops dead after its iteration, nothing is stopped,
    requeued or drained; the workers run on."""
    service._stop.set()
    service.wake.set()
    assert service._thread is not None
    service._thread.join(timeout=10)
    service.store.close()
    service.dir_lock.release()  # as the kernel does when a process dies


@dataclass
class Live:
    """A service behind a real HTTP server (uvicorn in a thread, on a free port)."""

    service: Service
    url: str
    http: httpx.Client


def service_info(path: Path) -> dict | None:
    """The service's service.json, or None while it is not (completely) written."""
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def job_statuses(url: str) -> dict[str, str]:
    return {j["id"]: j["status"] for j in httpx.get(f"{url}/v1/jobs", timeout=30).json()}
