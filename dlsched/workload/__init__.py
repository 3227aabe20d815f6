"""Work: training jobs and their specs, states and traces."""

from dlsched.workload.job import Job, JobKind, JobSpec, JobStatus, WorkUnit
from dlsched.workload.trace import Trace

__all__ = ["Job", "JobKind", "JobSpec", "JobStatus", "Trace", "WorkUnit"]
