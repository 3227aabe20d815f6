"""EASY backfilling (Lifka, 1995; Mu'alem & Feitelson, TPDS 2001) over FIFO.

Rules: jobs are considered in submission order. When the first job that does not fit (the head)
is met, it gets a reservation: the *shadow time* at which enough GPUs will have been freed by
running jobs ending at their expected finish times, and the *extra* GPUs left over at that time.
A later job may start now only if it fits now and either finishes before the shadow time or uses
no more than the extra GPUs, so it never delays the head. Expected finish times use ORACLE
durations: true remaining work at the reference rate (``ThroughputModel.reference_rate``),
ignoring any restart pause. Reservations count GPUs, not nodes: with
fragmentation the head may still wait past its shadow time (as in count-based EASY).

The cycle does not visit every waiting job: ``BackfillOrder`` keeps them in groups indexed by
oracle remaining time and gives the cycle only the jobs that could pass (``backfill_index.py``,
issue 14); the decisions are those of the job-by-job walk.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from dlsched.perf.model import ThroughputModel
from dlsched.policies.backfill_ends import RunningEnds
from dlsched.policies.backfill_index import WaitingByKind
from dlsched.policies.fifo import SubmitOrder
from dlsched.policies.sjf import _seconds, oracle_seconds
from dlsched.scheduling.framework import SUCCESS, Code, Status, unschedulable
from dlsched.scheduling.placement import no_room_text
from dlsched.scheduling.profile import Profile
from dlsched.scheduling.registry import register_policy
from dlsched.scheduling.state import CycleState
from dlsched.workload.job import Job

if TYPE_CHECKING:
    from dlsched.scheduling.cycle import _CycleRun

KEY = "easy-backfill"
_REFUSAL = "easy-backfill-refusal"  # scratch: the cycle's refusal text (``walk_refusal``)


@dataclass
class Reservation:
    head: str
    shadow_time: float
    extra_gpus: int


class EasyReservation:
    name = KEY

    def __init__(self) -> None:
        self._ends = RunningEnds()  # running jobs by expected end, across cycles
        # waiting job -> (its epoch, its oracle remaining seconds): fixed while it waits
        # (``walk_refusal``); forgotten when it starts
        self._waiting_seconds: dict[str, tuple[int, float]] = {}
        # the last reservation made with no job started before its head in its cycle: (head,
        # the core's count of running-job changes, whole GPUs free, when made, shadow time,
        # extra GPUs); ``_reserve_for`` gives it again while every end stayed put
        self._last: tuple[str, int | None, int, float, float, int] | None = None

    def on_unschedulable(self, state: CycleState, job: Job, status: Status) -> None:
        if KEY not in state.scratch:
            state.scratch[KEY] = self._reserve_for(state, job)

    def walk_ready(self, state: CycleState) -> bool:
        """Whether a walk may pass over jobs that cannot be placed (the tenant layer's walk by
        groups): once the head has its reservation, this plugin only refuses jobs, so a job
        that fails placement fails whatever it says; before, the first job to fail must be
        tried, since it becomes the head."""
        return KEY in state.scratch

    def walk_refusal(self, state: CycleState
                     ) -> tuple[int, Callable[[Job], bool], str] | None:
        """What ``pre_filter`` refuses for the rest of the cycle, once the head has its
        reservation (the shadow time is fixed, the extra GPUs only shrink): a job asking more
        GPUs than the first element that does not pass the second (end before the shadow
        time), with the third as its reason, the fourth a waiting job's oracle remaining
        seconds (fixed while it waits; a job of more seconds ends no earlier); None before.
        The tenant layer's walk by groups passes over such jobs without a try."""
        reservation: Reservation | None = state.scratch.get(KEY)
        if reservation is None:
            return None
        text = state.scratch.get(_REFUSAL)
        if text is None:
            text = state.scratch[_REFUSAL] = str(_delays(reservation))
        seconds, now, shadow = self._waiting_seconds, state.now, reservation.shadow_time
        # The model, not the state: the walk keeps these tests for the cycle's pending book,
        # which must not hold the cycle's state (it is freed by reference counting).
        model = state.snapshot.throughput

        def remaining(job: Job) -> float:
            known = seconds.get(job.job_id)
            if known is None or known[0] != job.epoch:  # computed once while it waits
                known = seconds[job.job_id] = (job.epoch, _seconds(model, job, True, now))
            return known[1]

        def ends_before(job: Job) -> bool:
            return now + remaining(job) <= shadow

        return reservation.extra_gpus, ends_before, text, remaining

    def pre_filter(self, state: CycleState, job: Job) -> Status:
        reservation: Reservation | None = state.scratch.get(KEY)
        if reservation is None or self._ends_before(state, job, reservation):
            return SUCCESS
        if job.spec.num_gpus <= reservation.extra_gpus:
            return SUCCESS
        return _delays(reservation)

    def reserve(self, state: CycleState, job: Job, gpus: tuple[int, ...]) -> None:
        self._waiting_seconds.pop(job.job_id, None)
        reservation: Reservation | None = state.scratch.get(KEY)
        if reservation is not None and not self._ends_before(state, job, reservation):
            reservation.extra_gpus -= len(gpus)
        state.scratch.setdefault("easy-started", []).append((job, len(gpus)))

    @staticmethod
    def _ends_before(state: CycleState, job: Job, reservation: Reservation) -> bool:
        return state.now + oracle_seconds(state, job, remaining=True) <= reservation.shadow_time

    def _reserve_for(self, state: CycleState, head: Job) -> Reservation:
        """The head's reservation. In a cycle where no job started before the head, the same
        head, the same free GPUs and the same running jobs (none started, stopped or changed
        its rate) as when the last such reservation was made, each running at its reference
        rate past any pause then (``RunningEnds.fixed``), it is that reservation: every
        expected end, so the shadow time and the extra GPUs, are what they were."""
        changes = state.snapshot.running_changes
        last, started_here = self._last, state.scratch.get("easy-started")
        if (not started_here and last is not None and last[0] == head.job_id
                and last[1] == changes and last[2] == state.free_whole
                and self._ends.fixed(changes, last[3])):
            return Reservation(head.job_id, last[4], last[5])
        reservation = self._compute(state, head)
        if not started_here:
            self._last = (head.job_id, changes, state.free_whole, state.now,
                          reservation.shadow_time, reservation.extra_gpus)
        return reservation

    def _compute(self, state: CycleState, head: Job) -> Reservation:
        now, running = state.now, state.snapshot.running

        def end_of(job: Job) -> float:
            return now + oracle_seconds(state, job, remaining=True)

        started = [(end_of(j), n) for j, n in state.scratch.get("easy-started", [])]
        model = state.snapshot.throughput
        ends: Iterable[tuple[float, int]]
        if self._ends.refresh(running, end_of, lambda job: model.reference_rate(job.spec),
                              state.snapshot.running_changes, state.snapshot.journal):
            ends = heapq.merge(self._ends.ascending(), sorted(started))
        else:
            ends = sorted([(end_of(j), len(j.allocation)) for j in running] + started)
        free = state.free_whole
        need = head.spec.num_gpus
        shadow = state.now
        for end, gpus in ends:
            if free >= need and end > shadow:
                break  # jobs ending at the shadow time itself free their GPUs then too
            free += gpus
            shadow = end
        if free < need:
            shadow = float("inf")
        return Reservation(head.job_id, shadow, max(0, free - need))


def _delays(reservation: Reservation) -> Status:
    return unschedulable(KEY, f"would delay {reservation.head}, which has GPUs "
                              f"reserved at t={reservation.shadow_time:.0f}")


class BackfillOrder(SubmitOrder):
    """FIFO, and the waiting jobs indexed for the cycle's walk (``walk_waiting``). The index
    is kept only in a run that uses this order as its QueueSort (the core then hands it the
    throughput model); wrapped by the tenant layer it stays idle and the cycle walks job by
    job."""

    def __init__(self) -> None:
        self._model: ThroughputModel | None = None
        self._index = WaitingByKind()

    def use_throughput(self, model: ThroughputModel) -> None:
        self._model = model

    def on_waiting(self, job: Job) -> None:
        if self._model is not None:
            # A waiting job's oracle remaining time, as EasyReservation computes it at any
            # time while the job waits (its progress stops).
            seconds = _seconds(self._model, job, True, job.progress_time)
            self._index.add(self.sort_key(None, job), job, seconds)  # type: ignore[arg-type]

    def walk_waiting(self, run: _CycleRun) -> list[tuple] | None:
        """The cycle's walk over waiting jobs, or None where the job-by-job walk must run."""
        profile = run.profile
        if (self._model is None or profile.dynamic_filters or profile.strict_fifo
                or profile.post_filters or profile.pre_filters != (_reservation(profile),)):
            return None
        return self._index.walk(run, KEY, _skipped_text)


def _reservation(profile: Profile) -> EasyReservation | None:
    return next((p for p in profile.plugins if isinstance(p, EasyReservation)), None)


def _skipped_text(state: CycleState, job: Job, reservation: Reservation, why: str) -> str:
    """What the job-by-job walk wrote for a job of ``job``'s kind skipped for ``why``."""
    if why == "reservation":
        return str(_delays(reservation))
    if why == "free":
        return str(Status(Code.UNSCHEDULABLE, no_room_text(job.spec.num_gpus, state.free_whole,
                                                           ""), "placement"))  # as the cycle
    from dlsched.scheduling.cycle import _SMALLER_FAILED_TEXT

    return _SMALLER_FAILED_TEXT


@register_policy("backfill")
def backfill(placement: str = "consolidated") -> Profile:
    """FIFO with EASY backfilling: later jobs start early if they do not delay the head."""
    plugin = EasyReservation()
    return Profile("backfill", BackfillOrder(), plugins=(plugin,), placement=placement)
