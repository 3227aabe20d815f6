"""Tiresias (Gu et al., NSDI'19): discretized two-dimensional least-attained-service (2D-LAS).

Rules implemented (paper §3.2 and §4.1):
- A job's attained service is GPUs x time it has run (2D: spatial and temporal).
- K priority queues split by attained-service thresholds; a job starts in queue 0 and is demoted
  when its attained service crosses the next threshold. Higher queues go first; within a queue,
  jobs are ordered FIFO by submission time (the paper's default: §4.1).
- Jobs in higher queues preempt running jobs of lower queues.
- Starvation: a waiting job whose wait since it last ran exceeds ``promote_knob`` times its last
  execution time is promoted back to queue 0 (the paper's PROMOTEKNOB; 0 disables it).
It needs no job duration (non-clairvoyant). A cycle is scheduled for the next demotion or
promotion time, so queue changes take effect when they happen.
"""

from __future__ import annotations

import bisect
import heapq

from dlsched.scheduling.plugins.preemption import Preemption
from dlsched.scheduling.profile import Profile
from dlsched.scheduling.registry import register_policy
from dlsched.scheduling.state import CycleState
from dlsched.workload.job import Job, JobStatus

DEFAULT_THRESHOLDS = (3600.0,)
SERVICE_TOLERANCE = 1e-6  # GPU-seconds


class DiscretizedLas:
    """QueueSort and wake-ups for 2D-LAS with queue thresholds in GPU-seconds."""

    name = "tiresias-2dlas"

    def __init__(self, thresholds: tuple[float, ...], promote_knob: float) -> None:
        if list(thresholds) != sorted(thresholds) or any(t <= 0 for t in thresholds):
            raise ValueError(f"queue thresholds must be positive and increasing: {thresholds}")
        self.thresholds = thresholds
        self.promote_knob = promote_knob
        self._offsets: dict[str, float] = {}  # service forgiven at a starvation promotion
        self._demotions: list[tuple[float, str, float | None, Job]] = []
        self._seeded = False

    def reserve(self, state: CycleState, job: Job, gpus: tuple[int, ...]) -> None:
        """A promoted job restarts its count in queue 0 (Tiresias §4.1, starvation). The job
        starts at ``now``: note when it will cross its next threshold."""
        if self._starving(state, job):
            self._offsets[job.job_id] = job.attained_service(state.now)
        self._push_demotion(state, job, state.now, len(gpus))

    def _service(self, state: CycleState, job: Job) -> float:
        return job.attained_service(state.now) - self._offsets.get(job.job_id, 0.0)

    def _level(self, service: float) -> int:
        # A wake-up set for a threshold crossing may see the service a hair below it (float
        # rounding); the tolerance makes the demotion happen at the wake-up, not never.
        return bisect.bisect_right(self.thresholds, service + SERVICE_TOLERANCE)

    def queue_of(self, state: CycleState, job: Job) -> int:
        if self._starving(state, job):
            return 0
        return self._level(self._service(state, job))

    def sort_key(self, state: CycleState, job: Job) -> tuple[int, float, str]:
        return (self.queue_of(state, job), job.spec.submit_time, job.job_id)

    def _starving(self, state: CycleState, job: Job) -> bool:
        if not self.promote_knob or not job.status.is_waiting or job.last_run_seconds <= 0:
            return False
        return state.now - job.queued_since >= self.promote_knob * job.last_run_seconds

    def next_wakeup(self, state: CycleState) -> float | None:
        times = [self._next_demotion(state)]
        if self.promote_knob:
            times += [job.queued_since + self.promote_knob * job.last_run_seconds
                      for job in state.snapshot.waiting
                      if job.last_run_seconds > 0 and not self._starving(state, job)]
            times += [state.now + self.promote_knob * (state.now - job.run_started)
                      for job in state.evicted.values() if job.run_started is not None]
        future = [t for t in times if t is not None and t > state.now]
        return min(future) if future else None

    def _next_demotion(self, state: CycleState) -> float | None:
        """Earliest future threshold crossing of a running job, from a heap of
        (time, job id, start time, job) kept since each job started; stale entries (the job
        stopped or restarted since) are dropped lazily."""
        heap = self._demotions
        if not self._seeded:
            self._seeded = True
            for job in state.snapshot.running:
                self._push_demotion(state, job, job.run_started)
        while heap:
            at, _, started, job = heap[0]
            just_started = job.job_id in state.started and started == state.now
            if not just_started and (job.run_started != started
                                     or job.status is not JobStatus.RUNNING
                                     or job.job_id in state.evicted):
                heapq.heappop(heap)
            elif at <= state.now:
                heapq.heappop(heap)
                self._push_demotion(state, job, started)
            else:
                return at
        return None

    def _push_demotion(self, state: CycleState, job: Job, started: float | None,
                       gpus: int | None = None) -> None:
        gpus = gpus or len(job.allocation) or job.spec.num_gpus
        service = self._service(state, job)
        level = self._level(service)
        if level < len(self.thresholds) and gpus:
            at = state.now + (self.thresholds[level] - service) / gpus
            heapq.heappush(self._demotions, (at, job.job_id, started, job))


@register_policy("tiresias")
def tiresias(thresholds: tuple[float, ...] = DEFAULT_THRESHOLDS, promote_knob: float = 0.0,
             min_runtime: float = 0.0, placement: str = "consolidated") -> Profile:
    """Tiresias discretized 2D-LAS with preemption (Gu et al., NSDI'19)."""
    order = DiscretizedLas(tuple(thresholds), promote_knob)
    return Profile("tiresias", order, plugins=(order, Preemption(order, min_runtime)),
                   placement=placement)
