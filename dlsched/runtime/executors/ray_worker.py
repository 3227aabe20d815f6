"""The Ray actor behind one worker: it runs the job's command as a subprocess on the node Ray
placed it on, with the environment contract, and reports its exit code.

The Ray executor makes this class a remote actor with ``num_cpus=0`` (its bundle holds the GPU)
and several threads, so ``wait`` (blocks until the process exits) and ``signal`` (preemption) run
at the same time. The process runs in its own session, so a signal reaches everything it
started. It is launched from a supervisor thread that lives exactly as long as the process, with
``PR_SET_PDEATHSIG`` = SIGKILL on Linux: if the actor dies (``ray.kill``, a lost node), the worker
dies with it and never runs unsupervised. The executor makes its actors detached: they outlive
a crashed service, whose restart finds them by name and adopts or stops them (``ray.py``), or
its lease stops them once the service has been gone for the orphan timeout (``ray_lease.py``).

The module imports nothing from Ray at import time; the actor runs wherever ``dlsched`` is
installed (every node of the Ray cluster).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Mapping
from pathlib import Path

from dlsched.runtime.executors.base import CannotStart, check_executable
from dlsched.runtime.executors.processes import free_port, signal_group

PR_SET_PDEATHSIG = 1
START_TIMEOUT = 30.0


def _ray_forced_threads() -> bool:
    """Whether ``OMP_NUM_THREADS`` in this actor was set by Ray, not by the node: Ray forces 1
    on an actor that asks no CPU when its raylet (the actor's parent) has no value. A worker
    must not inherit that (the local executor leaves the variable as the service has it)."""
    if "OMP_NUM_THREADS" not in os.environ or not sys.platform.startswith("linux"):
        return False
    try:
        parent = Path(f"/proc/{os.getppid()}/environ").read_bytes().split(b"\0")
    except OSError:
        return False
    return not any(item.startswith(b"OMP_NUM_THREADS=") for item in parent)


def _die_with_parent() -> None:  # runs in the child between fork and exec
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)


class WorkerProcess:
    """One worker of one attempt, inside a Ray actor."""

    def __init__(self) -> None:
        self._proc: subprocess.Popen[bytes] | None = None
        self._error: str | None = None
        self._cannot_start = False  # the command cannot start at all: not worth a retry
        self._code: int | None = None
        self._started = threading.Event()
        self._exited = threading.Event()
        self._attempt: tuple[str, int] | None = None  # (job id, attempt) once started
        self._asked_to_stop = False  # SIGTERM or SIGKILL sent (exit 0 then: a checkpoint)

    def info(self) -> tuple[str, int, int, int | None, bool] | None:
        """Which attempt's worker this actor runs: (job id, attempt, pid, exit code or None
        while it runs, whether a stop signal was sent to it); None before ``start``. A
        restarted service asks, to adopt the attempt (``ray_adopt.py``)."""
        if self._attempt is None or self._proc is None:
            return None
        return (*self._attempt, self._proc.pid, self._code, self._asked_to_stop)

    def node(self) -> tuple[str, str, int]:
        """Where the actor runs: Ray node id, IP address, and a free port there (rank 0's
        answer becomes ``MASTER_ADDR``/``MASTER_PORT``)."""
        import ray

        address = ray.util.get_node_ip_address()
        return ray.get_runtime_context().get_node_id(), address, free_port(address)

    def start(self, argv: list[str], overrides: Mapping[str, str], cwd: str | None,
              log_path: str) -> int:
        """Start the command; returns its pid, or raises ``OSError`` if it cannot start."""
        import ray

        env = {**os.environ, **overrides}
        if "OMP_NUM_THREADS" not in overrides and _ray_forced_threads():
            del env["OMP_NUM_THREADS"]  # Ray's 1, not the node's: unset, as locally
        if "DLSCHED_TOKEN" not in overrides:
            env.pop("DLSCHED_TOKEN", None)  # never inherited from the node
        env["DLSCHED_RAY_NODE_ID"] = ray.get_runtime_context().get_node_id()
        if "DLSCHED_JOB_ID" in overrides and "DLSCHED_ATTEMPT" in overrides:  # the executor's
            self._attempt = (overrides["DLSCHED_JOB_ID"], int(overrides["DLSCHED_ATTEMPT"]))
        threading.Thread(target=self._supervise, args=(argv, env, cwd, log_path),
                         daemon=True).start()
        self._started.wait(START_TIMEOUT)
        if self._proc is None:
            failure = CannotStart if self._cannot_start else OSError
            raise failure(self._error or "the worker did not start")
        return self._proc.pid

    def _supervise(self, argv: list[str], env: dict[str, str], cwd: str | None,
                   log_path: str) -> None:
        try:
            os.makedirs(os.path.dirname(log_path), exist_ok=True)
            if env.get("DLSCHED_CHECKPOINT_DIR"):  # as the local executor: it exists at start
                os.makedirs(env["DLSCHED_CHECKPOINT_DIR"], exist_ok=True)
            with os.fdopen(os.open(log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600),
                           "ab") as log:
                check_executable(argv[0], cwd, env.get("PATH"))  # on this node, as exec would
                self._proc = subprocess.Popen(
                    argv, cwd=cwd or None, env=env, stdin=subprocess.DEVNULL, stdout=log,
                    stderr=subprocess.STDOUT, start_new_session=True,
                    preexec_fn=_die_with_parent)  # noqa: PLW1509 (only prctl, async-safe)
        except (OSError, ValueError) as exc:
            self._error = str(exc)
            self._cannot_start = isinstance(exc, CannotStart | ValueError)
            self._code = 127
            self._started.set()
            self._exited.set()
            return
        self._started.set()
        self._code = self._proc.wait()
        self._exited.set()

    def wait(self) -> int:
        """Block until the process exits; its exit code (negative: killed by that signal)."""
        self._exited.wait()
        assert self._code is not None
        return self._code

    def signal(self, signum: int) -> None:
        """Signal the worker's process group (waits for a start that is under way)."""
        self._started.wait(START_TIMEOUT)
        if self._proc is not None:
            self._asked_to_stop = self._asked_to_stop or self._code is None
            signal_group(self._proc.pid, signal.Signals(signum))

    def cleanup(self) -> None:
        """SIGKILL whatever is left in the worker's process group, before the actor goes."""
        if self._proc is not None:
            with contextlib.suppress(OSError):
                signal_group(self._proc.pid, signal.SIGKILL)
