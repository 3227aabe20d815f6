"""The job model: an immutable ``JobSpec`` and the mutable ``Job`` the scheduler core owns.

Work is measured in ``WorkUnit`` units. ``REFERENCE_SECONDS`` means "seconds of execution at the
requested GPU count on the reference GPU type" (what duration-only traces such as Philly give);
``ITERATIONS`` means training steps whose speed comes from a measured throughput model.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from dlsched.errors import DlschedError
from dlsched.slots import slot_builder


class WorkUnit(enum.Enum):
    REFERENCE_SECONDS = "reference_seconds"
    ITERATIONS = "iterations"


class JobKind(enum.Enum):
    TRAINING = "training"
    SERVICE = "service"


class JobStatus(enum.Enum):
    PENDING = "pending"
    RUNNING = "running"
    PREEMPTED = "preempted"
    FINISHED = "finished"
    FAILED = "failed"
    CANCELLED = "cancelled"

    @property
    def is_terminal(self) -> bool:
        return self in _TERMINAL

    @property
    def is_waiting(self) -> bool:
        return self in _WAITING


# Tuples, not sets: membership by identity, without calling ``Enum.__hash__`` (Python code)
# several times per job on 10^5-job traces.
_TERMINAL = (JobStatus.FINISHED, JobStatus.FAILED, JobStatus.CANCELLED)
_WAITING = (JobStatus.PENDING, JobStatus.PREEMPTED)
_RUNNING = JobStatus.RUNNING

_TRANSITIONS: dict[JobStatus, tuple[JobStatus, ...]] = {
    JobStatus.PENDING: (JobStatus.RUNNING, JobStatus.FAILED, JobStatus.CANCELLED),
    JobStatus.RUNNING: (JobStatus.PREEMPTED, JobStatus.FINISHED, JobStatus.FAILED,
                        JobStatus.CANCELLED),
    # PREEMPTED -> FINISHED: a runtime job stopped just as its work ended, whose workers
    # exited 0 before the stop reached them (``RuntimeScheduler.complete``).
    JobStatus.PREEMPTED: (JobStatus.RUNNING, JobStatus.FINISHED, JobStatus.FAILED,
                          JobStatus.CANCELLED),
}
# The same table keyed by each state's value (a str, whose hash is cached): the lookup the
# core makes on every start, stop and finish.
_NEXT_BY_VALUE: dict[str, tuple[JobStatus, ...]] = {
    old.value: new for old, new in _TRANSITIONS.items()}


class InvalidTransition(DlschedError):
    """A job was asked to move between two states the state machine does not connect."""


def check_transition(job_id: str, old: JobStatus, new: JobStatus) -> None:
    if new not in _NEXT_BY_VALUE.get(old._value_, ()):
        raise InvalidTransition(f"job {job_id}: {old.value} -> {new.value} is not allowed")


@dataclass(frozen=True, slots=True)
class HostShare:
    """Host CPUs and memory (GiB) given to each of a job's workers (per GPU), when a policy
    decides them (Synergy, Mohan et al. OSDI'22); a job without one holds what its spec asks."""

    cpus: float
    memory_gb: float

    def __post_init__(self) -> None:
        if not (self.cpus >= 0 and self.memory_gb >= 0):
            raise ValueError(f"host share must be >= 0, got {self.cpus} CPUs, "
                             f"{self.memory_gb} GiB")


@dataclass(frozen=True, slots=True)
class JobSpec:
    """What a user asked for. Immutable; a trace is a tuple of these.

    ``num_gpus`` workers form a gang: all run or none. ``gpu_share`` below 1 asks for a fraction of
    each GPU's compute (Alibaba 2023 pods). ``min_gpus``/``max_gpus`` mark an elastic job.

    Per worker (one GPU or one fraction of a GPU) a job may also ask for ``gpu_memory_gb`` of its
    GPU's memory and ``cpus_per_gpu`` CPUs and ``memory_gb_per_gpu`` GiB of host memory on the
    worker's node; 0 asks for none (the scheduler does not account for it).

    ``tensor_parallel`` > 1 groups the workers into tensor-parallel groups of that many GPUs
    (ranks ``k*tp`` to ``k*tp + tp - 1``), each of which must sit on one node: Megatron-LM keeps
    tensor parallelism inside a node because its all-reduces run on every layer (Narayanan et al.,
    SC'21, section 3.3 and takeaway 1). ``num_gpus`` must be a multiple of it.

    ``mig_profile`` (e.g. ``3g.20gb``) asks for a MIG instance per worker instead of a share of
    a GPU; ``gpu_share`` is then the instance's compute slices / 7 (``dlsched/mig``).

    ``max_per_node`` > 0 caps how many workers of the job's ``group`` (the jobs sharing that
    name: an app's instances; without a group, the job's own workers) run on one node: an
    anti-affinity that spreads replicas so one node's failure takes few of them (the
    ``max_instance_per_node`` of Alibaba's DLRM serving trace, Yang et al. NSDI'25; Kubernetes'
    pod anti-affinity and topology spread serve the same end). 0: no cap.
    """

    job_id: str
    submit_time: float
    num_gpus: int
    work: float
    work_unit: WorkUnit = WorkUnit.REFERENCE_SECONDS
    queue: str = "default"
    gpu_types: tuple[str, ...] = ()
    gpu_share: float = 1.0
    model: str | None = None
    batch_size: int | None = None
    priority: int = 0
    deadline: float | None = None
    min_gpus: int | None = None
    max_gpus: int | None = None
    cpus_per_gpu: float = 0.0
    memory_gb_per_gpu: float = 0.0
    pool: str | None = None
    kind: JobKind = JobKind.TRAINING
    gpu_memory_gb: float = 0.0
    tensor_parallel: int = 1
    mig_profile: str | None = None  # a MIG instance per worker (dlsched/mig; see below)
    group: str | None = None  # the jobs whose workers ``max_per_node`` counts together
    max_per_node: int = 0  # the most workers of the group on one node (0: no cap)
    # when the job ends whatever work it did (a service replica: its service's end); a job
    # the core stopped and restarted then does not make up the time it was down
    ends_at: float | None = None

    def __post_init__(self) -> None:
        problem = self.problem()
        if problem is not None:
            raise ValueError(f"job {self.job_id}: {problem}")

    def problem(self) -> str | None:
        """The first impossible value in this spec, or None."""
        if (self.num_gpus >= 1 and self.work > 0 and self.submit_time >= 0
                and 0 < self.gpu_share <= 1 and self.min_gpus is None and self.max_gpus is None
                and self.tensor_parallel == 1 and self.cpus_per_gpu == 0
                and self.memory_gb_per_gpu == 0 and self.gpu_memory_gb == 0
                and self.max_per_node == 0 and self.ends_at is None):
            return None  # the common spec, which every test below passes: told at once
        if self.num_gpus < 1:
            return f"num_gpus must be >= 1, got {self.num_gpus}"
        if not self.work > 0:
            return f"work must be > 0, got {self.work}"
        if self.submit_time < 0:
            return f"submit_time must be >= 0, got {self.submit_time}"
        if not 0 < self.gpu_share <= 1:
            return f"gpu_share must be in (0, 1], got {self.gpu_share}"
        if self.min_gpus is not None and self.min_gpus > self.num_gpus:
            return f"min_gpus {self.min_gpus} > num_gpus {self.num_gpus}"
        if self.max_gpus is not None and self.max_gpus < self.num_gpus:
            return f"max_gpus {self.max_gpus} < num_gpus {self.num_gpus}"
        if self.tensor_parallel < 1 or self.num_gpus % self.tensor_parallel:
            return (f"tensor_parallel must be >= 1 and divide num_gpus {self.num_gpus}, "
                    f"got {self.tensor_parallel}")
        if self.tensor_parallel > 1 and self.gpu_share < 1:
            return "tensor_parallel > 1 needs whole GPUs (gpu_share 1)"
        if self.ends_at is not None and not self.ends_at > self.submit_time:
            return f"ends_at must be after submit_time {self.submit_time}, got {self.ends_at}"
        for name in ("cpus_per_gpu", "memory_gb_per_gpu", "gpu_memory_gb"):
            value = getattr(self, name)
            if not value >= 0 or value == float("inf"):
                return f"{name} must be a finite number >= 0, got {value}"
        if not (self.max_per_node >= 0 and self.max_per_node == int(self.max_per_node)):
            return f"max_per_node must be an integer >= 0, got {self.max_per_node!r}"
        return None

    @property
    def asks_beyond_gpus(self) -> bool:
        """Whether the job asks for CPUs, host memory or GPU memory besides GPU compute."""
        return bool(self.cpus_per_gpu or self.memory_gb_per_gpu or self.gpu_memory_gb
                    or self.max_per_node)

    @property
    def density_group(self) -> str:
        """The name ``max_per_node`` counts workers under: the group, else the job itself."""
        return self.group if self.group is not None else f"job:{self.job_id}"

    @property
    def is_elastic(self) -> bool:
        return self.min_gpus is not None or self.max_gpus is not None


_PLAIN = slot_builder(JobSpec, ("job_id", "submit_time", "num_gpus", "work", "queue", "pool"))


def plain_spec(job_id: str, submit_time: float, num_gpus: int, work: float,
               queue: str = "default", pool: str | None = None) -> JobSpec:
    """``JobSpec(job_id, submit_time, num_gpus, work, queue=queue, pool=pool)``: the same
    object and the same errors (values that ``JobSpec.problem``'s test of the common spec does
    not pass at once go through ``JobSpec`` itself), made ~2.5x faster (``dlsched/slots.py``):
    a reader's or generator's 10^5-10^6 specs."""
    if num_gpus >= 1 and work > 0 and submit_time >= 0:
        return _PLAIN(job_id, submit_time, num_gpus, work, queue, pool)
    return JobSpec(job_id, submit_time, num_gpus, work, queue=queue, pool=pool)


@dataclass(slots=True, eq=False)  # a job is itself: identity, not field-by-field equality
class Job:
    """A job's run-time state. Only the scheduler core mutates it; policies only read it.

    Progress is kept as ``done_work`` up to ``progress_time``; while running at ``rate`` (work
    units per second) after ``productive_from`` (a restart costs a pause), it grows linearly.
    ``allocation`` keeps the last GPUs a job held after it stops (a preempted job's record of
    where it ran): test ``status`` to know whether it runs, not ``allocation``.
    """

    spec: JobSpec
    job_id: str = field(init=False)
    status: JobStatus = JobStatus.PENDING
    allocation: tuple[int, ...] = ()
    shares: tuple[float, ...] = ()
    rate: float = 0.0
    done_work: float = 0.0
    progress_time: float = 0.0
    productive_from: float = 0.0
    attained: float = 0.0
    attained_time: float = 0.0
    run_started: float | None = None
    last_run_seconds: float = 0.0
    run_seconds: float = 0.0  # wall time it held GPUs, over all its runs (settled ones)
    queued_since: float = 0.0
    first_start: float | None = None
    finish_time: float | None = None
    preemptions: int = 0
    resizes: int = 0
    epoch: int = 0
    gpu_seconds: float = 0.0
    pending_reason: str = ""
    host: HostShare | None = None  # host CPUs/memory per worker a policy decided (Synergy)
    # When the core last set ``pending_reason`` (see ``Scheduler.own_reason``).
    reason_stamp: int = 0
    seq: int = 0  # the core's count of jobs submitted before it (its submission number)

    def __post_init__(self) -> None:
        self.job_id = self.spec.job_id
        self.progress_time = self.spec.submit_time
        self.queued_since = self.spec.submit_time

    @property
    def num_gpus(self) -> int:
        return len(self.allocation) if self.allocation else self.spec.num_gpus

    def work_done(self, now: float) -> float:
        if self.status is not _RUNNING:
            return self.done_work
        since = max(self.progress_time, self.productive_from)
        return min(self.spec.work, self.done_work + self.rate * max(0.0, now - since))

    def remaining_work(self, now: float) -> float:
        return max(0.0, self.spec.work - self.work_done(now))

    def attained_service(self, now: float) -> float:
        """GPU-seconds received so far (Tiresias' attained service)."""
        if self.status is not _RUNNING:
            return self.attained
        return self.attained + len(self.allocation) * (now - self.attained_time)

    def set_status(self, new: JobStatus) -> None:
        check_transition(self.job_id, self.status, new)
        self.status = new
