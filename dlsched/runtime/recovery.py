"""Start-up recovery: reload the jobs that had not ended and make sure none runs twice.

Workers of a service that died (``kill -9``) keep running, but their exit status can no longer be
collected, so they are stopped (SIGTERM, grace period, SIGKILL) before anything restarts: the
jobs then resume from their checkpoints. They are found by their environment (job id and
checkpoint directory, on Linux) and by the pids recorded per attempt elsewhere. Jobs that were
pending, preempted or running go back to the core with their original submission time and the
service, done work, preemptions and attempt count the store had for them (written every
iteration that changes them and every ``STATE_SAVE_SECONDS`` while they run), so the policy
ranks them as the old service would have; finished, failed and cancelled jobs stay as they
are.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from dlsched.runtime.commands import PLACEHOLDER_WORK
from dlsched.runtime.core import Restored
from dlsched.runtime.executors.processes import PROC, find_workers, stop_processes
from dlsched.runtime.store import JobRow
from dlsched.workload.job import JobSpec

if TYPE_CHECKING:
    from dlsched.runtime.service import Service

RESTARTED = "the service restarted while it ran; it resumes from its checkpoint"


def recover(service: Service) -> None:
    service.next_seq = service.store.next_seq()
    rows = service.store.unfinished()
    if not rows:
        return
    _stop_leftovers(service, rows)
    for row in rows:
        _resubmit(service, row)
    service.changed = True


def _stop_leftovers(service: Service, rows: list[JobRow]) -> None:
    open_attempts = service.store.open_attempts()
    pids = set(find_workers({row.id: row.checkpoint_dir for row in rows}))
    if not PROC.is_dir():  # no way to check who a pid is now: trust the record
        pids |= {pid for attempt in open_attempts for pid in attempt.pids}
    stop_processes(pids, service.config.grace_seconds)
    now = service.clock.now()
    for attempt in open_attempts:
        service.batch.attempt_ended(attempt.job_id, attempt.number, now, "abandoned",
                                    "the service stopped while it ran")


def _resubmit(service: Service, row: JobRow) -> None:
    from dlsched.runtime.service import ActiveJob

    spec = JobSpec(row.id, row.submit_time, row.num_gpus, row.work_seconds or PLACEHOLDER_WORK,
                   queue=row.queue, gpu_types=(row.gpu_type,) if row.gpu_type else (),
                   priority=row.priority, min_gpus=row.min_gpus, max_gpus=row.max_gpus)
    service.active[row.id] = ActiveJob(tuple(row.command), row.checkpoint_dir, row.working_dir,
                                       dict(row.env or {}), row.attempts, row.failures)
    service.core.resubmit(spec, Restored(row.attained_service, row.done_work,
                                         row.preemptions, started=row.attempts > 0))
    if row.status == "running":
        service.event(row.id, "requeued", RESTARTED)
    else:
        service.touched.add(row.id)
