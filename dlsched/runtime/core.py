"""The scheduler core as the runtime drives it: the shared ``Scheduler`` plus what only a real
cluster needs (see ``docs/runtime.md``). Nodes the executor lost (a dead Ray node) and workers
that died go through the core's own failure path, as in the simulator: ``Scheduler.fail_node``
marks the node down (every snapshot carries it, so no policy places a worker there) and stops
the jobs on it; ``fail_job`` stops a job whose workers were lost; ``node_up`` brings a node
back. ``submit`` still judges a job against the whole cluster: a node that is down may come
back.
- ``refresh_rate``: a running job's speed changes when its workers report a new measured
  throughput; its progress so far is folded in at the old rate first.
- ``launched``: a started job accrues service, progress and GPU time from the launch of its
  workers, not from the cycle that started it (they may wait for its victims to exit).
- ``reason_for``: a job the policy started while the workers of the jobs it preempted are
  still checkpointing and exiting waits for them (the executor holds its start until their
  GPUs are free, ``AttemptBook.waiting_for``); its reason then names them (Kueue's
  "waiting for preempted workloads to exit", ``Reason.WAITING_FOR_EVICTION``), with or
  without tenants; a Ray job whose GPUs Ray has not reserved yet says so
  (``RayExecutor.unlaunched_reason``), and accrues nothing meanwhile either.
- ``complete``: a job whose workers all exited 0 finishes, even if it was being stopped (its
  work ended just before the stop reached it): a completed job never starts again.
- ``adopt``: after a restart, a job whose workers outlived the old service runs on, on the
  GPUs it held, without a new attempt.
- ``resubmit``: after a restart, a job comes back with the service it had attained, the work
  it had done and the preemptions it had suffered, so the policies (Tiresias's 2D-LAS queue,
  Gu et al. NSDI'19 §3.2; SRTF's remaining work) rank it as the old service did; a job that
  had run comes back ``preempted`` (waiting to resume from its checkpoint), as it was shown.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from dlsched.scheduling.decisions import CycleResult
from dlsched.scheduling.scheduler import Scheduler
from dlsched.tenancy.reasons import Reason
from dlsched.workload.job import Job, JobSpec, JobStatus


@dataclass(frozen=True)
class Restored:
    """What a job had when the service stopped (from the store)."""

    attained_service: float = 0.0  # GPU-seconds
    done_work: float = 0.0  # work units
    preemptions: int = 0
    started: bool = False  # it ran at least once (a resume, not a first start)
    queued_since: float | None = None  # a preempted job: when it went back to its queue


class RuntimeScheduler(Scheduler):
    def cycle(self) -> CycleResult:
        self.hold_unlaunched(self.running)
        return super().cycle()

    def hold_unlaunched(self, job_ids: Iterable[str]) -> None:
        """Started jobs among ``job_ids`` whose workers are not launched yet accrue nothing up
        to now (``launched``): before a cycle reads them, and before the service saves them
        (a restart would give them service and progress they never had)."""
        now = self.clock.now()
        for job_id in self._unlaunched(job_ids):
            self.launched(job_id, now)

    def _unlaunched(self, job_ids: Iterable[str]) -> list[str]:
        waiting_for = getattr(self.executor, "waiting_for", None)
        if waiting_for is None:
            return []
        return [job_id for job_id in job_ids if job_id in self.running
                and (waiting_for(job_id) or self._unlaunched_reason(job_id))]

    def _unlaunched_reason(self, job_id: str) -> str:
        """The executor's own reason why a started job has no workers yet (the Ray executor:
        its GPUs are not reserved in Ray yet), or ""."""
        reason = getattr(self.executor, "unlaunched_reason", None)
        return reason(job_id) if reason is not None else ""

    def launched(self, job_id: str, now: float) -> None:
        """A started job's workers run from ``now``: the time it waited for the jobs it
        preempted to exit is neither attained service nor progress nor GPU time (the victims
        still held the GPUs). Without this, under Tiresias a job waiting for a slow
        checkpoint could pass the demotion threshold and be preempted back by its own victim
        before it ever ran."""
        job = self.running.get(job_id)
        if job is None or job.run_started is None or now <= job.run_started:
            return
        was = job.run_started
        job.productive_from += now - was
        job.run_started = now
        self.journal.note(job)
        job.progress_time = max(job.progress_time, now)
        job.attained_time = max(job.attained_time, now)
        for hook in self._relaunch_hooks:  # Tiresias' index and demotion heap: the new start
            hook(job, was, now)

    def reason_for(self, job: Job) -> str:
        """The core's reason, or, for a started job whose executor still waits for the workers
        of the jobs it preempted to exit, that wait and their ids."""
        if job.status is JobStatus.RUNNING:
            waiting_for = getattr(self.executor, "waiting_for", None)
            victims = waiting_for(job.job_id) if waiting_for is not None else ()
            if victims:
                return f"{Reason.WAITING_FOR_EVICTION.value} ({', '.join(victims)})"
            reason = self._unlaunched_reason(job.job_id)
            if reason:
                return reason
        return super().reason_for(job)

    def refresh_rate(self, job_id: str) -> None:
        """Re-ask the throughput model for a running job's rate (after a new measurement)."""
        job = self.running.get(job_id)
        if job is None:
            return
        now = self.clock.now()
        job.done_work = job.work_done(now)
        job.progress_time = now
        job.rate = self.throughput.rate(job.spec, self.placement_of(job))
        self.journal.note(job)

    def complete(self, job_id: str) -> None:
        """Finish a job whose workers completed: running (the usual case; a start of it that
        still waits for those workers to exit is dropped) or back in its queue (it was
        preempted as its work ended)."""
        job = self.jobs[job_id]
        now = self.clock.now()
        if job.status is JobStatus.RUNNING:
            self.executor.stop(job, now)
            self.finish(job_id)
            return
        self.waiting.discard(job_id)
        job.done_work = job.spec.work
        job.set_status(JobStatus.FINISHED)
        job.finish_time = now
        job.pending_reason = ""

    def can_adopt(self, gpus: tuple[int, ...], share: float = 1.0) -> bool:
        """Whether ``gpus`` exist in this cluster and have ``share`` free (for ``adopt``)."""
        return bool(gpus) and (share < 1.0 or len(set(gpus)) == len(gpus)) and all(
            0 <= gpu < self.cluster.num_gpus and self.free[gpu] >= share - 1e-9
            for gpu in gpus)

    def adopt(self, spec: JobSpec, restored: Restored, gpus: tuple[int, ...],
              ran_since: float | None = None, mig_start: int | None = None) -> Job:
        """A job that was running when the service died and whose workers still run: it runs
        on, on ``gpus`` (``can_adopt``; the executor takes over the workers in ``start``).
        Its workers ran unseen since ``ran_since`` (when ``restored`` was saved): that time
        is service and progress too. A job this cluster can no longer run comes back failed,
        as ``submit`` makes it. ``mig_start``: a MIG worker's instance start slice (recorded
        with its attempt), booked as it is rather than where the placement would put it now."""
        job = self.resubmit(spec, restored)
        if job.status.is_terminal:
            return job
        self.waiting.discard(job.job_id)
        job.set_status(JobStatus.RUNNING)
        job.first_start = spec.submit_time if job.first_start is None else job.first_start
        self.running[job.job_id] = job
        now = self.clock.now()
        if mig_start is not None and self.mig is not None:  # the slices its worker holds
            self.mig.planned[job.job_id] = (gpus[0], mig_start)
        self._launch(job, gpus, (spec.gpu_share,) * len(gpus), now, 0.0)
        unseen = 0.0 if ran_since is None else max(0.0, now - ran_since)
        job.attained += len(gpus) * unseen
        job.done_work = min(spec.work, job.done_work + job.rate * unseen)
        return job

    def resubmit(self, spec: JobSpec, restored: Restored) -> Job:
        """Submit a job that existed before a restart, with its counters restored. It is
        taken out of the waiting queue and put back so a static order (Tiresias) files it
        under its restored queue."""
        job = self.submit(spec)
        if job.status is not JobStatus.PENDING:
            return job  # refused (can never run)
        self.waiting.discard(job.job_id)
        job.attained = restored.attained_service
        job.done_work = min(restored.done_work, spec.work)
        job.preemptions = restored.preemptions
        if restored.started:
            # The core only asks whether it is set (a resume pays the restart overhead); the
            # real first start is in the store's first attempt.
            job.first_start = spec.submit_time
            # It ran and waits to resume from its checkpoint: preempted, as the old service
            # showed it (Kueue keeps an evicted workload's Evicted condition), not a job
            # that never ran. Restored, not a transition: pending -> preempted has none.
            job.status = JobStatus.PREEMPTED
            if restored.queued_since is not None:  # Kueue's requeue backoff counts from it
                job.queued_since = restored.queued_since
        # The plugins told of it at ``submit`` saw no service yet: told again with the restored
        # counters (Tiresias files a waiting job under its service's queue then, and its
        # static order reads that queue).
        for hook in self._waiting_hooks:
            hook(job)
        self.waiting.add(job)
        return job
