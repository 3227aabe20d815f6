"""Themis (Mahajan et al., "Themis: Fair and Efficient GPU Cluster Scheduling", NSDI'20).

Rules implemented (see docs/policies/themis.md for what is simplified and why):

- **Finish-time fairness** (§3): ``ρ = T_shared / T_independent``. ``T_independent`` is the
  job's time on a dedicated ``1/N`` share of the cluster: its isolated time (alone, at its
  requested GPU count, on the fastest GPU type: ``work / reference_rate``) times ``N``, Themis'
  average contention, here the time-average number of active (waiting + running) jobs since the
  job arrived, integrated by this plugin at every cycle. ``T_shared`` is estimated as time since
  arrival plus the time to finish: for a running job at its current rate; for a waiting one,
  one more lease of waiting and then its best rate (Themis' agents estimate finish times the
  same way, from the allocation they would hold).
- **Leases** (§4, §5): a job that starts holds its GPUs for a lease (``lease_seconds``, 10
  minutes by default); it is never preempted mid-lease. At each lease end its GPUs go back to
  the arbiter (the lease is renewed if nobody wins them).
- **Fairness knob** (§4): at every arbitration only the ``1 - f`` fraction of active jobs with
  the worst ρ are offered resources (``fairness_knob`` f, 0.8 by default; f = 0 offers all).
- **Auction** (§4.1): the offered jobs bid on the available GPUs (free ones plus those whose
  lease just ended), each for its whole gang on one GPU type; a greedy partial-allocation
  auction (``themis_auction``) picks winners. Winners start on the type they won, evicting
  lease-expired jobs there; a running job that bids for its own GPUs and wins keeps them.
- **Leftover allocation** (§4.1): GPUs left after the auction go to the other waiting jobs,
  worst ρ first, each on its fastest GPU type with room where starting now beats waiting a
  lease for its best type, without preemption.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

from dlsched.perf.model import Placement
from dlsched.policies.themis_auction import Bid, auction, offered_count, rho
from dlsched.scheduling.profile import Profile
from dlsched.scheduling.registry import register_policy
from dlsched.scheduling.state import CycleState
from dlsched.workload.job import Job, JobStatus

LEASE_SECONDS = 600.0
FAIRNESS_KNOB = 0.8
TOLERANCE = 1e-6
# Relative: a time on the lease grid, up to float error (~1e-16 of the time). 1e-6 of the
# time was 3 s at Philly's t = 3e6 s: a job was preempted a second before its lease end.
GRID_TOLERANCE = 1e-9


@dataclass(frozen=True)
class Arbitration:
    """One cycle's decisions: ρ of every active job, the offered jobs, the auction's winners
    (job id -> GPU type index, in grant order) and the running jobs at a lease end."""

    rho: dict[str, float]
    offered: frozenset[str]
    won: dict[str, int]
    expired: frozenset[str]

    @functools.cached_property
    def grant_order(self) -> dict[str, int]:
        return {job_id: i for i, job_id in enumerate(self.won)}


class ThemisArbiter:
    """QueueSort, Filter, PostFilter and Wakeup for Themis' lease-based auction."""

    name = "themis"
    static = False  # ρ changes with time

    def __init__(self, lease_seconds: float = LEASE_SECONDS,
                 fairness_knob: float = FAIRNESS_KNOB) -> None:
        if lease_seconds <= 0:
            raise ValueError(f"lease_seconds must be > 0, got {lease_seconds}")
        offered_count(1, fairness_knob)  # validates the knob
        self.lease, self.fairness_knob = lease_seconds, fairness_knob
        self._area, self._last_time, self._last_active = 0.0, None, 0
        self._arrived: dict[str, tuple[float, float]] = {}  # job -> (time, area) when first seen
        self._rates: dict[tuple[str, int], float] = {}
        self._origin: float | None = None  # the lease grid starts at the first cycle

    # -- the arbiter's view ---------------------------------------------------------------
    def view(self, state: CycleState) -> Arbitration:
        cached = state.scratch.get(self.name)
        if cached is None:
            cached = state.scratch[self.name] = self._arbitrate(state)
        return cached

    def _arbitrate(self, state: CycleState) -> Arbitration:
        jobs = [*state.snapshot.running, *state.snapshot.waiting]
        if self._origin is None:
            self._origin = state.now
        self._integrate(state.now, jobs)
        rhos = {job.job_id: self._rho(state, job) for job in jobs}
        ranked = sorted(jobs, key=lambda j: (-rhos[j.job_id], j.spec.submit_time, j.job_id))
        offered = frozenset(j.job_id for j in ranked[:offered_count(len(jobs),
                                                                    self.fairness_knob)])
        expired = frozenset(j.job_id for j in state.snapshot.running
                            if self.at_lease_end(j, state.now))
        bids = [bid for job in ranked if job.job_id in offered
                for bid in self._bids(state, job, rhos[job.job_id], job.job_id in expired)]
        won = auction(bids, self._capacity(state, expired))
        return Arbitration(rhos, offered, won, expired)

    def _integrate(self, now: float, jobs: list[Job]) -> None:
        """Add ``N x dt`` since the last cycle to the contention integral (Themis' N_avg)."""
        if self._last_time is not None:
            self._area += self._last_active * (now - self._last_time)
        self._last_time, self._last_active = now, len(jobs)
        for job in jobs:
            self._arrived.setdefault(job.job_id, (now, self._area))

    def contention(self, job: Job, now: float) -> float:
        """The job's average number of active jobs since it arrived (at least 1)."""
        since, area = self._arrived.get(job.job_id, (now, self._area))
        if now - since <= TOLERANCE:
            return max(1.0, float(self._last_active))
        return max(1.0, (self._area - area) / (now - since))

    def _rate(self, state: CycleState, job: Job, kind: int) -> float:
        key = (job.job_id, kind)
        if key not in self._rates:
            name = state.cluster.type_names[kind]
            placement = Placement.single_node(name, job.spec.num_gpus)
            self._rates[key] = state.snapshot.throughput.rate(job.spec, placement)
        return self._rates[key]

    def _rho(self, state: CycleState, job: Job, finish_in: float | None = None) -> float:
        """ρ with ``finish_in`` seconds left (default: the estimate in the module docstring)."""
        best = state.snapshot.throughput.reference_rate(job.spec)
        if best <= 0:
            return 0.0
        now = state.now
        if finish_in is None:
            left = job.remaining_work(now)
            running = job.status is JobStatus.RUNNING and job.rate > 0
            finish_in = left / job.rate if running else self.lease + left / best
        return rho(now - job.spec.submit_time, finish_in, job.spec.work / best,
                   self.contention(job, now))

    def _bids(self, state: CycleState, job: Job, current: float, expired: bool) -> list[Bid]:
        """A waiting job bids on every type it can run on; a running job at its lease end bids
        to keep its own type; a running job mid-lease does not bid."""
        running = job.status is JobStatus.RUNNING  # a preempted job keeps its old allocation
        if running and not expired:
            return []
        left = job.remaining_work(state.now)
        lose = current if not running else self._rho(
            state, job, self.lease + left / state.snapshot.throughput.reference_rate(job.spec))
        kinds = [self._type_of(state, job)] if running else range(
            len(state.cluster.type_names))
        bids = []
        for kind in kinds:
            rate = self._rate(state, job, kind)
            if rate > 0:
                win = self._rho(state, job, left / rate)
                bids.append(Bid(job.job_id, kind, job.spec.num_gpus,
                                math.log(lose / win) if win > 0 else math.inf))
        return bids

    def _capacity(self, state: CycleState, expired: frozenset[str]) -> dict[int, int]:
        """Whole GPUs per type open to the auction: free ones and those of expired leases."""
        cluster = state.cluster
        free = np.bincount(cluster.node_type, weights=state.node_free,
                           minlength=len(cluster.type_names))
        capacity = {kind: int(count) for kind, count in enumerate(free)}
        for job in state.snapshot.running:
            if job.job_id in expired:
                capacity[self._type_of(state, job)] += len(job.allocation)
        return capacity

    @staticmethod
    def _type_of(state: CycleState, job: Job) -> int:
        cluster = state.cluster
        return int(cluster.node_type[cluster.gpu_node[job.allocation[0]]])

    def at_lease_end(self, job: Job, now: float) -> bool:
        """Whether the job's lease ends at ``now``: leases end together on a grid every
        ``lease_seconds`` from the first cycle, and the job started before ``now``."""
        if job.run_started is None or job.run_started >= now - TOLERANCE:
            return False
        return self._on_grid(now)

    def _on_grid(self, now: float) -> bool:
        if self._origin is None:
            return False
        offset = (now - self._origin) / self.lease
        return abs(offset - round(offset)) * self.lease <= GRID_TOLERANCE * max(1.0, now)

    def next_lease_end(self, now: float) -> float:
        origin = self._origin if self._origin is not None else now
        return origin + (math.floor((now - origin) / self.lease + TOLERANCE) + 1) * self.lease

    # -- QueueSort --------------------------------------------------------------------------
    def sort_key(self, state: CycleState, job: Job) -> tuple[int, float, float, str]:
        """Auction winners first, in grant order; then the rest by worst ρ (leftovers)."""
        view = self.view(state)
        if job.job_id in view.won:
            return (0, float(view.grant_order[job.job_id]), 0.0, job.job_id)
        return (1, -view.rho.get(job.job_id, 0.0), job.spec.submit_time, job.job_id)

    # -- Filter -----------------------------------------------------------------------------
    def filter(self, state: CycleState, job: Job, mask: np.ndarray) -> np.ndarray:
        """A winner goes to the GPU type it won. Any other job (leftover allocation) goes to
        its fastest type with free room for its gang, among the types where starting now
        beats waiting a lease for its best type (a bid with a positive gain); else nowhere."""
        node_type = state.cluster.node_type
        kind = self.view(state).won.get(job.job_id)
        if kind is not None:
            return mask & (node_type == kind)
        capacity = state.capacity(job.spec.gpu_share)
        left = job.remaining_work(state.now)
        best = state.snapshot.throughput.reference_rate(job.spec)
        kinds = range(len(state.cluster.type_names))
        for kind in sorted(kinds, key=lambda t: -self._rate(state, job, t)):
            rate = self._rate(state, job, kind)
            if rate <= 0 or best <= 0 or left / rate >= self.lease + left / best:
                break
            nodes = mask & (node_type == kind)
            if capacity[nodes].sum() >= job.spec.num_gpus:
                return nodes
        return np.zeros_like(mask)

    # -- PostFilter -------------------------------------------------------------------------
    def post_filter(self, state: CycleState, job: Job) -> tuple[Job, ...]:
        """For a winner only: running jobs on its type whose lease ends now and who did not
        win, the best-off (lowest ρ) first. Nobody is preempted mid-lease."""
        view = self.view(state)
        kind = view.won.get(job.job_id)
        if kind is None:
            return ()
        victims = [other for other in state.snapshot.running
                   if other.job_id in view.expired and other.job_id not in view.won
                   and other.job_id not in state.evicted and self._type_of(state, other) == kind]
        return tuple(sorted(victims, key=lambda o: (view.rho[o.job_id], o.job_id)))

    # -- Wake-ups ---------------------------------------------------------------------------
    def next_wakeup(self, state: CycleState) -> float | None:
        """The next lease end while jobs wait and some run (and keeps the contention integral
        current: this point is called every cycle)."""
        self.view(state)
        if not state.snapshot.waiting or not state.snapshot.running:
            return None
        return self.next_lease_end(state.now)


@register_policy("themis")
def themis(lease_seconds: float = LEASE_SECONDS, fairness_knob: float = FAIRNESS_KNOB,
           placement: str = "consolidated") -> Profile:
    """Themis finish-time fairness with leases and a partial-allocation auction (NSDI'20)."""
    arbiter = ThemisArbiter(lease_seconds, fairness_knob)
    return Profile("themis", arbiter, plugins=(arbiter,), placement=placement,
                   acts_on_running=True)
