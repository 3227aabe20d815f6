"""What a worker process knows about its job: a typed, frozen view of the service's environment.

The service starts every worker with the variables below (the contract in
``docs/job-library.md``). With none of them set a script runs as a single local worker, rank 0
of 1, so the same script works under the service and by hand.
"""

from __future__ import annotations

import math
import os
import signal
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType

from dlsched.errors import DlschedError

JOB_ID = "DLSCHED_JOB_ID"
ATTEMPT = "DLSCHED_ATTEMPT"
CHECKPOINT_DIR = "DLSCHED_CHECKPOINT_DIR"
SERVICE_URL = "DLSCHED_SERVICE_URL"
TOKEN = "DLSCHED_TOKEN"
GRACE_SECONDS = "DLSCHED_GRACE_SECONDS"
CHECKPOINT_SECONDS = "DLSCHED_CHECKPOINT_SECONDS"  # the scheduler's checkpoint interval
GPU_MEMORY_FRACTION = "DLSCHED_GPU_MEMORY_FRACTION"  # a fractional job's GPU memory limit

DEFAULT_GRACE_SECONDS = 30.0


class JobEnvError(DlschedError):
    """A malformed job environment variable, e.g. ``RANK=2`` with ``WORLD_SIZE=2``."""


class StopFlag:
    """Set from a signal handler, read by the training loop between steps.

    A plain attribute, not a lock or an ``Event``: a signal handler runs between bytecodes of the
    main thread and must not wait on anything the interrupted code may hold.
    """

    def __init__(self) -> None:
        self.requested = False
        self.signal_number: int | None = None


@dataclass(frozen=True)
class JobContext:
    """One worker's view of its job (ids, rank, peers, checkpoint dir, service, stop flag)."""

    job_id: str
    attempt: int
    rank: int
    world_size: int
    local_rank: int
    master_addr: str
    master_port: int
    checkpoint_dir: Path
    visible_devices: tuple[str, ...] | None = None  # None: CUDA_VISIBLE_DEVICES unset (all)
    service_url: str | None = None
    token: str | None = field(default=None, repr=False)
    grace_seconds: float = DEFAULT_GRACE_SECONDS
    checkpoint_seconds: float | None = None  # save at least this often (None: the job's own)
    # The share of its GPU's memory the worker may use (None: no limit); applied to PyTorch by
    # ``dlsched.job.torch.device_for`` (``docs/sharing.md``, runtime).
    gpu_memory_fraction: float | None = None
    _stop: StopFlag = field(default_factory=StopFlag, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.world_size < 1:
            raise JobEnvError(f"WORLD_SIZE must be >= 1, got {self.world_size}")
        if not 0 <= self.rank < self.world_size:
            raise JobEnvError(f"RANK must be in [0, {self.world_size}), got {self.rank}")
        if not 0 < self.master_port < 65536:
            raise JobEnvError(f"MASTER_PORT must be in 1..65535, got {self.master_port}")
        if not 0 <= self.local_rank < self.world_size:
            raise JobEnvError(f"LOCAL_RANK must be in [0, {self.world_size}), got "
                              f"{self.local_rank}")
        if self.attempt < 1:
            raise JobEnvError(f"{ATTEMPT} is 1-based, got {self.attempt}")
        # a grace period of -3 s or nan was taken as given (the service sends a finite one)
        if not (math.isfinite(self.grace_seconds) and self.grace_seconds >= 0):
            raise JobEnvError(f"{GRACE_SECONDS} must be a finite number of seconds >= 0, got "
                              f"{self.grace_seconds:g}")
        if self.checkpoint_seconds is not None and not self.checkpoint_seconds > 0:
            raise JobEnvError(f"{CHECKPOINT_SECONDS} must be > 0 seconds, got "
                              f"{self.checkpoint_seconds:g}")
        fraction = self.gpu_memory_fraction
        if fraction is not None and not 0 < fraction <= 1:
            raise JobEnvError(f"{GPU_MEMORY_FRACTION} must be in (0, 1], got {fraction}")

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None,
                 default_checkpoint_dir: str | Path | None = None) -> JobContext:
        """Read the contract variables from ``env`` (default ``os.environ``).

        ``DLSCHED_CHECKPOINT_DIR`` wins over ``default_checkpoint_dir`` because the service owns
        the directory that survives attempts; without either, a fresh per-process temp path is
        used (so a run by hand never silently resumes an old checkpoint); ranks of one job
        started by hand share it through ``MASTER_PORT``.
        """
        env = os.environ if env is None else env
        job_id = env.get(JOB_ID) or "local"
        return cls(
            job_id=job_id,
            attempt=_int(env, ATTEMPT, 1),
            rank=_int(env, "RANK", 0),
            world_size=_int(env, "WORLD_SIZE", 1),
            local_rank=_int(env, "LOCAL_RANK", 0),
            master_addr=env.get("MASTER_ADDR") or "127.0.0.1",
            master_port=_int(env, "MASTER_PORT", 29500),
            checkpoint_dir=_checkpoint_dir(env, job_id, default_checkpoint_dir),
            visible_devices=_devices(env.get("CUDA_VISIBLE_DEVICES")),
            service_url=(env.get(SERVICE_URL) or "").rstrip("/") or None,
            token=env.get(TOKEN) or None,
            grace_seconds=_float(env, GRACE_SECONDS, DEFAULT_GRACE_SECONDS),
            checkpoint_seconds=_optional_float(env, CHECKPOINT_SECONDS),
            gpu_memory_fraction=_optional_float(env, GPU_MEMORY_FRACTION),
        )

    @property
    def is_chief(self) -> bool:
        """Rank 0: the worker that writes checkpoints, reports progress and prints results."""
        return self.rank == 0

    @property
    def is_distributed(self) -> bool:
        return self.world_size > 1

    @property
    def stop_requested(self) -> bool:
        """True once the service asked this worker to stop (SIGTERM) or ``request_stop`` ran."""
        return self._stop.requested

    def request_stop(self, signal_number: int | None = None) -> None:
        self._stop.requested = True
        self._stop.signal_number = signal_number

    def install_signal_handler(
        self, signals: Iterable[signal.Signals] = (signal.SIGTERM,),
    ) -> dict[signal.Signals, object]:
        """Make ``signals`` only set the stop flag; returns the previous handlers.

        The loop checks ``stop_requested`` between steps, saves a checkpoint and exits 0, so a
        preempted job loses at most the step in flight. Call from the main thread, early.
        """
        def handler(signal_number: int, _frame: FrameType | None) -> None:
            self.request_stop(signal_number)

        return {sig: signal.signal(sig, handler) for sig in signals}


def _int(env: Mapping[str, str], name: str, default: int) -> int:
    raw = env.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        return int(raw)
    except ValueError:
        raise JobEnvError(f"{name} must be an integer, got {raw!r}") from None


def _float(env: Mapping[str, str], name: str, default: float) -> float:
    raw = env.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        return float(raw)
    except ValueError:
        raise JobEnvError(f"{name} must be a number, got {raw!r}") from None


def _optional_float(env: Mapping[str, str], name: str) -> float | None:
    raw = env.get(name)
    return None if raw is None or raw.strip() == "" else _float(env, name, 0.0)


def _devices(raw: str | None) -> tuple[str, ...] | None:
    if raw is None:
        return None
    return tuple(part.strip() for part in raw.split(",") if part.strip())


def _checkpoint_dir(env: Mapping[str, str], job_id: str,
                    default: str | Path | None) -> Path:
    chosen = env.get(CHECKPOINT_DIR) or default
    if chosen:
        return Path(chosen)
    if _int(env, "WORLD_SIZE", 1) > 1:  # every rank must see the same directory
        key = f"port{_int(env, 'MASTER_PORT', 29500)}"
    else:
        key = f"pid{os.getpid()}"
    return Path(tempfile.gettempdir()) / f"dlsched-{job_id}-{key}"
