"""The core's fast lane: waiting jobs that all fit on free GPUs start without a full cycle.

Most cycles of a lightly loaded cluster decide one thing: the jobs that just arrived fit, so
they start. The full cycle (``cycle.py``) reaches that decision through
a snapshot, a scratchpad with copies of the books, the queue walk, the PreFilter/PostFilter/
Permit machinery and a ``CycleResult`` the core then applies; for a simple policy that is most of
the cost of a Philly run. Here, for profiles whose cycle reduces to "place each waiting job in
order (Filter + Score, gang-whole); start those that fit" while every job fits, the core places
the jobs straight on its own books and starts them. Anything else (a job does not fit, one
failed before, a plugin would act) falls back to the full cycle, which then runs as if the lane
had not been tried: the lane gives back what it placed. For a preemptive policy that lets the
lane drive its hooks (Tiresias), a job whose memo says it fails again (``cycle._try_job``:
nothing changed on its nodes since it last failed) is passed over with its reason, as the full
cycle passes it over, and the rest are placed.

The decisions are those of the full cycle when every job fits: the same ``place`` calls in the
same order (the queue's static order; strict FIFO's merge of queue heads and the bucket walk
give that order too when nothing fails) on the same free GPUs (the full cycle's scratchpad
starts as a copy of these books), the same Permit (the gang's), and no other plugin that could
see or change anything (the profile test below).

Under strict FIFO the lane also decides cycles where a queue's head does not fit (a virtual
cluster's pool is full while others take jobs: most full cycles of a Philly run). It walks the
heads of the queues as the full cycle's ``heads_of`` does (the same merge by key, then queue
name), and a job that is not the plain case (it failed before, or a job failed earlier in this
cycle) goes through the full cycle's own ``_try_job`` on the lane's scratchpad: the same
memo, known misses, reasons and blocked queues, recorded as ``apply`` records them.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING

from dlsched.scheduling.cycle import (
    _NO_CHANGE,
    _SMALLER_FAILED,
    _SMALLER_FAILED_TEXT,
    _VERSION_SUMS,
    _futility_key,
    _try_job,
)
from dlsched.scheduling.decisions import CycleResult, Start
from dlsched.scheduling.placement import (
    _single_node_score,
    _spec_record,
    pick_gpus,
    place,
    unconstrained,
)
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
    them in order: a static order, no PreFilter, allocation or failure plugin, no walk of the
    policy's own, the gang Permit only, static filters, the built-in scores, and no action on
    running jobs; PostFilter, Reserve, wake-ups and key changes only from a QueueSort that
    says it is ``lane_safe`` (``hooked``)."""
    return (profile.static_order and not profile.allocators and not profile.pre_filters
            and not profile.blocked and not profile.acts_on_running
            and not profile.dynamic_filters and profile.lazy_order is None
            and all(type(p) is GangPermit for p in profile.permits)
            and all(type(score) in _PLAIN_SCORES for score, _ in profile.scores)
            and getattr(profile.queue_sort, "walk_waiting", None) is None
            and (hooked(profile) or (
                not profile.post_filters and not profile.reserves and not profile.wakeups
                and getattr(profile.queue_sort, "key_changes", None) is None)))


def hooked(profile: Profile) -> bool:
    """A QueueSort that is the profile's only PostFilter, Reserve and wake-up plugin and says
    the lane may drive them (``lane_safe``: e.g. Tiresias without promotion or protection).
    When every waiting job fits, the full cycle calls no PostFilter; the lane then calls the
    Reserves in placement order and asks the wake-up before the core starts the jobs, as the
    full cycle does, on a scratchpad whose snapshot has this cycle's time and running jobs."""
    sort = profile.queue_sort
    return (not profile.strict_fifo and bool(getattr(sort, "lane_safe", False))
            and all(p is sort for p in (*profile.post_filters, *profile.reserves,
                                         *profile.wakeups)))


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
        self.strict = profile.strict_fifo
        self.hooked = hooked(profile)
        self.reserves, self.wakeups = profile.reserves, profile.wakeups
        # A job its memo tells will fail again is passed over here as the full cycle passes
        # it over, for a preemptive hooked policy (``_still_futile``).
        self.memo = self.hooked and bool(profile.post_filters)
        self._snapshot_ready = False  # ``_hooked_snapshot`` made for this cycle
        self._hooked: ClusterSnapshot | None = None  # its snapshot, made once
        # One GPU, one score that names its best node (``place``'s own shortcut): the lane
        # takes that shortcut itself.
        single = _single_node_score(self.scores[0][0]) if len(self.scores) == 1 else None
        self.best_single = single.best_single if single is not None else None

    def try_start(self) -> CycleResult | None:
        """Start every waiting job, in the queue's order, if there are at most ``MAX_JOBS``,
        each is plain (whole GPUs, nothing beyond them, never failed to start) and each fits
        after those before it; None, with nothing changed, otherwise. Under strict FIFO the
        cycle is decided here in every case but a job that is not plain (``_StrictCycle``)."""
        core = self.core
        if (core.fractional_jobs or core.beyond_gpu_jobs or core.down_nodes or core.sharing
                or core.rerater is not None or core.mig is not None):
            return None  # MIG instances are booked by the full cycle
        if self.strict:
            queues = core.waiting.by_queue()
            if len(queues) != 1:
                return _StrictCycle(self, []).run(queues)
            jobs = next(iter(queues.values()))
        elif len(core.waiting) > MAX_JOBS:
            return None
        else:
            jobs = core.waiting.in_order()
        state, futile, best_single = self.state, self.futile, self.best_single
        placed: list[tuple[Job, tuple[int, ...]]] = []
        self._snapshot_ready = False
        reasons: dict[str, str] = {}
        for job in jobs:
            spec = job.spec
            if spec.gpu_share != 1.0 or spec.tensor_parallel != 1 or job.host is not None:
                return self._not_plain(placed, jobs)
            if job.job_id in futile:
                reason = self._still_futile(job) if self.memo else None
                if reason is None:
                    return self._not_plain(placed, jobs)
                reasons[job.job_id] = reason
                continue
            if spec.num_gpus == 1 and best_single is not None:
                gpus = self._place_single(job, best_single)
                if gpus is not None:
                    placed.append((job, gpus))
                    continue
            gpus, status = place(state, job, self.filters, self.scores, self.take_limit)
            if not status.ok:
                return self._not_plain(placed, jobs)
            if len(gpus) != spec.num_gpus:  # the gang Permit's test
                state.give_back(gpus, [1.0] * len(gpus))
                return self._not_plain(placed, jobs)
            placed.append((job, gpus))
        if self.hooked:
            return self._start_hooked(placed, reasons)
        return self._start(placed)

    def _hooked_snapshot(self) -> None:
        """The scratchpad's snapshot as the full cycle's: this cycle's time and running
        jobs (the books are the core's own); made once per cycle, when first needed."""
        if self._snapshot_ready:
            return
        self._snapshot_ready = True
        core, state, now = self.core, self.state, self.core.clock.now()
        snapshot = self._hooked
        if snapshot is None:  # its books and running jobs are live views of the core's
            snapshot = self._hooked = ClusterSnapshot(
                core.cluster, now, *core._views, core.running.values(), (), core.throughput,
                has_fractional=False)
        object.__setattr__(snapshot, "now", now)  # only the time moves (frozen: ~4 us a new one)
        state.snapshot = snapshot
        state.scratch.pop(_VERSION_SUMS, None)  # the memo's sums of node versions, per cycle
        state.started.clear()

    def _still_futile(self, job: Job) -> str | None:
        """The reason a job that failed before fails again, told as the full cycle tells it
        (``cycle._try_job``'s memo: nothing it depended on has changed, its reason as it was),
        when that failure would not end the full cycle's walk either; None: the full cycle
        decides (the memo moved, or a one-GPU job on any node fails and stops the walk:
        ``_CycleRun._nothing_else_fits``)."""
        core = self.core
        prior = self.futile.get(job.job_id)
        if prior is None:
            return None
        self._hooked_snapshot()
        state = self.state
        if job.spec.num_gpus == 1 and unconstrained(state, job, self.filters):
            return None
        if _futility_key(core.profile, state, job) != prior:
            return None
        reason = core.own_reason(job) if core._bucketed else job.pending_reason
        return reason or _NO_CHANGE

    def _start_hooked(self, placed: list[tuple[Job, tuple[int, ...]]],
                      reasons: dict[str, str]) -> CycleResult:
        """The full cycle's end when every job fits but those its memo tells will fail:
        Reserve each placed job in order (``started`` filled as ``cycle._place`` fills it), the
        wake-up asked, then the core starts them and notes the others' reasons."""
        core, state = self.core, self.state
        self._hooked_snapshot()  # ``started`` empty since
        started = state.started
        for job, gpus in placed:
            started[job.job_id] = gpus
            for plugin in self.reserves:
                plugin.reserve(state, job, gpus)
        wakeup = None  # the earliest wake-up asked (a loop: one plugin, mostly)
        for plugin in self.wakeups:
            at = plugin.next_wakeup(state)
            if at is not None and (wakeup is None or at < wakeup):
                wakeup = at
        result = self._start(placed)
        if wakeup is not None:
            result.__dict__["next_wakeup"] = wakeup
        if reasons:
            core.note_reasons(reasons)
            result.__dict__["reasons"] = reasons
        return result

    def _place_single(self, job: Job, best_single: Callable) -> tuple[int, ...] | None:
        """``place`` for one whole GPU with a score that names its best node, as ``place``
        does it (the static mask, the tightest node, its lowest free GPU); None when ``place``
        itself must answer (no node passes the filters, or none has room)."""
        state = self.state
        mask, empty = _spec_record(state, job, self.filters)[4][:2]
        best = None if empty else best_single(state.node_free, mask)
        if best is None:
            return None
        gpus = pick_gpus(state, best, 1, 1.0)
        state.take(gpus, 1.0, job.spec)
        state.scratch["placing_nodes"] = [best]
        return tuple(gpus)

    def _not_plain(self, placed: list[tuple[Job, tuple[int, ...]]],
                   jobs: Iterable[Job]) -> CycleResult | None:
        """A job that is not the plain case: under strict FIFO (one queue waits) the rest of
        the queue goes the exact way, from that job on; otherwise the full cycle decides."""
        if not self.strict:
            return self._undo(placed)
        return _StrictCycle(self, placed).run_queue(jobs, len(placed))

    def _start(self, placed: list[tuple[Job, tuple[int, ...]]]) -> CycleResult:
        core = self.core
        starts = []
        pop, start, now = core.waiting.pop, core._start, core.clock.now()
        for job, gpus in placed:
            decision = Start(job.job_id, gpus, (1.0,) * len(gpus))
            start(pop(job.job_id), decision, now, True)  # ``start_placed``, one call less
            starts.append(decision)
        return CycleResult.of_starts(tuple(starts))

    def _undo(self, placed: list[tuple[Job, tuple[int, ...]]]) -> None:
        """Give back the GPUs placed so far, the last first: the books are as they were."""
        for _, gpus in reversed(placed):
            self.state.give_back(gpus, [1.0] * len(gpus))
        return None


_NO_ENTRY = object()  # a job had no memo entry before the lane tried it


class _StrictCycle:
    """One strict-FIFO cycle on the lane's books: each queue's jobs in order until one does not
    fit, the queues' heads merged by key (``cycle._CycleRun.heads_of``). ``run`` returns the
    result, with the starts made and the reasons recorded, or None with nothing changed (a job
    the lane does not handle: the full cycle decides)."""

    def __init__(self, lane: FastLane, placed: list[tuple[Job, tuple[int, ...]]]) -> None:
        self.lane, self.core = lane, lane.core
        self.placed = placed  # the lane's plain placements so far in this cycle
        self.tried: list[tuple[str, object]] = []  # (job, its memo entry before) for undo
        self.misses: dict[tuple, int] = {}
        self.reasons: dict[str, str] = {}
        self.blocked: dict[str, str] = {}
        state = lane.state
        # The core's books moved since the last cycle: the whole-free count is summed afresh
        # when asked, and the memo's per-cycle sums of node versions are dropped.
        state._whole_base, state._whole_change = None, 0
        state.scratch.clear()
        state.started.clear()

    def run(self, queues: dict[str, list[Job]]) -> CycleResult | None:
        return self.commit() if self._merge_heads(queues) else self.undo()

    def run_queue(self, jobs: Sequence[Job], first: int) -> CycleResult | None:
        """One queue waits: its jobs from ``first`` on (those before were placed)."""
        for index in range(first, len(jobs)):
            fits = self.consider(jobs[index])
            if fits is None:
                return self.undo()
            if not fits:
                break
        return self.commit()

    def _merge_heads(self, queues: dict[str, list[Job]]) -> bool:
        sort_key = self.core.profile.queue_sort.sort_key
        heap = [(sort_key(None, jobs[0]), name, 0) for name, jobs in queues.items()]
        heapq.heapify(heap)
        while heap:
            _, name, index = heapq.heappop(heap)
            jobs = queues[name]
            fits = self.consider(jobs[index])
            if fits is None:
                return False
            if fits and index + 1 < len(jobs):
                heapq.heappush(heap, (sort_key(None, jobs[index + 1]), name, index + 1))
        return True

    def consider(self, job: Job) -> bool | None:
        """Whether the job is placed (False: it blocks its queue; None: not for the lane)."""
        spec, lane = job.spec, self.lane
        if spec.gpu_share != 1.0 or spec.tensor_parallel != 1 or job.host is not None:
            return None
        job_id = job.job_id
        if not self.misses and job_id not in lane.futile:  # the plain case: place it
            gpus, status = place(lane.state, job, lane.filters, lane.scores, lane.take_limit)
            if status.ok and len(gpus) == spec.num_gpus:
                self.placed.append((job, gpus))
                return True
            if status.ok:  # the gang Permit refuses: the full cycle's path below says so
                lane.state.give_back(gpus, [1.0] * len(gpus))
        futile = lane.futile
        self.tried.append((job_id, futile.get(job_id, _NO_ENTRY)))
        status, _ = _try_job(self.core.profile, lane.state, job, self.misses)
        if status.ok:
            self.placed.append((job, lane.state.started[job_id]))
            return True
        self.reasons[job_id] = (_SMALLER_FAILED_TEXT if status is _SMALLER_FAILED
                                else str(status))
        self.blocked.setdefault(spec.queue, f"waiting behind {job_id} (strict FIFO)")
        return False

    def commit(self) -> CycleResult:
        if not self.reasons:
            return self.lane._start(self.placed)
        result = self.lane._start(self.placed)
        self.core.note_reasons(self.reasons)
        return CycleResult(result.starts, (), self.reasons, None, self.blocked)

    def undo(self) -> None:
        """Give back the GPUs placed and put back the memo entries: as before the lane."""
        self.lane._undo(self.placed)
        futile = self.lane.futile
        for job_id, entry in reversed(self.tried):
            if entry is _NO_ENTRY:
                futile.pop(job_id, None)
            else:
                futile[job_id] = entry  # type: ignore[assignment]
        return None
