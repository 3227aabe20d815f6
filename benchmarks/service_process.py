"""Start ``dlsched serve`` as a separate process and wait until it answers ``/healthz``
(shared by the runtime benchmarks; run them from the repository root)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import IO

import httpx


def start_service(data: Path, options: Sequence[str], output: IO[bytes] | int | None = None,
                  timeout: float = 60.0) -> tuple[subprocess.Popen[bytes], str]:
    """``dlsched serve --port 0 --data-dir DATA OPTIONS``; returns the process and its URL.
    A ``service.json`` left by an earlier run in ``data`` is removed first."""
    (data / "service.json").unlink(missing_ok=True)
    proc = subprocess.Popen(
        [sys.executable, "-m", "dlsched.runtime.cli", "serve", "--port", "0",
         "--data-dir", str(data), *options],
        stdout=subprocess.DEVNULL if output is None else output,
        stderr=subprocess.DEVNULL if output is None else subprocess.STDOUT)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            url = json.loads((data / "service.json").read_text())["url"]
            if httpx.get(f"{url}/healthz", timeout=30).status_code == 200:
                return proc, url
        except (OSError, ValueError, httpx.HTTPError):
            pass
        time.sleep(0.1)
    proc.kill()
    raise SystemExit("the service did not start")
