"""The simulator's executor: a started job's completion becomes a future event.

Completion time = start + pause (restart overhead) + remaining work / rate, or the job's
fixed end (``JobSpec.ends_at``: a service replica serves until its service ends, and a restart
does not make up the time it was down; one started after that end finishes at once). A
preempted job's pending completion is made stale by the job's ``epoch`` (lazy deletion from
the heap); so is that of a job whose rate changed while running (``rerate``: space sharing).
"""

from __future__ import annotations

from heapq import heappush

from dlsched.sim.events import Event, EventQueue, Priority
from dlsched.workload.job import Job, JobStatus

_FINISH = Priority.FINISH
_RUNNING = JobStatus.RUNNING
_tuple = tuple.__new__  # Event(...) without its Python-level ``__new__``: one a start


class SimExecutor:
    def __init__(self, events: EventQueue) -> None:
        self.events = events
        # ``events.schedule``'s push, done here (a call less a start, ~10^6 on a contended run)
        self._heap, self._numbering = events.heap, events.numbering

    def start(self, job: Job, now: float) -> None:
        if job.rate <= 0.0:  # (a float literal: a float comparison the interpreter specializes)
            return  # cannot progress here; a policy that allows this will preempt it later
        spec = job.spec
        ends_at = spec.ends_at
        if ends_at is not None:
            finish = ends_at if ends_at > now else now
        else:
            # ``Job.remaining_work``, inlined (the same operations): a call a start
            # (``max`` and ``min`` of two as conditionals, the same values: no argument
            # parsing a call)
            done, work, productive = job.done_work, spec.work, job.productive_from
            if job.status is _RUNNING:
                since = productive if productive > job.progress_time else job.progress_time
                ran = now - since
                done = done + job.rate * (ran if ran > 0.0 else 0.0)
                done = done if done < work else work
            left = work - done
            finish = ((productive if productive > now else now)
                      + (left if left > 0.0 else 0.0) / job.rate)
        heappush(self._heap, (finish, _FINISH, next(self._numbering),
                              _tuple(Event, (_FINISH, job.job_id, job.epoch))))

    def rerate(self, job: Job, now: float) -> None:
        """The job's rate changed while it runs (a GPU partner came or went): its completion
        moves; the core has settled its progress and bumped its epoch (the old event is stale)."""
        self.start(job, now)

    def stop(self, job: Job, now: float) -> None:
        """Nothing to tear down: the job's epoch changes, so its completion event is stale."""
