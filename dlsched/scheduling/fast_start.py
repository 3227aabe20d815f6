"""The core's fast lane: waiting jobs that all fit on free GPUs start without a full cycle.

Most cycles of a lightly loaded cluster decide one thing: the jobs that just arrived fit, so
they start. The full cycle (``cycle.py``) reaches that decision through
a snapshot, a scratchpad with copies of the books, the queue walk, the PreFilter/PostFilter/
Permit machinery and a ``CycleResult`` the core then applies; for a simple policy that is most of
the cost of a Philly run. Here, for profiles whose cycle reduces to "place each waiting job in
order (Filter + Score, gang-whole); start those that fit" while every job fits, the core places
the jobs straight on its own books and starts them. Anything else (a job does not fit, one
failed before, a plugin would act) falls back to the full cycle, which then runs as if the lane
had not been tried: the lane gives back what it placed.

The decisions are those of the full cycle when every job fits: the same ``place`` calls in the
same order (the queue's static order; strict FIFO's merge of queue heads and the bucket walk
give that order too when nothing fails) on the same free GPUs (the full cycle's scratchpad
starts as a copy of these books), the same Permit (the gang's), and no other plugin that could
see or change anything (the profile test below).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from dlsched.scheduling.decisions import CycleResult, Start
from dlsched.scheduling.placement import place
from dlsched.scheduling.plugins.gang import GangPermit
from dlsched.scheduling.plugins.scores import BestFit, Consolidated, MostFree, Spread, TopologyScore
from dlsched.scheduling.profile import Profile
from dlsched.scheduling.state import ClusterSnapshot, CycleState
from dlsched.workload.job import Job

if TYPE_CHECKING:
    from dlsched.scheduling.scheduler import Scheduler

MAX_JOBS = 32  # more waiting jobs than this: the full cycle (its walk skips alike jobs)
# Scores whose placement reads only the cluster, the free GPUs and the placement's own scratch.
_PLAIN_SCORES = (Consolidated, Spread, BestFit, MostFree, TopologyScore)


def lane_applies(profile: Profile) -> bool:
    """Whether a cycle of this profile over waiting jobs that all fit only places and starts
    them in order: a static order, no PreFilter, PostFilter, Reserve, wake-up, allocation or
    failure plugin, no walk of the policy's own or key changes, the gang Permit only, static
    filters, the built-in scores, and no action on running jobs."""
    return (profile.static_order and not profile.allocators and not profile.pre_filters
            and not profile.post_filters and not profile.reserves and not profile.blocked
            and not profile.wakeups and not profile.acts_on_running
            and not profile.dynamic_filters and profile.lazy_order is None
            and all(type(p) is GangPermit for p in profile.permits)
            and all(type(score) in _PLAIN_SCORES for score, _ in profile.scores)
            and getattr(profile.queue_sort, "key_changes", None) is None
            and getattr(profile.queue_sort, "walk_waiting", None) is None)


class FastLane:
    """Places the waiting jobs on the core's books (``place`` over a scratchpad whose free
    arrays are the core's own) and starts it. Built once per run."""

    def __init__(self, core: Scheduler) -> None:
        self.core = core
        profile = core.profile
        self.filters, self.scores, self.take_limit = (profile.filters, profile.scores,
                                                      profile.take_limit)
        self.futile = profile.futile
        # Placement reads the snapshot's cluster and throughput model only (the built-in
        # filters and scores, ``lane_applies``); the scratchpad's free arrays are the core's.
        snapshot = ClusterSnapshot(core.cluster, 0.0, *core._views, (), (), core.throughput,
                                   has_fractional=False)
        self.state = CycleState(snapshot, core.free, core.node_free)

    def try_start(self) -> CycleResult | None:
        """Start every waiting job, in the queue's order, if there are at most ``MAX_JOBS``,
        each is plain (whole GPUs, nothing beyond them, never failed to start) and each fits
        after those before it; None, with nothing changed, otherwise."""
        core = self.core
        if (core.fractional_jobs or core.beyond_gpu_jobs or core.down_nodes or core.sharing
                or core.rerater is not None or len(core.waiting) > MAX_JOBS
                or core.mig is not None):  # MIG instances are booked by the full cycle
            return None
        state, futile = self.state, self.futile
        placed: list[tuple[Job, tuple[int, ...]]] = []
        for job in core.waiting.in_order():
            spec = job.spec
            if (spec.gpu_share != 1.0 or spec.tensor_parallel != 1 or job.host is not None
                    or job.job_id in futile):
                return self._undo(placed)
            gpus, status = place(state, job, self.filters, self.scores, self.take_limit)
            if not status.ok:
                return self._undo(placed)
            placed.append((job, gpus))
            if len(gpus) != spec.num_gpus:  # the gang Permit's test
                return self._undo(placed)
        starts = []
        pop, start_placed = core.waiting.pop, core.start_placed
        for job, gpus in placed:
            start = Start(job.job_id, gpus, (1.0,) * len(gpus))
            start_placed(pop(job.job_id), start)
            starts.append(start)
        return CycleResult.of_starts(tuple(starts))

    def _undo(self, placed: list[tuple[Job, tuple[int, ...]]]) -> None:
        """Give back the GPUs placed so far, the last first: the books are as they were."""
        for _, gpus in reversed(placed):
            self.state.give_back(gpus, [1.0] * len(gpus))
        return None
