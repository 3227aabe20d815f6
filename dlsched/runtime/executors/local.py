"""The local executor: each worker of a job is a subprocess on this machine, one per GPU.

``start`` launches a gang (all workers at once) from an argv list, never a shell string, each in
its own session with stdout and stderr in the attempt's log file, under the exit-status wrapper
(``exit_status.py``: the status survives the service). After a ``kill -9`` of the service, the
restarted one ``adopt``s workers that still run instead of starting their jobs again.
``stop`` sends SIGTERM to each worker's process group and SIGKILL after the grace period (a
timer thread, so stopping never blocks the service). A start waits while workers that were
told to stop still hold its GPUs or belong to the same job: a job never runs twice at once, and
no two jobs share a GPU.

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
from dlsched.runtime.confine import open_private, private_dir
from dlsched.runtime.executors.base import (
    AttemptBook,
    AttemptEnd,
    AttemptLaunch,
    CannotStart,
    ExecutorSettings,
    LaunchPlan,
    Outcome,
    Planner,
    check_executable,
    contract_env,
    describe_stopped,
    exit_text,
    rank_envs,
)
from dlsched.runtime.executors.exit_status import ExitStatus, read_status, status_path, wrapped
from dlsched.runtime.executors.processes import alive, free_port, signal_group
from dlsched.runtime.executors.sharing import Sharing, add_sharing_env
from dlsched.workload.job import Job

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
    statuses: list[Path] = field(default_factory=list)  # per rank, see ``exit_status.py``
    adopted: tuple[int, ...] | None = None  # the wrappers' pids, not our children
    sharing: Sharing | None = None  # a fractional, MIG or CPU-asking job's (sharing.py)

    def codes(self) -> list[int | None]:
        """Per rank: None while it runs, else its exit code (negative: killed by a signal)."""
        if self.adopted is None:
            return [_decode(proc.poll()) for proc in self.procs]
        return [_adopted_code(pid, path)
                for pid, path in zip(self.adopted, self.statuses, strict=True)]

    def exited(self) -> bool:
        return all(code is not None for code in self.codes())

    def groups(self) -> tuple[int, ...]:
        """Process groups to signal (an adopted rank that had already exited has pid 0)."""
        if self.adopted is None:
            return tuple(proc.pid for proc in self.procs)
        return tuple(pid for pid in self.adopted if pid > 0)

    def completed(self) -> bool:
        """Every rank exited 0 on its own, before any stop reached it (its wrapper says)."""
        statuses = [read_status(path) for path in self.statuses]
        return bool(statuses) and all(s is not None and s.completed for s in statuses)


def _decode(code: int | None) -> int | None:
    """The wrapper shell exits 128 + N for a command killed by signal N: report it as -N, as
    ``Popen`` does for a direct child."""
    if code is not None and 128 < code <= 128 + 64:
        return -(code - 128)
    return code


def _adopted_code(pid: int, path: Path) -> int | None:
    status: ExitStatus | None = read_status(path)
    if status is None and pid > 0 and alive(pid):
        return None
    status = status or read_status(path)  # it may have written the file as it exited
    return -int(signal.SIGKILL) if status is None else _decode(status.code)


class LocalExecutor(AttemptBook):
    """Not thread-safe: the service calls it under its lock (only the kill timers run apart)."""

    def __init__(self, cluster: Cluster, plan: Planner, settings: ExecutorSettings) -> None:
        super().__init__(_Attempt)
        self.cluster = cluster
        self.plan = plan
        self.settings = settings
        self._adopting: dict[str, _Attempt] = {}

    # -- after a restart --------------------------------------------------------------------
    def adopt(self, job_id: str, number: int, gpus: tuple[int, ...], pids: tuple[int, ...],
              log_path: Path) -> None:
        """Take over the running workers (one wrapper pid per rank) of attempt ``number``,
        left by a service that died: the core's next ``start`` of the job on exactly these
        GPUs takes them instead of launching new workers (``RuntimeScheduler.adopt``)."""
        statuses = [status_path(log_path, rank) for rank in range(len(gpus))]
        self._adopting[job_id] = _Attempt(job_id, gpus, number, statuses=statuses,
                                          adopted=pids)

    def drop_adoption(self, job_id: str) -> None:
        self._adopting.pop(job_id, None)

    def start(self, job: Job, now: float) -> None:
        attempt = self._adopting.pop(job.job_id, None)
        if attempt is not None and attempt.gpus == tuple(int(g) for g in job.allocation):
            self._active[job.job_id] = attempt
            return
        super().start(job, now)

    # -- what the service loop calls ------------------------------------------------------
    def poll(self) -> list[AttemptEnd]:
        """Attempts that ended since the last poll; launches starts whose GPUs drained."""
        for attempt in list(self._active.values()):
            self._check(attempt)
        for attempt in [a for a in self._stopping if a.exited()]:
            self._stopping.remove(attempt)
            if attempt.timer is not None:
                attempt.timer.cancel()
            if attempt.completed():  # its work ended just before the stop reached it
                self._end(attempt, Outcome.SUCCEEDED, "all workers exited with code 0 before "
                                                      "they were asked to stop")
            else:
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
                proc.wait(timeout=10)  # adopted workers are not ours to wait for
            self._end(attempt, Outcome.FAILED, f"rank {failed[0]} {exit_text(failed[1])}")
        elif all(code == 0 for code in codes):
            del self._active[attempt.job_id]
            self._end(attempt, Outcome.SUCCEEDED, "all workers exited with code 0")

    def _end(self, attempt: _Attempt, outcome: Outcome, message: str,
             retryable: bool = True) -> None:
        _kill(attempt)  # whatever the workers left behind in their process groups
        self._ended.append(AttemptEnd(attempt.job_id, attempt.number, outcome, message,
                                      retryable))

    def _terminate(self, attempt: _Attempt) -> None:
        for pid in attempt.groups():
            signal_group(pid, signal.SIGTERM)
        attempt.timer = threading.Timer(self.settings.grace_seconds, _kill, (attempt,))
        attempt.timer.daemon = True
        attempt.timer.start()
        self._stopping.append(attempt)

    def _launch(self, attempt: _Attempt) -> None:
        plan = self.plan(attempt.job_id)
        attempt.number = plan.attempt
        error, retryable = None, True
        try:
            private_dir(plan.log_path.parent)  # DATA_DIR/jobs/ID: 0700 (confine.py)
            checkpoint = Path(plan.checkpoint_dir)
            if checkpoint.parent == plan.log_path.parent:
                private_dir(checkpoint)  # the default, in the job's directory
            else:
                checkpoint.mkdir(parents=True, exist_ok=True)
            envs = list(self._worker_envs(attempt, plan, free_port()))
            check_executable(plan.command[0], plan.working_dir, envs[0].get("PATH"))
            with os.fdopen(open_private(plan.log_path), "ab") as log:
                for rank, env in enumerate(envs):
                    status = status_path(plan.log_path, rank)
                    attempt.statuses.append(status)
                    attempt.procs.append(subprocess.Popen(
                        wrapped(plan.command, status), cwd=plan.working_dir or None, env=env,
                        stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                        start_new_session=True))
        except (OSError, ValueError) as exc:  # ValueError: a NUL in the command's words
            error = f"could not start its workers: {exc}"
            retryable = not isinstance(exc, CannotStart | ValueError)
        self._launched.append(AttemptLaunch(attempt.job_id, plan.attempt, attempt.gpus,
                                            tuple(p.pid for p in attempt.procs), plan.log_path))
        if error is None:
            self._active[attempt.job_id] = attempt
        else:
            _kill(attempt)
            self._end(attempt, Outcome.FAILED, error, retryable)

    def _worker_envs(self, attempt: _Attempt, plan: LaunchPlan,
                     port: int) -> Iterator[dict[str, str]]:
        base = {**os.environ, **plan.env}
        base.pop("DLSCHED_TOKEN", None)
        shared = contract_env(attempt.job_id, plan, len(attempt.gpus), ("127.0.0.1", port),
                              self.settings)
        for rank, per_rank in enumerate(rank_envs(self.cluster, attempt.gpus)):
            yield add_sharing_env({**base, **shared, **per_rank}, attempt.sharing,
                                  self.cluster, attempt.gpus[rank], rank, plan.env)


def _kill(attempt: _Attempt) -> None:
    for pid in attempt.groups():
        signal_group(pid, signal.SIGKILL)
