"""The job side of dlsched: what a training script uses to run under the scheduler.

Framework-agnostic core (stdlib only): ``JobContext`` (the environment contract and the stop
flag), ``CheckpointStore`` (atomic numbered checkpoints), ``Reporter`` (progress to the
service). PyTorch helpers live in ``dlsched.job.torch`` and import torch only there.
"""

from dlsched.job.checkpoint import CheckpointError, CheckpointFile, CheckpointStore
from dlsched.job.context import JobContext, JobEnvError
from dlsched.job.report import Reporter
from dlsched.job.seeding import derive_seed

__all__ = [
    "CheckpointError",
    "CheckpointFile",
    "CheckpointStore",
    "JobContext",
    "JobEnvError",
    "Reporter",
    "derive_seed",
]
