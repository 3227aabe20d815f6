"""A service: a model and its step-time profile, an SLO, a request trace and replicas.

Each replica is a gang of ``tensor_parallel`` GPUs of one type: a ``JobSpec`` of kind SERVICE
that the scheduler core places like any training job (its tenant queue and priority apply).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from dlsched.serving.autoscale import AutoscalePolicy
from dlsched.serving.llm_replica import LlmEngineConfig
from dlsched.serving.metrics import Slo
from dlsched.workload.job import JobKind, JobSpec

REPLICA_PRIORITY = 100  # above training jobs' default 0: services are served first


class ServiceKind(enum.Enum):
    LLM = "llm"  # continuous batching, TTFT and TPOT
    DNN = "dnn"  # dynamic batching, end-to-end latency


@dataclass(frozen=True)
class DnnBatching:
    """A DNN model's measured batch latency table and its batcher's settings."""

    latency: tuple[tuple[int, float], ...]  # (batch size, seconds)
    max_batch: int = 8
    timeout: float = 0.005


@dataclass(frozen=True)
class PrefillPool:
    """The prefill replicas of a disaggregated service (Splitwise / DistServe)."""

    replicas: int
    gpu: str
    tp: int


@dataclass(frozen=True)
class ServiceSpec:
    name: str
    model: str
    gpu: str
    tp: int
    replicas: int
    slo: Slo
    trace: str
    kind: ServiceKind = ServiceKind.LLM
    rate_scale: float = 1.0
    duration: float | None = None  # seconds of the trace to serve (None: all of it)
    queue: str = "default"
    priority: int = REPLICA_PRIORITY
    engine: LlmEngineConfig = field(default_factory=LlmEngineConfig)
    dnn: DnnBatching | None = None
    autoscale: AutoscalePolicy | None = None  # replicas is then the starting count
    prefill: PrefillPool | None = None  # disaggregated: replicas/gpu/tp are the decode pool
    lengths: str | None = None  # ServeGen rates: the trace whose token counts are drawn
    seed: int = 0  # ServeGen generation

    def replica_id(self, index: int) -> str:
        return f"service:{self.name}/{index}"

    def prefill_id(self, index: int) -> str:
        return f"service:{self.name}/prefill/{index}"

    def replica_jobs(self, horizon: float, submit: float = 0.0) -> list[JobSpec]:
        """The replicas (and prefill replicas) as jobs asking for their GPUs until
        ``horizon`` (seconds): each ends then, however long the core stopped it."""
        work = max(horizon - submit, 1.0)
        jobs = [JobSpec(self.replica_id(i), submit, self.tp, work, queue=self.queue,
                        gpu_types=(self.gpu,), model=self.model, priority=self.priority,
                        kind=JobKind.SERVICE, tensor_parallel=self.tp, ends_at=submit + work)
                for i in range(self.replicas)]
        if self.prefill is not None:
            p = self.prefill
            jobs += [JobSpec(self.prefill_id(i), submit, p.tp, work, queue=self.queue,
                             gpu_types=(p.gpu,), model=self.model, priority=self.priority,
                             kind=JobKind.SERVICE, tensor_parallel=p.tp, ends_at=submit + work)
                     for i in range(p.replicas)]
        return jobs
