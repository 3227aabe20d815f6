"""Start-up recovery: reload the jobs that had not ended, and settle every attempt the old service
left open so that no job runs twice and none is lost (``docs/runtime.md``, "Exactly once").

An attempt is recorded before its workers start (``Store.begin_attempt``), and each worker's
exit status is written by its wrapper (``executors/exit_status.py``), so after a ``kill -9``
the new service (a new *generation*) finds, for each job that was running:

- every worker's status written, all 0 and not asked to stop: the job **completed** while no
  service ran: it is recorded as finished and never started again;
- workers still running (found by their environment: job id, attempt, checkpoint directory,
  on Linux; Ray: its named detached actors say): the new service **adopts** them: the job runs
  on, on its GPUs, in the same attempt, now owned by this generation;
- otherwise (the workers died, were killed, or cannot be adopted): what still runs is stopped
  (SIGTERM, grace period, SIGKILL), the statuses are read again (a worker may have completed
  meanwhile), and the attempt is closed ``abandoned``, ``failed`` or ``stopped``; the job
  goes back to its queue to resume from its checkpoint with a new attempt number.

Jobs that were pending or preempted go back to the core with their original submission time
and the service, done work, preemptions and attempt count the store had for them, so the
policy ranks them as the old service would have; finished, failed and cancelled jobs stay.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dlsched.runtime.commands import PLACEHOLDER_WORK
from dlsched.runtime.core import Restored
from dlsched.runtime.executors.exit_status import ExitStatus, read_status, status_path
from dlsched.runtime.executors.processes import (
    PROC,
    alive,
    find_attempt_processes,
    stop_processes,
)
from dlsched.runtime.store import AttemptRow, JobRow
from dlsched.workload.job import JobSpec

if TYPE_CHECKING:
    from dlsched.runtime.service import Service

RESTARTED = "the service restarted while it ran; it resumes from its checkpoint"
# A job the policy had started whose workers had not launched yet (waiting for its victims).
RESTARTED_UNLAUNCHED = "the service restarted before its workers started; back in its queue"
COMPLETED = "its workers completed while no service was running"
ENDED_EXITING = ("the job had ended; its workers were still exiting when the service stopped, "
                 "and were stopped at its restart")


@dataclass
class _Open:
    """A job's open attempt and what is known of its workers."""

    row: JobRow
    attempt: AttemptRow
    pids: dict[int, int]  # rank -> live wrapper pid (Ray: live worker pid, on any node)
    reported: list[ExitStatus | None] | None = None  # Ray: what its actors saw, per rank

    def statuses(self) -> list[ExitStatus | None]:
        if self.reported is not None:
            return list(self.reported)
        log_path = Path(self.attempt.log_path)
        return [read_status(status_path(log_path, rank))
                for rank in range(len(self.attempt.gpus))]

    def exited_at(self, epoch: float, now: float, alive_at: float | None) -> float:
        """When its last worker exited (its wrapper wrote the status file), on the service's
        clock: an attempt that ended while no service ran did not run until the restart.
        A status missing (killed): ``now`` if workers were found running at the restart (this
        service stopped them), else when the old service was last alive (``alive_at``: they
        died with it, a reboot say, or never started): the outage is no run time."""
        log_path = Path(self.attempt.log_path)
        try:
            last = max(status_path(log_path, rank).stat().st_mtime
                       for rank in range(len(self.attempt.gpus))) - epoch
        except (OSError, ValueError):
            last = now if self.pids or alive_at is None else alive_at
        return min(now, max(self.attempt.start_time, last))


def recover(service: Service) -> None:
    service.next_seq = service.store.next_seq()
    rows = service.store.unfinished()
    open_attempts = service.store.open_attempts()
    ended = _ended_with_open_attempts(service, rows, open_attempts)
    if not rows and not ended:
        _release_remote(service)
        return
    opened = _open_attempts(service, rows, open_attempts)
    remote = hasattr(service.executor, "release_found")
    to_stop: set[int] = set(_stray_pids(service, rows + ended, opened, open_attempts))
    settled: dict[str, _Open] = {}
    requeued = service.store.last_requeued()
    alive_at = service.store.alive_at()  # the old service's last commit (none since)
    for row in rows:
        found = opened.get(row.id)
        if found is None:
            _resubmit(service, row, requeued)
        elif not _adopt(service, found, alive_at):
            if not remote:  # Ray's pids may be on other nodes: its actors stop them
                to_stop.update(found.pids.values())
            if row.id not in service.core.jobs:  # else: refused by this cluster (failed)
                settled[row.id] = found
    stop_processes(to_stop, service.config.grace_seconds)
    _release_remote(service)  # Ray: the statuses its actors reported before are kept
    for found in settled.values():
        _settle(service, found, alive_at, requeued)
    service.changed = True


def _ended_with_open_attempts(service: Service, rows: list[JobRow],
                              open_attempts: list[AttemptRow]) -> list[JobRow]:
    """Jobs that ended (cancelled, say) while the workers of an attempt of theirs were still
    exiting when the service died: those workers must not run on, unseen, on GPUs this
    service gives to other jobs."""
    unfinished = {row.id for row in rows}
    ids = sorted({a.job_id for a in open_attempts if a.job_id not in unfinished})
    return [row for job_id in ids if (row := service.store.job(job_id)) is not None]


def _open_attempts(service: Service, rows: list[JobRow],
                   open_attempts: list[AttemptRow]) -> dict[str, _Open]:
    """Each unfinished job's latest open attempt with its live workers; older open attempts
    (a stopped attempt still exiting when the service died) are closed as abandoned, and so
    is every open attempt of a job that had ended (their workers are stopped as strays)."""
    by_job: dict[str, list[AttemptRow]] = defaultdict(list)
    for attempt in open_attempts:
        by_job[attempt.job_id].append(attempt)
    unfinished = {row.id: row for row in rows}
    now = service.clock.now()
    opened = {}
    for job_id, attempts in by_job.items():
        attempts.sort(key=lambda a: a.number)
        settled_later = job_id in unfinished
        for old in attempts[:-1] if settled_later else attempts:
            if not settled_later:  # cancelled: its workers were asked to stop, stopped now
                service.batch.attempt_ended(job_id, old.number, now, "stopped", ENDED_EXITING)
            else:
                service.batch.attempt_ended(job_id, old.number, now, *_unsettled(old))
        if settled_later:
            opened[job_id] = _Open(unfinished[job_id], attempts[-1], {})
    for worker in find_attempt_processes({row.id: row.checkpoint_dir for row in rows}):
        found = opened.get(worker.job_id)
        if found is not None and worker.attempt == found.attempt.number and worker.leader:
            found.pids[worker.rank] = worker.pid
    if not PROC.is_dir():  # no environment to read: trust the recorded pids
        for found in opened.values():
            found.pids = {rank: pid for rank, pid in enumerate(found.attempt.pids) if alive(pid)}
    if hasattr(service.executor, "found_workers"):  # Ray: its detached actors say
        for found in opened.values():
            _report_statuses(service, found)
    return opened


def _report_statuses(service: Service, found: _Open) -> None:
    """A Ray attempt's live workers and exit statuses, as its actors report them."""
    executor: Any = service.executor
    job_id, number = found.row.id, found.attempt.number
    found.pids = executor.found_workers(job_id, number)
    found.reported = executor.found_statuses(job_id, number, len(found.attempt.gpus))


def _release_remote(service: Service) -> None:
    """Stop and release what the Ray executor found of the old service and did not adopt."""
    release = getattr(service.executor, "release_found", None)
    if release is not None:
        release(service.config.grace_seconds)


def _stray_pids(service: Service, rows: list[JobRow], opened: dict[str, _Open],
                open_attempts: list[AttemptRow]) -> list[int]:
    """Live workers of these jobs that belong to no attempt being settled (older attempts,
    attempts of jobs that ended)."""
    keep = {pid for found in opened.values() for pid in found.pids.values()}
    strays = [w.pid for w in find_attempt_processes({r.id: r.checkpoint_dir for r in rows})
              if w.pid not in keep and w.leader]
    if not PROC.is_dir():
        strays += [pid for attempt in open_attempts for pid in attempt.pids
                   if pid not in keep]
    return strays


def _adopt(service: Service, found: _Open, alive_at: float | None) -> bool:
    """Let a running job's live workers run on under this service (local subprocesses, or
    the Ray executor's detached actors: ``executors/ray_adopt.py``)."""
    adopt = getattr(service.executor, "adopt", None)
    statuses = found.statuses()
    waiting = [rank for rank, status in enumerate(statuses) if status is None]
    attempt, row = found.attempt, found.row
    gpus = tuple(int(gpu) for gpu in attempt.gpus)
    if (adopt is None or row.status != "running" or attempt.stop_time is not None or not waiting
            or any(rank not in found.pids for rank in waiting)
            or not service.core.can_adopt(gpus, row.gpu_share)):
        return False
    pids = tuple(found.pids.get(rank, 0) for rank in range(len(gpus)))
    adopt(row.id, attempt.number, gpus, pids, Path(attempt.log_path))
    _activate(service, row)
    # Its row was saved by alive_at; its workers ran on since.
    adopted = service.core.adopt(_spec(row), _restored(row), gpus, alive_at,
                                 attempt.mig_start)
    if adopted.status.is_terminal:
        service.executor.drop_adoption(row.id)  # type: ignore[attr-defined]
        service.batch.attempt_ended(row.id, attempt.number, service.clock.now(), "abandoned",
                                    "this cluster can no longer run the job")
        _refused(service, row.id, adopted.pending_reason)
        return False
    service.store.adopt_attempt(row.id, attempt.number, service.generation, pids)
    service.event(row.id, "adopted", f"attempt {attempt.number} kept running through a "
                                     f"restart of the service (pids {[p for p in pids if p]})")
    return True


def _settle(service: Service, found: _Open, alive_at: float | None,
            requeued: dict[str, float]) -> None:
    """Close an attempt whose workers are gone: finished if every worker completed, else the
    job goes back to its queue (a failed worker counts as a failure)."""
    row, number = found.row, found.attempt.number
    statuses = found.statuses()
    now = found.exited_at(service.clock.epoch, service.clock.now(), alive_at)
    if all(status is not None and status.completed for status in statuses):
        service.batch.attempt_ended(row.id, number, now, "succeeded", COMPLETED)
        service.batch.job(row.id, status="finished", finish_time=now, pending_reason="",
                          done_work=row.work_seconds or PLACEHOLDER_WORK)
        service.batch.event(row.id, now, "finished", COMPLETED)
        return
    failed = [rank for rank, s in enumerate(statuses)
              if s is not None and s.code != 0 and not s.asked_to_stop]
    if failed and row.status == "running":
        row.failures += 1
        message = f"rank {failed[0]} exited with code {statuses[failed[0]].code}"  # type: ignore[union-attr]
        service.batch.attempt_ended(row.id, number, now, "failed", message)
        service.batch.job(row.id, failures=row.failures)
        if row.failures >= service.config.max_attempts:
            reason = f"attempt {number} failed: {message} (gave up after {row.failures} failures)"
            service.batch.job(row.id, status="failed", finish_time=now, pending_reason=reason)
            service.batch.event(row.id, now, "failed", reason)
            return
    else:
        service.batch.attempt_ended(row.id, number, now, *_unsettled(found.attempt))
    _resubmit(service, row, requeued)


def _unsettled(attempt: AttemptRow) -> tuple[str, str]:
    """The outcome and message of an attempt the service died before it settled: ``stopped``
    if it had told the workers to stop (a preemption, a resize), else ``abandoned``."""
    if attempt.stop_time is not None:
        return "stopped", "its workers were stopping when the service stopped"
    return "abandoned", "the service stopped while it ran"


def _spec(row: JobRow) -> JobSpec:
    return JobSpec(row.id, row.submit_time, row.num_gpus, row.work_seconds or PLACEHOLDER_WORK,
                   queue=row.queue, gpu_types=(row.gpu_type,) if row.gpu_type else (),
                   priority=row.priority, min_gpus=row.min_gpus, max_gpus=row.max_gpus,
                   gpu_share=row.gpu_share, gpu_memory_gb=row.gpu_memory_gb,
                   cpus_per_gpu=row.cpus_per_gpu, memory_gb_per_gpu=row.memory_gb_per_gpu,
                   mig_profile=row.mig_profile, group=row.density_group,
                   max_per_node=row.max_per_node or 0)


def _refused(service: Service, job_id: str, reason: str) -> None:
    """A stored job this cluster can never run (a restart with fewer GPUs, or without its GPU
    type): the core failed it at its resubmission, as it refuses such a submission. Its end is
    an event, as every other end is, and ``serve`` names it at start
    (``Service.refused_at_start``): it ended with neither."""
    service.event(job_id, "failed", reason)
    service.refused_at_start.append((job_id, reason))


def _restored(row: JobRow, queued_since: float | None = None) -> Restored:
    return Restored(row.attained_service, row.done_work, row.preemptions,
                    started=row.attempts > 0, queued_since=queued_since)


def _activate(service: Service, row: JobRow) -> None:
    from dlsched.runtime.service import ActiveJob

    service.active[row.id] = ActiveJob(tuple(row.command), row.checkpoint_dir, row.working_dir,
                                       dict(row.env or {}), row.attempts, row.failures)


def _resubmit(service: Service, row: JobRow, requeued: dict[str, float]) -> None:
    """Back to the core; a job that was preempted keeps the time it went back to its
    queue (one that was running goes back now)."""
    _activate(service, row)
    since = requeued.get(row.id) if row.status == "preempted" else None
    job = service.core.resubmit(_spec(row), _restored(row, since))
    if job.status.is_terminal:
        _refused(service, row.id, job.pending_reason)
        return
    if row.status == "running":
        service.event(row.id, "requeued", RESTARTED if row.attempts else RESTARTED_UNLAUNCHED)
    else:
        service.touched.add(row.id)
