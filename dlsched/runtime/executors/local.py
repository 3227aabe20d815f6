"""The local executor: each worker of a job is a subprocess on this machine, one per GPU.

``start`` launches a gang (all workers at once) from an argv list, never a shell string, each in
its own session with stdout and stderr in the attempt's log file. ``stop`` sends SIGTERM to each
worker's process group and SIGKILL after the grace period (a timer thread, so stopping never
blocks the service). A start waits while workers that were told to stop still hold its GPUs or
belong to the same job: a job never runs twice at once, and no two jobs share a GPU.

Workers get this environment (the job-side library reads exactly these names):
``DLSCHED_JOB_ID``, ``DLSCHED_ATTEMPT`` (1-based), ``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK``,
``LOCAL_WORLD_SIZE``, ``MASTER_ADDR`` (127.0.0.1), ``MASTER_PORT`` (free, per attempt),
``CUDA_VISIBLE_DEVICES`` (the worker's GPU index on its node), ``DLSCHED_NODE`` (its node's
name), ``DLSCHED_CHECKPOINT_DIR`` (per job, the same for every attempt),
``DLSCHED_SERVICE_URL``, ``DLSCHED_TOKEN`` (when auth is on) and ``DLSCHED_GRACE_SECONDS``
(built in ``executors/base.py``, shared with the Ray executor).
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from dlsched.cluster.cluster import Cluster
from dlsched.runtime.executors.base import (
    AttemptBook,
    AttemptEnd,
    AttemptLaunch,
    ExecutorSettings,
    LaunchPlan,
    Outcome,
    Planner,
    contract_env,
    describe_stopped,
    exit_text,
    rank_envs,
)
from dlsched.runtime.executors.processes import free_port, signal_group

LocalSettings = ExecutorSettings  # the name the local executor's callers know

__all__ = ["AttemptEnd", "AttemptLaunch", "LaunchPlan", "LocalExecutor", "LocalSettings",
           "Outcome"]


@dataclass(eq=False)
class _Attempt:
    job_id: str
    gpus: tuple[int, ...]
    number: int = 0
    procs: list[subprocess.Popen[bytes]] = field(default_factory=list)
    timer: threading.Timer | None = None

    def codes(self) -> list[int | None]:
        return [proc.poll() for proc in self.procs]

    def exited(self) -> bool:
        return all(code is not None for code in self.codes())


class LocalExecutor(AttemptBook):
    """Not thread-safe: the service calls it under its lock (only the kill timers run apart)."""

    def __init__(self, cluster: Cluster, plan: Planner, settings: ExecutorSettings) -> None:
        super().__init__(_Attempt)
        self.cluster = cluster
        self.plan = plan
        self.settings = settings

    # -- what the service loop calls ------------------------------------------------------
    def poll(self) -> list[AttemptEnd]:
        """Attempts that ended since the last poll; launches starts whose GPUs drained."""
        for attempt in list(self._active.values()):
            self._check(attempt)
        for attempt in [a for a in self._stopping if a.exited()]:
            self._stopping.remove(attempt)
            if attempt.timer is not None:
                attempt.timer.cancel()
            self._end(attempt, Outcome.STOPPED, describe_stopped(attempt.codes()))
        self._launch_ready()
        ended, self._ended = self._ended, []
        return ended

    def _kill_stopping(self) -> None:
        for attempt in self._stopping:
            _kill(attempt)

    def down_nodes(self) -> frozenset[int]:
        return frozenset()  # this machine's GPUs do not come and go

    # -- internals ------------------------------------------------------------------------
    def _check(self, attempt: _Attempt) -> None:
        codes = attempt.codes()
        failed = next(((rank, c) for rank, c in enumerate(codes) if c not in (None, 0)), None)
        if failed is not None:
            del self._active[attempt.job_id]
            _kill(attempt)  # the other ranks cannot go on without it
            for proc in attempt.procs:
                proc.wait(timeout=10)
            self._end(attempt, Outcome.FAILED, f"rank {failed[0]} {exit_text(failed[1])}")
        elif all(code == 0 for code in codes):
            del self._active[attempt.job_id]
            self._end(attempt, Outcome.SUCCEEDED, "all workers exited with code 0")

    def _end(self, attempt: _Attempt, outcome: Outcome, message: str) -> None:
        _kill(attempt)  # whatever the workers left behind in their process groups
        self._ended.append(AttemptEnd(attempt.job_id, attempt.number, outcome, message))

    def _terminate(self, attempt: _Attempt) -> None:
        for proc in attempt.procs:
            signal_group(proc.pid, signal.SIGTERM)
        attempt.timer = threading.Timer(self.settings.grace_seconds, _kill, (attempt,))
        attempt.timer.daemon = True
        attempt.timer.start()
        self._stopping.append(attempt)

    def _launch(self, attempt: _Attempt) -> None:
        plan = self.plan(attempt.job_id)
        attempt.number = plan.attempt
        error = None
        try:
            plan.log_path.parent.mkdir(parents=True, exist_ok=True)
            Path(plan.checkpoint_dir).mkdir(parents=True, exist_ok=True)
            with open(plan.log_path, "ab") as log:
                for env in self._worker_envs(attempt, plan, free_port()):
                    attempt.procs.append(subprocess.Popen(
                        list(plan.command), cwd=plan.working_dir or None, env=env,
                        stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                        start_new_session=True))
        except (OSError, ValueError) as exc:
            error = f"could not start its workers: {exc}"
        self._launched.append(AttemptLaunch(attempt.job_id, plan.attempt, attempt.gpus,
                                            tuple(p.pid for p in attempt.procs), plan.log_path))
        if error is None:
            self._active[attempt.job_id] = attempt
        else:
            _kill(attempt)
            self._end(attempt, Outcome.FAILED, error)

    def _worker_envs(self, attempt: _Attempt, plan: LaunchPlan,
                     port: int) -> Iterator[dict[str, str]]:
        base = {**os.environ, **plan.env}
        base.pop("DLSCHED_TOKEN", None)
        shared = contract_env(attempt.job_id, plan, len(attempt.gpus), ("127.0.0.1", port),
                              self.settings)
        for per_rank in rank_envs(self.cluster, attempt.gpus):
            yield {**base, **shared, **per_rank}


def _kill(attempt: _Attempt) -> None:
    for proc in attempt.procs:
        signal_group(proc.pid, signal.SIGKILL)
