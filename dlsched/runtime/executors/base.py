"""What every runtime executor shares with the service: the launch plan it asks for, what it
reports back (launches and ends), the settings, and the workers' environment contract.

The service drives an executor through ``start``/``stop`` (the core's ``Executor`` protocol,
``dlsched/scheduling/interfaces.py``) and, every loop iteration, ``poll`` (attempts that ended)
and ``take_launched`` (attempts whose workers now run); ``drain`` waits for stopped workers at
shutdown. The local executor runs workers as subprocesses, the Ray executor as subprocesses of
Ray actors; both give the workers exactly the environment built here.
"""

from __future__ import annotations

import abc
import enum
import signal
import time
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from dlsched.cluster.cluster import Cluster
from dlsched.runtime.executors.sharing import MigSlot, Sharing
from dlsched.workload.job import Job


class Outcome(enum.Enum):
    SUCCEEDED = "succeeded"  # every worker exited with code 0
    FAILED = "failed"  # a worker exited with another code, was lost, or could not start
    STOPPED = "stopped"  # told to stop (preemption, cancel, shutdown), and it did
    LOST = "lost"  # a node it ran on (or was to run on) died: not the job's fault


@dataclass(frozen=True)
class LaunchPlan:
    """What the service says about one attempt of a job, asked for when it is launched."""

    attempt: int
    command: tuple[str, ...]
    checkpoint_dir: str
    log_path: Path
    working_dir: str | None = None
    env: Mapping[str, str] = field(default_factory=dict)
    token: str | None = field(default=None, repr=False)  # this job's own API token


@dataclass(frozen=True)
class ExecutorSettings:
    grace_seconds: float = 10.0
    service_url: str = ""
    token: str | None = None
    # Ray only: seconds without the service before its detached workers are released
    orphan_timeout: float = 600.0


@dataclass(frozen=True)
class AttemptLaunch:
    job_id: str
    attempt: int
    gpus: tuple[int, ...]
    pids: tuple[int, ...]
    log_path: Path


@dataclass(frozen=True)
class AttemptEnd:
    job_id: str
    attempt: int
    outcome: Outcome
    message: str
    # False: the command cannot start at all (no such executable): another attempt would
    # fail the same way, so the service fails the job at once instead of backing off
    retryable: bool = True


class CannotStart(OSError):
    """The job's command cannot be started where it is to run (no such executable, not
    executable): an error of the job's request, not of the moment, so not retried."""


def check_executable(program: str, cwd: str | None, path: str | None) -> None:
    """What ``exec`` would find (the wrapper shell would only exit 127 later): raises
    ``CannotStart`` with the reason for a command that cannot start."""
    import os
    import shutil

    if "/" in program:
        found = Path(cwd or ".") / program
        if not (found.is_file() and os.access(found, os.X_OK)):
            raise CannotStart(f"{program}: no such executable file")
    elif shutil.which(program, path=path) is None:
        raise CannotStart(f"{program}: not found on PATH")


Planner = Callable[[str], LaunchPlan]


class RuntimeExecutor(Protocol):
    """The service's view of an executor (the core's ``Executor`` plus the loop's calls)."""

    def start(self, job: Job, now: float) -> None: ...

    def stop(self, job: Job, now: float) -> None: ...

    def poll(self) -> list[AttemptEnd]: ...

    def take_launched(self) -> list[AttemptLaunch]: ...

    def take_stops(self) -> list[tuple[str, int]]:
        """(job id, attempt number) of the launched attempts stopped since the last call
        (recorded, so a restart never adopts workers that were stopping)."""
        ...

    def signal_stops(self) -> None:
        """Signal the workers of the stops ``take_stops`` gave out: the service calls it once
        it has committed them (write the intent, then signal)."""
        ...

    def drain(self, timeout: float) -> list[AttemptEnd]: ...

    def down_nodes(self) -> frozenset[int]:
        """Nodes (dlsched indices) the executor knows to be dead right now."""
        ...


def contract_env(job_id: str, plan: LaunchPlan, world_size: int, master: tuple[str, int],
                 settings: ExecutorSettings) -> dict[str, str]:
    """The variables every worker of an attempt shares (``docs/runtime.md``, the contract)."""
    env = {"DLSCHED_JOB_ID": job_id, "DLSCHED_ATTEMPT": str(plan.attempt),
           "WORLD_SIZE": str(world_size), "MASTER_ADDR": master[0],
           "MASTER_PORT": str(master[1]), "DLSCHED_CHECKPOINT_DIR": plan.checkpoint_dir,
           "DLSCHED_SERVICE_URL": settings.service_url,
           "DLSCHED_GRACE_SECONDS": f"{settings.grace_seconds:g}"}
    token = plan.token or settings.token
    if token:
        env["DLSCHED_TOKEN"] = token
    return env


def rank_envs(cluster: Cluster, gpus: tuple[int, ...]) -> list[dict[str, str]]:
    """Per worker (rank = position in the allocation): ``RANK``, ``LOCAL_RANK``,
    ``LOCAL_WORLD_SIZE`` (among the job's workers on the same node), ``CUDA_VISIBLE_DEVICES``
    (the GPU's index on its node) and ``DLSCHED_NODE`` (the node's name)."""
    nodes = [int(cluster.gpu_node[gpu]) for gpu in gpus]
    per_node = Counter(nodes)
    seen: Counter[int] = Counter()
    envs = []
    for rank, (gpu, node) in enumerate(zip(gpus, nodes, strict=True)):
        envs.append({"RANK": str(rank), "LOCAL_RANK": str(seen[node]),
                     "LOCAL_WORLD_SIZE": str(per_node[node]),
                     "CUDA_VISIBLE_DEVICES": str(gpu - int(cluster.node_first_gpu[node])),
                     "DLSCHED_NODE": cluster.nodes[node].name})
        seen[node] += 1
    return envs


def exit_text(code: int) -> str:
    if code < 0:
        try:
            return f"was killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"was killed by signal {-code}"
    return f"exited with code {code}"


def describe_stopped(codes: list[int | None]) -> str:
    return "workers stopped (" + ", ".join(
        "running" if c is None else exit_text(c) for c in codes) + ")"


class AttemptBook(abc.ABC):
    """The bookkeeping both executors share: starts queued until the GPUs they need are no
    longer held by exiting workers, running and stopping attempts, and the launches and ends
    the service has not read yet. A subclass names its attempt type (built from a job id and
    its GPUs, with ``job_id`` and ``gpus``) and says how to launch, terminate and kill one."""

    def __init__(self, attempt_type: Callable[[str, tuple[int, ...]], Any]) -> None:
        self._attempt_type = attempt_type
        self._queued: dict[str, Any] = {}  # started by the core, GPUs still draining
        self._active: dict[str, Any] = {}
        self._stopping: list[Any] = []
        self._launched: list[AttemptLaunch] = []
        self._ended: list[AttemptEnd] = []
        self._stops: list[tuple[str, int]] = []
        self._unsignalled: list[Any] = []  # stopped, not yet told (see ``signal_stops``)

    # -- the Executor protocol ------------------------------------------------------------
    def start(self, job: Job, now: float) -> None:
        gpus = tuple(int(g) for g in job.allocation)
        attempt = self._attempt_type(job.job_id, gpus)
        attempt.sharing = Sharing.of(job, self.mig_slots(job))
        self._queued[job.job_id] = attempt
        self._launch_ready()

    def stop(self, job: Job, now: float) -> None:
        if self._queued.pop(job.job_id, None) is not None:
            return  # never launched
        attempt = self._active.pop(job.job_id, None)
        if attempt is None:  # its workers already exited (a failure being handled)
            return
        if not attempt.number:  # a Ray attempt still reserving, never recorded: no intent
            self._terminate(attempt)
            return
        # Signalled by ``signal_stops`` once the service has committed the stop: a kill -9
        # between a SIGTERM and that commit let a restart adopt the stopping workers as the
        # running attempt (finished when they exited 0 after their checkpoint).
        self._stops.append((job.job_id, attempt.number))
        self._unsignalled.append(attempt)

    def signal_stops(self) -> None:
        """Tell the workers of every stop that ``take_stops`` gave out to stop, now that the
        service has recorded them (``stop_time``): the intent is durable before the signal."""
        unsignalled, self._unsignalled = self._unsignalled, []
        for attempt in unsignalled:
            self._terminate(attempt)

    def mig_slots(self, job: Job) -> tuple[MigSlot, ...]:
        """The MIG instance of each worker of a MIG job (() otherwise); the service sets
        ``mig_of`` to the core's MIG book."""
        mig_of = getattr(self, "mig_of", None)
        return () if mig_of is None else mig_of(job)

    # -- what the service loop calls ------------------------------------------------------
    @abc.abstractmethod
    def poll(self) -> list[AttemptEnd]:
        """The attempts that ended since the last call (each executor watches its workers)."""

    def take_launched(self) -> list[AttemptLaunch]:
        launched, self._launched = self._launched, []
        return launched

    def take_stops(self) -> list[tuple[str, int]]:
        stops, self._stops = self._stops, []
        return stops

    def drain(self, timeout: float) -> list[AttemptEnd]:
        """Wait (blocking) until every stopped attempt has exited, or ``timeout`` passes; then
        kill what is left."""
        self._queued.clear()
        ended = self.poll()
        deadline = time.monotonic() + timeout
        while self._stopping and time.monotonic() < deadline:
            time.sleep(0.05)
            ended += self.poll()
        self._kill_stopping()
        return ended

    @property
    def active_jobs(self) -> tuple[str, ...]:
        return tuple(self._active)

    def waiting_for(self, job_id: str) -> tuple[str, ...]:
        """The jobs whose stopped workers a start of ``job_id`` still waits for (they hold
        its GPUs, or are its own earlier attempt), sorted; () when it is not waiting. The
        service reports them as "waiting for preempted jobs to exit" (docs/runtime.md)."""
        attempt = self._queued.get(job_id)
        if attempt is None:
            return ()
        gpus = set(attempt.gpus)
        return tuple(sorted({old.job_id for old in self._leaving()
                             if old.job_id == job_id or not gpus.isdisjoint(old.gpus)}))

    def _leaving(self) -> list[Any]:
        """Attempts told to stop, or about to be, whose workers may still run."""
        return [*self._stopping, *self._unsignalled]

    # -- for the executors ----------------------------------------------------------------
    def _launch_ready(self) -> None:
        """Launch each queued start once no stopped worker holds its GPUs and no earlier
        attempt of the same job is still exiting (it may be writing its checkpoint)."""
        leaving = self._leaving()
        busy = {gpu for attempt in leaving for gpu in attempt.gpus}
        exiting = {attempt.job_id for attempt in leaving}
        for job_id, attempt in list(self._queued.items()):
            if job_id not in exiting and busy.isdisjoint(attempt.gpus):
                del self._queued[job_id]
                try:
                    self._launch(attempt)
                except Exception:  # e.g. the attempt could not be recorded: retried next poll
                    self._queued[job_id] = attempt
                    raise

    @abc.abstractmethod
    def _launch(self, attempt: Any) -> None:
        """Start the attempt's workers (and record it as active)."""

    @abc.abstractmethod
    def _terminate(self, attempt: Any) -> None:
        """Ask a running attempt's workers to stop (grace period) and record it as stopping."""

    @abc.abstractmethod
    def _kill_stopping(self) -> None:
        """Kill whatever stopping attempts are left (end of ``drain``)."""
