"""What every runtime executor shares with the service: the launch plan it asks for, what it
reports back (launches and ends), the settings, and the workers' environment contract.

The service drives an executor through ``start``/``stop`` (the core's ``Executor`` protocol,
``dlsched/scheduling/interfaces.py``) and, every loop iteration, ``poll`` (attempts that ended)
and ``take_launched`` (attempts whose workers now run); ``drain`` waits for stopped workers at
shutdown. The local executor runs workers as subprocesses, the Ray executor as subprocesses of
Ray actors; both give the workers exactly the environment built here.
"""

from __future__ import annotations

import enum
import signal
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from dlsched.cluster.cluster import Cluster
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


Planner = Callable[[str], LaunchPlan]


class RuntimeExecutor(Protocol):
    """The service's view of an executor (the core's ``Executor`` plus the loop's calls)."""

    def start(self, job: Job, now: float) -> None: ...

    def stop(self, job: Job, now: float) -> None: ...

    def poll(self) -> list[AttemptEnd]: ...

    def take_launched(self) -> list[AttemptLaunch]: ...

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
