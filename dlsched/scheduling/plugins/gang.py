"""Gang permit: a distributed job runs all of its workers or none."""

from __future__ import annotations

from dlsched.scheduling.framework import SUCCESS, Code, Status
from dlsched.scheduling.state import CycleState
from dlsched.wording import count_of
from dlsched.workload.job import Job


class GangPermit:
    name = "gang"

    def permit(self, state: CycleState, job: Job, gpus: tuple[int, ...]) -> Status:
        if len(gpus) == job.spec.num_gpus:
            return SUCCESS
        return Status(Code.UNSCHEDULABLE,
                      f"gang needs {count_of(job.spec.num_gpus, 'worker')}, got {len(gpus)}",
                      self.name)
