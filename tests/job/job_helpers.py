"""Run the examples as the service would: one process group per worker, the contract's
environment, SIGTERM to every group to preempt."""

from __future__ import annotations

import json
import os
import queue
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
STEP_LINE = re.compile(r"^step (\d+) ")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def worker_env(rank: int, world_size: int, port: int, checkpoint_dir: Path,
               attempt: int, service_url: str | None = None,
               extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {name: value for name, value in os.environ.items()
           if not name.startswith("DLSCHED_")
           and name not in {"RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT"}}
    env.update({
        "DLSCHED_JOB_ID": "job-test", "DLSCHED_ATTEMPT": str(attempt), "RANK": str(rank),
        "WORLD_SIZE": str(world_size), "LOCAL_RANK": str(rank), "MASTER_ADDR": "127.0.0.1",
        "MASTER_PORT": str(port), "CUDA_VISIBLE_DEVICES": "",
        "DLSCHED_CHECKPOINT_DIR": str(checkpoint_dir), "DLSCHED_GRACE_SECONDS": "10",
    })
    if service_url:
        env["DLSCHED_SERVICE_URL"] = service_url
    env.update(extra or {})
    return env


class Workers:
    """The workers of one attempt of one example job; rank 0's stdout is followed line by line."""

    def __init__(self, example: str, checkpoint_dir: Path, args: list[str], world_size: int = 1,
                 attempt: int = 1, service_url: str | None = None,
                 extra_env: dict[str, str] | None = None) -> None:
        port = free_port()
        self.lines: list[str] = []
        self._queue: queue.Queue[str | None] = queue.Queue()
        self.processes = [
            subprocess.Popen(
                [sys.executable, str(EXAMPLES / example), *args],
                env=worker_env(rank, world_size, port, checkpoint_dir, attempt, service_url,
                               extra_env),
                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                start_new_session=True)  # its own process group, as the service starts it
            for rank in range(world_size)]
        for rank, process in enumerate(self.processes):
            threading.Thread(target=self._follow, args=(rank, process), daemon=True).start()

    def _follow(self, rank: int, process: subprocess.Popen[str]) -> None:
        assert process.stdout is not None
        for line in process.stdout:
            if rank == 0:
                self._queue.put(line.rstrip("\n"))
            else:
                self.lines.append(f"[rank {rank}] {line.rstrip()}")
        if rank == 0:
            self._queue.put(None)

    def wait_for_step(self, step: int, timeout: float = 30.0) -> int:
        """Block until rank 0 printed a step >= ``step``; returns the step it printed."""
        deadline = time.monotonic() + timeout
        while (left := deadline - time.monotonic()) > 0:
            try:
                line = self._queue.get(timeout=left)
            except queue.Empty:
                break
            if line is None:
                raise AssertionError("rank 0 exited early:\n" + self.output())
            self.lines.append(line)
            match = STEP_LINE.match(line)
            if match and int(match.group(1)) >= step:
                return int(match.group(1))
        raise AssertionError(f"no step {step} within {timeout} s:\n" + self.output())

    def terminate(self, ranks: list[int] | None = None) -> None:
        """What the service does to preempt: SIGTERM to each worker's process group (or only
        to ``ranks``: the signal reaches the workers at different moments anyway)."""
        for rank, process in enumerate(self.processes):
            if ranks is None or rank in ranks:
                os.killpg(process.pid, signal.SIGTERM)

    def wait(self, timeout: float = 60.0) -> list[int]:
        try:
            codes = [process.wait(timeout=timeout) for process in self.processes]
        finally:
            self.kill()
        while (line := self._drain()) is not None:
            self.lines.append(line)
        return codes

    def _drain(self) -> str | None:
        try:
            return self._queue.get(timeout=5.0)
        except queue.Empty:
            return None

    def __enter__(self) -> Workers:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.kill()  # a failed test leaves no worker behind

    def kill(self) -> None:
        for process in self.processes:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()

    def output(self) -> str:
        return "\n".join(self.lines)


def run_to_end(example: str, checkpoint_dir: Path, args: list[str], world_size: int = 1,
               attempt: int = 1, service_url: str | None = None) -> tuple[list[int], str]:
    workers = Workers(example, checkpoint_dir, args, world_size, attempt, service_url)
    return workers.wait(), workers.output()


class ProgressServer:
    """A stand-in for the service's progress endpoint on a free local port; records requests."""

    def __init__(self, status: int = 200) -> None:
        self.requests: list[tuple[str, dict[str, str], bytes]] = []
        records, code = self.requests, status

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (the name http.server calls)
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                records.append((self.path, dict(self.headers.items()), body))
                self.send_response(code)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        threading.Thread(target=self._server.serve_forever, args=(0.05,), daemon=True).start()

    def bodies(self) -> list[dict[str, object]]:
        return [json.loads(body) for _, _, body in self.requests]

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
