"""Pollux's scheduler, PolluxSched (Qiao et al., OSDI'21 §4.2), as an allocation policy.

Every round (60 s, the paper's) it chooses every active job's worker count and nodes to
maximize the fairness-weighted power mean of speedups

    FITNESS_p(A) = (Σ_j w_j · SPEEDUP_j(A_j)^p)^(1/p),   p = −1 by default,

with ``SPEEDUP_j(A) = max goodput at A / max goodput at the fair share`` (§4.2: the fair share
is ``G / J`` GPUs of the ``G`` GPUs and ``J`` active jobs, here clamped to the job's bounds and
packed on the fewest nodes; ``baseline="one"`` uses one GPU, as Pollux's released code does).
The goodput at an allocation is the best over batch sizes (§3.3): the batch co-adapts, as the
``goodput`` throughput model computes it (``policies/elastic/configs.py``).

- **Re-allocation penalty** (§4.2): the speedup of a running job at any allocation other than
  its current one is multiplied by ``(T_j − R_j·δ) / (T_j + δ)``, ``T_j`` its age (since
  submission), ``R_j`` its past re-allocations (counted here) and ``δ`` the restart time
  (``restart_seconds``). A waiting job's start is not a re-allocation.
- **Interference avoidance** (§4.2): at most one distributed (multi-node) job per node.
- A job with no GPUs has speedup ``zero_speedup`` (0 would make ``S^p`` infinite for p < 0),
  so the search first gives as many jobs as possible a GPU, as the fairness term demands.

Search (dlsched's, not the paper's genetic algorithm; the objective is the paper's): the
envelope greedy of ``policies/elastic/search.py`` on ``w·sign(p)·S^p`` per worker count, then
node placement (``policies/elastic/pollux_place.py``); GPUs placement leaves free where it cut
a planned count go to the jobs that gain most from them (its rule 6, ``fill``). Single-node
goodput is used for counts that fit on a node, multi-node goodput above. Pollux is
heterogeneity-oblivious: it evaluates every job on the cluster's most common GPU type.

These options put back what the Pollux artifact's simulator does (petuum/adaptdl
``osdi21-artifact``, ``simulator.py`` and ``pollux.py``), off by default:

- ``explore``: a job may take at most twice the most workers it has run on (1 before its first
  run): the artifact's ``max_replicas = 2 * max_profiled_replicas``, since its jobs learn their
  throughput model only at the sizes they have run at.
- ``penalize_start``: the re-allocation factor applies to a waiting job's start too (the
  artifact penalises every allocation that differs from the current one,
  ``np.any(states != base_state)``), so a young job starts less eagerly.
- ``learn_sync``: the scheduler values a job with the synchronisation cost it could have
  learned from the sizes it has run on (none after one GPU only; cross-node guessed from
  within-node until it has run across nodes): the artifact's jobs fit their model online
  from their own steps, with priors for what they have not seen
  (``policies/elastic/sync_prior.py``).
- ``rigid_apps`` (comma-separated applications): their jobs keep their requested size (the
  artifact caps ncf at one replica, ``get_pollux_job_info``).

An elastic job whose count fits on no node, with every node that has room holding a distributed
job, runs on the node with the most room at fewer workers (``pollux_place.py``, rule 5: the
artifact's repair step, which bars only a second *distributed* job from a node).

``elastic="all"`` (the paper: every job adapts) lets a job without declared bounds use
``1..min(max_workers, max_batch // min_local_bsz)`` workers; ``"declared"`` keeps rigid jobs at
their requested size or nothing.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping

import numpy as np
from numpy.typing import NDArray

from dlsched.perf.goodput.iteration_time import PerfParams
from dlsched.perf.goodput.throughput_model import goodput_function
from dlsched.policies.elastic.configs import (
    STAY_TIE_BREAK,
    UNLIMITED,
    RestartLog,
    app_of,
    goodput_bounds,
    job_curves,
    power_utility,
)
from dlsched.policies.elastic.pollux_place import Request, fill, place
from dlsched.policies.elastic.search import Budgets, greedy_counts, mask_budgets
from dlsched.policies.elastic.speed import (
    DEFAULT_MAX_WORKERS,
    active_jobs,
    check_elastic,
    node_capacity,
)
from dlsched.policies.elastic.sync_prior import learned_sync
from dlsched.policies.fifo import SubmitOrder
from dlsched.scheduling.allocation import Assignment
from dlsched.scheduling.plugins.filters import allowed_nodes, runnable_nodes
from dlsched.scheduling.profile import Profile
from dlsched.scheduling.registry import at_least, register_policy
from dlsched.scheduling.state import CycleState
from dlsched.workload.job import Job

BASELINES = ("fair", "one")


class PolluxAllocator:
    """AllocatePlugin: PolluxSched's objective searched greedily (see the module docstring)."""

    name = "pollux"

    def __init__(self, p: float = -1.0, restart_seconds: float = 30.0, elastic: str = "all",
                 max_workers: int = DEFAULT_MAX_WORKERS, baseline: str = "fair",
                 interference: bool = True, zero_speedup: float = 0.01,
                 explore: bool = False, penalize_start: bool = False,
                 rigid_apps: str = "", learn_sync: bool = False) -> None:
        if baseline not in BASELINES:
            raise ValueError(f"baseline={baseline!r}: expected one of {', '.join(BASELINES)}")
        if max_workers < 1 or zero_speedup <= 0:
            raise ValueError("max_workers must be >= 1 and zero_speedup > 0")
        self.p, self.restart_seconds = p, restart_seconds
        self.elastic, self.max_workers = check_elastic(elastic), max_workers
        self.baseline, self.interference, self.zero_speedup = baseline, interference, zero_speedup
        self.restarts = RestartLog()
        self.explore, self.penalize_start = explore, penalize_start
        self.learn_sync = learn_sync
        self.rigid_apps = frozenset(a.strip().casefold() for a in rigid_apps.split(",")
                                    if a.strip())
        self.most_run: dict[str, int] = {}  # most workers each active job has run on
        self.spanned: set[str] = set()  # active jobs that have run on more than one node
        self._budgets: tuple[object, Budgets | None, NDArray[np.int64] | None] = (None, None,
                                                                                  None)

    def worker_bounds(self, job: Job, capacity: int | None = None) -> tuple[int, int]:
        """The fewest and most workers this policy may give ``job``."""
        limit = UNLIMITED if capacity is None else capacity
        if str(job.spec.model).casefold() in self.rigid_apps:
            return goodput_bounds(job, "declared", self.max_workers, limit)
        return goodput_bounds(job, self.elastic, self.max_workers, limit)

    def allocate(self, state: CycleState) -> Mapping[str, Assignment]:
        jobs = active_jobs(state)
        if not jobs:
            return {}
        capacity = node_capacity(state)
        held = [Assignment.of(job, state.cluster).per_node() for job in jobs]
        masks = [_allowed(state, job) for job in jobs]
        total = int(capacity.sum())
        budgets, usable = self.budgets(capacity, masks)
        utility, low = self.utilities(state, jobs, held, total, usable)
        counts = greedy_counts(utility, total, budgets=budgets)
        requests = [Request(int(k), int(lo), h, mask)
                    for k, lo, h, mask in zip(counts, low, held, masks, strict=True)]
        nodes = place(requests, capacity, self.interference)
        if sum(map(len, nodes)) < int(counts.sum()):  # placement cut the plan: mend it
            nodes = fill(requests, capacity, nodes, utility)
        result = {job.job_id: Assignment(n) for job, n in zip(jobs, nodes, strict=True) if n}
        self.restarts.record(jobs, held, nodes)
        return result

    def budgets(self, capacity: NDArray[np.int64], masks: list[NDArray[np.bool_] | None],
                ) -> tuple[Budgets | None, NDArray[np.int64] | None]:
        """``mask_budgets`` and each job's most workers, kept while the round's masks and
        capacity repeat (they change only when jobs come and go or nodes fail)."""
        key = (capacity.tobytes(), tuple(None if m is None else m.tobytes() for m in masks))
        if self._budgets[0] != key:
            budgets = mask_budgets(capacity, masks)
            most = None if budgets is None else budgets.most(int(capacity.sum()))
            self._budgets = (key, budgets, most)
        return self._budgets[1], self._budgets[2]

    def utilities(self, state: CycleState, jobs: list[Job], held: list[Counter[int]],
                  total: int, usable: NDArray[np.int64] | None = None,
                  ) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
        """``w·sign(p)·(SPEEDUP·penalty)^p`` per job (rows) and worker count (columns), and
        each job's fewest workers. ``usable``: the GPUs each job may be placed on (None: all
        ``total``); Pollux §4.2 allocates a job only GPUs it can run on, so a count above
        them is never a candidate (placement would cut it and the plan would not hold)."""
        bounds = np.array([self.worker_bounds(job, total) for job in jobs], dtype=np.int64)
        low, high = bounds[:, 0], np.minimum(bounds[:, 1], total)
        if usable is not None:
            high = np.minimum(high, usable)
        seen = self.seen(jobs, held) if self.explore or self.learn_sync else None
        if self.explore and seen is not None:
            high = np.minimum(high, np.maximum(2 * seen, 1))
        width = int(max(high.max(), 1)) + 1
        goodput = self._goodput(state, jobs, width - 1, seen if self.learn_sync else None)
        ks = np.arange(width)
        allowed = (ks == 0) | ((ks >= low[:, None]) & (ks <= high[:, None]))
        allowed &= np.isfinite(goodput)
        speedup = goodput / self._base(goodput, allowed, low, high, total, len(jobs))[:, None]
        speedup[:, 0] = self.zero_speedup
        current = np.array([sum(h.values()) for h in held])
        factor = np.array([self.restarts.factor(job, state.now, self.restart_seconds)
                           for job in jobs])
        moved = (ks != current[:, None]) & (ks > 0)
        if not self.penalize_start:
            moved &= current[:, None] > 0
        speedup = np.where(moved, speedup * factor[:, None], speedup)
        stays = (ks == current[:, None]) & (ks > 0)
        speedup = np.where(stays, speedup * (1 + STAY_TIE_BREAK), speedup)
        return np.where(allowed, power_utility(speedup, self.p), -np.inf), low

    def seen(self, jobs: list[Job], held: list[Counter[int]]) -> NDArray[np.int64]:
        """The most workers each job has run on (0 before it has run). ``explore`` allows
        twice that, 1 before a run (the Pollux artifact's ``max_replicas = 2 *
        job.max_profiled_replicas``: a job only knows its throughput at the sizes it has run
        at, ``simulator.py``); ``learn_sync`` values the job with what it could have learned."""
        most = {job.job_id: max(self.most_run.get(job.job_id, 0), sum(h.values()))
                for job, h in zip(jobs, held, strict=True)}
        self.most_run = most
        self.spanned = {job.job_id for job, h in zip(jobs, held, strict=True)
                        if job.job_id in self.spanned or sum(k > 0 for k in h.values()) > 1}
        return np.array([most[job.job_id] for job in jobs], dtype=np.int64)

    def _goodput(self, state: CycleState, jobs: list[Job], kmax: int,
                 seen: NDArray[np.int64] | None = None) -> NDArray[np.float64]:
        cluster = state.cluster
        gpu = max(cluster.gpus_by_type().items(), key=lambda item: item[1])[0]
        node_size = int(cluster.node_gpus.max())
        stable = max(kmax, self.max_workers)  # one cache key whatever the round's largest job
        params = [None] * len(jobs) if seen is None else [
            _learned_params(job, gpu, int(k), node_size, job.job_id in self.spanned)
            for job, k in zip(jobs, seen, strict=True)]
        curves = [job_curves(job, state.now, gpu, stable, p)
                  for job, p in zip(jobs, params, strict=True)]
        single = np.stack([c.single[:kmax + 1] for c in curves])
        multi = np.stack([c.multi[:kmax + 1] for c in curves])
        return np.where(np.arange(kmax + 1) <= node_size, single, multi)

    def _base(self, goodput: NDArray[np.float64], allowed: NDArray[np.bool_],
              low: NDArray[np.int64], high: NDArray[np.int64], total: int,
              num_jobs: int) -> NDArray[np.float64]:
        """Goodput at the fair share (§4.2) or one GPU, clamped to the bounds; the best allowed
        goodput when that count is not allowed."""
        share = max(total // num_jobs, 1) if self.baseline == "fair" else 1
        k = np.clip(share, np.maximum(low, 1), np.maximum(high, 1))
        rows = np.arange(len(k))
        base = np.where(allowed[rows, k], goodput[rows, k], -np.inf)
        best = np.where(allowed, goodput, -np.inf)
        best[:, 0] = -np.inf
        base = np.where(base > 0, base, best.max(axis=1))
        return np.where(base > 0, base, 1.0)




def _learned_params(job: Job, gpu: str, most_workers: int, node_size: int,
                    spanned: bool) -> dict[tuple[str, str], PerfParams] | None:
    """``learn_sync``: the job's iteration-time parameters with the sync terms it could not
    have measured yet at their priors (``sync_prior.py``); None without a goodput profile."""
    app = app_of(job)
    if app is None:
        return None
    params = goodput_function(app, gpu).params
    return {(app, gpu): learned_sync(params, most_workers, node_size, spanned)}


def _allowed(state: CycleState, job: Job) -> NDArray[np.bool_] | None:
    """The nodes the job's GPU-type pins and pool allow and the throughput model rates above 0
    for it (the core's ``runnable`` filter; None: every node). Pollux values a job on one GPU
    type, so only placement keeps it off a type where it cannot progress (ResNet-50 b128 on a
    K80 under gavel-physical held 4 of 6 jobs at rate 0 for ever)."""
    if not job.spec.gpu_types and job.spec.pool not in state.cluster.pools:
        runnable = runnable_nodes(state, job)
        return None if runnable.all() else runnable
    return allowed_nodes(state, job)


@register_policy("pollux")
def pollux(p: float = -1.0, round_seconds: float = 60.0, restart_seconds: float = 30.0,
           elastic: str = "all", max_workers: int = DEFAULT_MAX_WORKERS,
           baseline: str = "fair", interference: bool = True,
           explore: bool = False, penalize_start: bool = False,
           rigid_apps: str = "", learn_sync: bool = False) -> Profile:
    """Pollux (OSDI'21): goodput-optimal elastic allocation, power-mean fairness (p)."""
    at_least(0, restart_seconds=restart_seconds)
    allocator = PolluxAllocator(p, restart_seconds, elastic, max_workers, baseline, interference,
                                explore=explore, penalize_start=penalize_start,
                                rigid_apps=rigid_apps, learn_sync=learn_sync)
    return Profile("pollux", SubmitOrder(), plugins=(allocator,), round_seconds=round_seconds,
                   acts_on_running=True)
