"""Request and response bodies of the REST API (pydantic). Times are UNIX timestamps."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, field_validator

from dlsched.runtime.limits import INT64_MAX, INT64_MIN


def _not_a_boolean(value: Any) -> Any:
    """pydantic's lax mode reads JSON ``true`` as the integer 1 (``"gpus": true`` was a
    1-GPU job); a boolean is no count."""
    if isinstance(value, bool):
        raise ValueError("expected an integer, got a boolean")
    return value


# Every integer the API takes fits 64 bits (SQLite's and NumPy's); floats are finite (the
# models say ``allow_inf_nan=False``). Out of range: 422 before anything is stored.
Int64 = Annotated[int, BeforeValidator(_not_a_boolean), Field(ge=INT64_MIN, le=INT64_MAX)]
Text = Annotated[str, Field(max_length=4096, pattern=r"^[^\x00]*$")]  # no NUL (exec refuses)
EnvName = Annotated[str, Field(min_length=1, max_length=256, pattern=r"^[^=\x00]+$")]

QUEUE_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$"
IDEMPOTENCY_KEY_PATTERN = r"^[!-~]{1,255}$"  # printable ASCII, no spaces


class SubmitRequest(BaseModel):
    """A job: ``command`` is an argv list, run as given (never through a shell)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    command: list[Text] = Field(min_length=1, max_length=4096,
                                description="argv, e.g. ['python', 'train.py']")
    gpus: Int64 = Field(description="Workers (one GPU each), started together as a gang: "
                                    "1 to the cluster's GPUs (400 otherwise).")
    gpu_type: str | None = Field(None, max_length=64,
                                 description="Only GPUs of this type (default: any).")
    queue: str = Field("default", pattern=QUEUE_PATTERN)
    priority: Int64 = 0
    min_gpus: Int64 | None = None
    max_gpus: Int64 | None = None
    checkpoint_dir: Text | None = Field(
        None, description="Kept across attempts (default: DATA_DIR/jobs/ID/checkpoint).")
    # No NUL, as every string (docs/runtime.md "Bounds"): PostgreSQL text refuses it (a 500).
    name: str | None = Field(None, max_length=200, pattern=r"^[^\x00]*$")
    work_seconds: float | None = Field(
        None, gt=0, le=1e15,
        description="Estimated run time; only for policies that use one (SJF).")
    working_dir: Text | None = Field(None, description="Workers' working directory.")
    env: dict[EnvName, Text] = Field(
        default_factory=dict, max_length=1024,
                                description="Extra environment (dlsched's own names win).")
    gpu_share: float = Field(
        1.0, gt=0, le=1, description="Each worker's share of its GPU's compute, in (0, 1]: "
                                     "below 1, workers of several jobs share a GPU (MPS; "
                                     "docs/sharing.md).")
    gpu_memory_gb: float = Field(
        0.0, ge=0, le=1e6, description="GPU memory (GiB) per worker; 0: none asked (a "
                                       "fraction then gets its share of the GPU's memory).")
    mig_profile: str | None = Field(
        None, max_length=32, description="A MIG instance per worker instead of a GPU, e.g. "
                                         "3g.20gb or 3g (A100/H100 nodes; one worker).")
    cpus_per_gpu: float = Field(0.0, ge=0, le=1e6, description="Host CPUs per worker.")
    memory_gb_per_gpu: float = Field(0.0, ge=0, le=1e9,
                                     description="Host memory (GiB) per worker.")
    max_per_node: int = Field(
        0, ge=0, le=1_000_000, description="At most this many workers of the job's group (its "
                                           "own, without one) on one node: an anti-affinity; "
                                           "0: no cap (docs/sharing.md).")
    group: str | None = Field(
        None, min_length=1, max_length=128,
        description="The jobs whose workers max_per_node counts together (e.g. a service's "
                    "replicas).")
    idempotency_key: str | None = Field(
        None, pattern=IDEMPOTENCY_KEY_PATTERN,
        description="Or the Idempotency-Key header: a retried submission with the same key "
                    "(from the same caller) returns the job the first one made.")

    @field_validator("command")
    @classmethod
    def _has_a_program(cls, command: list[str]) -> list[str]:
        """argv[0] is the program: an empty one can never start (each attempt failed with
        ': not found on PATH', retried until the job failed)."""
        if not command[0]:
            raise ValueError("command[0], the program, is empty")
        return command


class ProgressReport(BaseModel):
    """What a worker reports (the job-side library posts this)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    step: Int64 | None = Field(None, ge=0, description="Training steps done (from 0).")
    samples_per_second: float | None = Field(None, ge=0)
    world_size: int | None = Field(None, ge=1, le=INT64_MAX, description=(
        "Workers the speed was measured with; a report from another size than the job's now "
        "is kept but not used as a measurement."))
    metrics: dict[Annotated[str, Field(max_length=256)],
                  float | Annotated[str, Field(max_length=4096)] | bool | None] = Field(
        default_factory=dict, max_length=256)
    attempt: int | None = Field(None, ge=1, le=INT64_MAX, description="The reporting worker's "
                                "DLSCHED_ATTEMPT: a report from an attempt that is no longer "
                                "the job's (fenced) is refused with 409.")


class GpuSlot(BaseModel):
    node: str
    index: int = Field(description="GPU index on its node (what CUDA_VISIBLE_DEVICES gets).")
    gpu: int = Field(description="Global GPU id in the cluster.")
    share: float = Field(1.0, description="The worker's share of the GPU's compute.")
    mig_instance: str | None = Field(None, description="A MIG worker's instance: profile "
                                                       "and start slice, e.g. 3g.20gb@4.")


class AttemptView(BaseModel):
    number: int
    started_at: float
    ended_at: float | None
    gpus: list[int]
    outcome: str | None
    message: str


class JobSummary(BaseModel):
    id: str
    name: str | None
    status: str
    queue: str
    priority: int
    gpus: int
    gpu_type: str | None
    submitted_at: float
    finished_at: float | None
    attempts: int
    pending_reason: str = Field(description="Why it waits (the cycle's filter or placement "
                                            "reason); once it ended, why (a failure's "
                                            "message; 'cancelled'); '' when finished.")
    submitted_by: str | None = Field(None, description="The tenant whose token submitted it "
                                                       "(admin: --token; anyone: no token).")
    gpus_held: int | None = Field(None, description="GPUs (workers) it holds while running: "
                                                    "an elastic job's current size may differ "
                                                    "from gpus; None when not running.")
    gpu_share: float = Field(1.0, description="Each worker's share of a GPU (1: whole; a MIG "
                                              "instance: its compute slices / 7).")
    mig_profile: str | None = None


class JobDetail(JobSummary):
    command: list[str]
    gpu_memory_gb: float = 0.0
    cpus_per_gpu: float = 0.0
    memory_gb_per_gpu: float = 0.0
    max_per_node: int = 0
    group: str | None = None
    min_gpus: int | None
    max_gpus: int | None
    work_seconds: float | None
    checkpoint_dir: str
    allocation: list[GpuSlot]
    queue_position: int | None = Field(description="1 = next to be considered; None unless "
                                                   "the job waits.")
    attempt_history: list[AttemptView]
    last_progress: dict | None


class EventView(BaseModel):
    time: float
    kind: str
    message: str


class GpuView(BaseModel):
    index: int
    gpu: int
    job_id: str | None = Field(description="The first job on it (see job_ids).")
    job_ids: list[str] = Field(default_factory=list, description=(
        "Every job with a worker on it: several when they share it (a fraction, MIG)."))


class NodeView(BaseModel):
    """A node and what the scheduler accounts on it (the cluster YAML's node fields; a server
    older than these fields leaves them at their defaults)."""

    name: str
    gpu_type: str
    gpus: list[GpuView]
    down: bool = Field(False, description="The executor lost this node (e.g. a dead Ray "
                                          "node): nothing is placed there until it is back.")
    cpus: float = Field(0.0, description="CPUs jobs' workers may ask for (0: not accounted).")
    memory_gb: float = Field(0.0, description="Host memory in GiB (0: not accounted).")
    gpu_memory_gb: float = Field(0.0, description="Each GPU's memory in GiB (0: unknown).")
    rack: str = Field("rack-0", description="Its rack (placement packs racks).")
    nvlink_domain: int = Field(0, description="GPUs per NVLink island (0: PCIe only).")
    pool: str | None = Field(None, description="Its node group, if any (a Kueue flavor).")


class TopologyView(BaseModel):
    """Link bandwidths in GB/s (``dlsched/cluster/topology.py``)."""

    nvlink_gbps: float
    pcie_gbps: float
    rack_gbps: float
    network_gbps: float


class ClusterView(BaseModel):
    name: str
    policy: str
    gpus_total: int
    gpus_allocated: float = Field(description="Compute the running jobs hold: a worker counts "
                                              "its share of its GPU (a fraction, a MIG "
                                              "instance its slices / 7), as /metrics does.")
    nodes: list[NodeView]
    topology: TopologyView | None = Field(None, description="None from a server older than "
                                                            "this field.")
    gpus_in_use: int = Field(0, description="GPUs holding a worker, whole or in part (a GPU "
                                            "in MIG mode is one).")
    gpus_partly_used: int = Field(0, description="Of those, GPUs with compute left over "
                                                 "(fractions, MIG instances).")
    mig_slices_used: int = Field(0, description="MIG compute slices held by instances.")
    mig_slices: int = Field(0, description="Compute slices of the MIG-capable GPUs (7 each).")


class QueueView(BaseModel):
    name: str
    pending: int
    running: int
    gpus_allocated: float


class Health(BaseModel):
    status: str
    loop_alive: bool


class FlavorQuotaView(BaseModel):
    """One (flavor, resource) quota of a cluster queue and its use now."""

    flavor: str
    resource: str = Field(description="gpu, cpu, memory (GB) or gpu_memory (GB).")
    nominal: float
    borrowing_limit: float | None = Field(description="None: may borrow without limit.")
    lending_limit: float | None = Field(description="None: lends all it does not use.")
    used: float
    borrowed: float = Field(description="Use above the nominal quota (borrowed from the "
                                        "cohort).")


class TenantQueueView(BaseModel):
    """A cluster queue of the tenant file (``--tenants``): quota, use, borrowing, fair share."""

    name: str
    cohort: str | None
    local_queues: list[str]
    weight: float
    queueing_strategy: str
    pending: int
    running: int
    gpus_nominal: float
    gpus_used: float
    gpus_borrowed: float
    fair_share: float = Field(description="Kueue's weighted share of what the queue borrows, "
                                          "per mille of its cohort's lendable quota (0: "
                                          "within its nominal quota).")
    quotas: list[FlavorQuotaView]


class UtilizationPoint(BaseModel):
    time: float = Field(description="Start of the interval (UNIX time).")
    gpus_busy: float = Field(description="GPUs held by running attempts, averaged over the "
                                         "interval.")


class UtilizationView(BaseModel):
    start: float
    end: float
    step_seconds: float
    gpus_total: int
    points: list[UtilizationPoint]


class ProgressRecord(BaseModel):
    """One progress report of a job's workers, as received (kept in memory, see docs)."""

    time: float
    attempt: int | None
    step: int | None
    samples_per_second: float | None
    world_size: int | None
    metrics: dict
