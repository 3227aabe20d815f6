"""EASY backfilling (Lifka, 1995; Mu'alem & Feitelson, TPDS 2001) over FIFO.

Rules: jobs are considered in submission order. When the first job that does not fit (the head)
is met, it gets a reservation: the *shadow time* at which enough GPUs will have been freed by
running jobs ending at their expected finish times, and the *extra* GPUs left over at that time.
A later job may start now only if it fits now and either finishes before the shadow time or uses
no more than the extra GPUs, so it never delays the head. Expected finish times use ORACLE
durations: true remaining work at the reference rate (``ThroughputModel.reference_rate``),
ignoring any restart pause. Reservations count GPUs, not nodes: with
fragmentation the head may still wait past its shadow time (as in count-based EASY).
"""

from __future__ import annotations

from dataclasses import dataclass

from dlsched.policies.fifo import SubmitOrder
from dlsched.policies.sjf import oracle_seconds
from dlsched.scheduling.framework import SUCCESS, Status, unschedulable
from dlsched.scheduling.profile import Profile
from dlsched.scheduling.registry import register_policy
from dlsched.scheduling.state import CycleState
from dlsched.workload.job import Job

KEY = "easy-backfill"


@dataclass
class Reservation:
    head: str
    shadow_time: float
    extra_gpus: int


class EasyReservation:
    name = KEY

    def on_unschedulable(self, state: CycleState, job: Job, status: Status) -> None:
        if KEY not in state.scratch:
            state.scratch[KEY] = self._reserve_for(state, job)

    def pre_filter(self, state: CycleState, job: Job) -> Status:
        reservation: Reservation | None = state.scratch.get(KEY)
        if reservation is None or self._ends_before(state, job, reservation):
            return SUCCESS
        if job.spec.num_gpus <= reservation.extra_gpus:
            return SUCCESS
        return unschedulable(self.name, f"would delay {reservation.head}, which has GPUs "
                                        f"reserved at t={reservation.shadow_time:.0f}")

    def reserve(self, state: CycleState, job: Job, gpus: tuple[int, ...]) -> None:
        reservation: Reservation | None = state.scratch.get(KEY)
        if reservation is not None and not self._ends_before(state, job, reservation):
            reservation.extra_gpus -= len(gpus)
        state.scratch.setdefault("easy-started", []).append((job, len(gpus)))

    @staticmethod
    def _ends_before(state: CycleState, job: Job, reservation: Reservation) -> bool:
        return state.now + oracle_seconds(state, job, remaining=True) <= reservation.shadow_time

    @staticmethod
    def _reserve_for(state: CycleState, head: Job) -> Reservation:
        ends = [(state.now + oracle_seconds(state, j, remaining=True), len(j.allocation))
                for j in state.snapshot.running]
        ends += [(state.now + oracle_seconds(state, j, remaining=True), n)
                 for j, n in state.scratch.get("easy-started", [])]
        free = state.free_whole
        need = head.spec.num_gpus
        shadow = state.now
        for end, gpus in sorted(ends):
            if free >= need:
                break
            free += gpus
            shadow = end
        if free < need:
            shadow = float("inf")
        return Reservation(head.job_id, shadow, max(0, free - need))


@register_policy("backfill")
def backfill(placement: str = "consolidated") -> Profile:
    """FIFO with EASY backfilling: later jobs start early if they do not delay the head."""
    plugin = EasyReservation()
    return Profile("backfill", SubmitOrder(), plugins=(plugin,), placement=placement)
