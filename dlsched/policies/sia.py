"""Sia (Jayaram Subramanya et al., SOSP'23 §4) as an allocation policy: heterogeneity-aware,
goodput-optimized elastic scheduling solved as an ILP every round (60 s, the paper's).

Per round (see ``policies/elastic/sia_configs.py`` for the configurations and their values):

1. enumerate each job's configurations: per GPU type, ``1, 2, 4, … ≤ node`` GPUs on one node or
   whole nodes, up to its worker cap (§4.1); a rigid job only at its requested size;
2. value each by the job's best goodput there (per-GPU-type goodput model, batch co-adapted),
   normalized by the job's smallest, discounted by the restart factor when it differs from the
   job's current configuration, through the fairness power ``p`` (−0.5, the paper's);
3. solve "at most one configuration per job, GPUs of each type within capacity" exactly with
   HiGHS (``policies/elastic/sia_ilp.py``);
4. place the chosen configurations on nodes, whole nodes first (``sia_place.py``).

Per-GPU-type iteration-time parameters are fitted from Sia's profiles
(``fit_sia_params(profiles)``, about 12 s once per process): ``profiles="auto"`` finds them in
the data directory (``$DLSCHED_DATA/profiles/sia``, see ``dlsched/data_location.py``), or give
their directory. The Sia data has no license and is not bundled, so without it every type uses
the bundled T4 fits and Sia sees no difference between types: a ``DataWarning`` says so (set
``profiles="bundled"`` to ask for that without a warning).
``elastic`` and ``max_workers`` as in Pollux (``docs/policies/pollux.md``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from dlsched.perf.goodput.bundle import sia_perf_params
from dlsched.perf.goodput.iteration_time import PerfParams
from dlsched.policies.elastic.configs import (
    STAY_TIE_BREAK,
    UNLIMITED,
    RestartLog,
    curve_key,
    curves_of,
    goodput_bounds,
)
from dlsched.policies.elastic.mip_budget import SolveLog
from dlsched.policies.elastic.sia_configs import (
    Columns,
    TypeConfigs,
    gain,
    prune_dominated,
    type_configs,
)
from dlsched.policies.elastic.sia_ilp import EXACT_BUDGET, solve_allocation
from dlsched.policies.elastic.sia_place import Choice, place_configs
from dlsched.policies.elastic.sia_pools import pool_rows
from dlsched.policies.elastic.speed import (
    DEFAULT_MAX_WORKERS,
    active_jobs,
    check_elastic,
    node_capacity,
)
from dlsched.policies.fifo import SubmitOrder
from dlsched.scheduling.allocation import Assignment
from dlsched.scheduling.plugins.filters import allowed_nodes
from dlsched.scheduling.profile import Profile
from dlsched.scheduling.registry import at_least, register_policy
from dlsched.scheduling.state import CycleState
from dlsched.workload.job import Job

ParamTable = Mapping[tuple[str, str], PerfParams]
UNBOUNDED = 1 << 40  # a type's workers when only the ILP's budget bounds them


class SiaAllocator:
    """AllocatePlugin: Sia's configuration ILP (see the module docstring)."""

    name = "sia"

    def __init__(self, p: float = -0.5, restart_seconds: float = 30.0, elastic: str = "all",
                 max_workers: int = DEFAULT_MAX_WORKERS, profiles: str = "auto",
                 perf_params: ParamTable | None = None, zero_speedup: float = 0.01,
                 exact: bool = False) -> None:
        self.p, self.restart_seconds = p, restart_seconds
        self.elastic, self.max_workers = check_elastic(elastic), max_workers
        if profiles not in ("auto", "bundled") and not Path(profiles).is_dir():
            raise ValueError(f"profiles: {profiles} is not a directory (Sia's profiles; 'auto' "
                             "looks in $DLSCHED_DATA/profiles/sia, 'bundled' uses T4's fits)")
        self.profiles, self._params = profiles, perf_params
        self.zero_speedup, self.exact = zero_speedup, exact
        self.restarts = RestartLog()
        # exact=True: HiGHS' node budget a solve, and the solves it (or the net) cut short
        self.budget, self.solve_log = EXACT_BUDGET, SolveLog()

    def worker_bounds(self, job: Job, capacity: int | None = None) -> tuple[int, int]:
        """The fewest and most workers this policy may give ``job``."""
        limit = UNLIMITED if capacity is None else capacity
        return goodput_bounds(job, self.elastic, self.max_workers, limit)

    def perf_params(self) -> ParamTable:
        if self._params is None:
            self._params = {} if self.profiles == "bundled" else sia_perf_params(
                None if self.profiles == "auto" else Path(self.profiles))
        return self._params

    def allocate(self, state: CycleState) -> Mapping[str, Assignment]:
        jobs = active_jobs(state)
        if not jobs:
            return {}
        capacity = node_capacity(state)
        held = [Assignment.of(job, state.cluster).per_node() for job in jobs]
        configs = self._type_configs(state, capacity)
        columns = self.columns(state, jobs, held, configs)
        type_capacity = np.bincount(state.cluster.node_type, weights=capacity,
                                    minlength=len(configs)).astype(np.int64)
        # a pooled job's configurations count against its pool's GPUs (``sia_pools.py``)
        by_pool = pool_rows(state, jobs, columns, capacity)
        budgeted, rows = (columns, type_capacity) if by_pool is None else by_pool
        chosen = solve_allocation(budgeted, rows, self.exact, budget=self.budget,
                                  log=self.solve_log)
        choices = [Choice(-1, 0, 1, h) for h in held]
        for j, t, k in zip(columns.job[chosen], columns.type_index[chosen],
                           columns.count[chosen], strict=True):
            choices[j] = Choice(int(t), int(k), configs[t].node_size, held[j],
                                allowed_nodes(state, jobs[j]))
        nodes = place_configs(choices, capacity, state.cluster.node_type)
        self.restarts.record(jobs, held, nodes)
        return {job.job_id: Assignment(n) for job, n in zip(jobs, nodes, strict=True) if n}

    def _type_configs(self, state: CycleState, capacity: NDArray[np.int64]) -> list[TypeConfigs]:
        cluster, cap = state.cluster, int(capacity.sum())
        result = []
        for t, name in enumerate(cluster.type_names):
            mine = cluster.node_type == t
            size = int(cluster.node_gpus[mine].max()) if mine.any() else 1
            usable = int(np.count_nonzero(capacity[mine] > 0))
            result.append(type_configs(name, t, size, usable, min(cap, self.max_workers)))
        return result

    def columns(self, state: CycleState, jobs: list[Job], held: list[Counter[int]],
                configs: list[TypeConfigs]) -> Columns:
        """Every useful (job, configuration) column with its value (``sia_configs.py``)."""
        capacity = node_capacity(state)
        total = int(capacity.sum())
        bounds = np.array([self.worker_bounds(job, total) for job in jobs], dtype=np.int64)
        low, high = bounds[:, 0], np.minimum(bounds[:, 1], total)
        rigid = low == high
        # one cache key for the curves whatever the round's largest job
        kmax = int(max(high.max(), self.max_workers, *(c.counts.max(initial=1) for c in configs)))
        keys = [curve_key(job, state.now) for job in jobs]
        usable = _usable_types(state, jobs, capacity)
        blocks = [self._block(keys, jobs, c, low, high, rigid, kmax, usable[:, c.type_index])
                  for c in configs]
        goodput = np.concatenate([b[1] for b in blocks], axis=1)
        floor = np.where(goodput > 0, goodput, np.inf).min(axis=1)
        speedup = goodput / np.where(np.isfinite(floor), floor, 1.0)[:, None]
        counts = np.concatenate([b[0] for b in blocks], axis=1)
        types = np.concatenate([np.full(b[0].shape, c.type_index) for b, c in
                                zip(blocks, configs, strict=True)], axis=1)
        speedup = self._discount(state, jobs, held, speedup, counts, types)
        allowed = np.isfinite(goodput) & (goodput > 0)
        value = np.where(allowed, gain(np.where(allowed, speedup, 1.0), self.p,
                                       self.zero_speedup), -np.inf)
        keep = np.concatenate([prune_dominated(value[:, _span(blocks, i)])
                               for i in range(len(blocks))], axis=1)
        job_index, col = np.nonzero(keep)
        node_sizes = np.array([c.node_size for c in configs])
        return Columns(job_index, types[job_index, col], counts[job_index, col],
                       counts[job_index, col] > node_sizes[types[job_index, col]],
                       value[job_index, col])

    def _block(self, keys: list[tuple[str, int] | None], jobs: list[Job], c: TypeConfigs,
               low: NDArray[np.int64], high: NDArray[np.int64], rigid: NDArray[np.bool_],
               kmax: int, usable: NDArray[np.int64]) -> tuple[NDArray[np.int64],
                                                              NDArray[np.float64]]:
        """Counts and goodputs of one GPU type's columns: the standard configurations, then
        each rigid job's own size; none for a job that may not use the type, nor above the
        GPUs of the type it may use (``usable``)."""
        counts = np.concatenate([np.broadcast_to(c.counts, (len(jobs), len(c.counts))),
                                 high[:, None]], axis=1)
        params = self.perf_params()
        curves = [curves_of(key, c.gpu_type, kmax, params) for key in keys]
        single = np.stack([cv.single for cv in curves])
        multi = np.stack([cv.multi for cv in curves])
        goodput = np.where(counts > c.node_size, np.take_along_axis(multi, counts, axis=1),
                           np.take_along_axis(single, counts, axis=1))
        ok = (counts >= low[:, None]) & (counts <= high[:, None]) & np.isfinite(goodput)
        ok[:, :-1] &= ~rigid[:, None]
        ok[:, -1] &= rigid
        ok &= (usable[:, None] > 0) & (counts <= usable[:, None])
        return counts, np.where(ok, goodput, -np.inf)

    def _discount(self, state: CycleState, jobs: list[Job], held: list[Counter[int]],
                  speedup: NDArray[np.float64], counts: NDArray[np.int64],
                  types: NDArray[np.int64]) -> NDArray[np.float64]:
        """The restart factor on every configuration but a running job's current one; the
        current one gets a relative ``STAY_TIE_BREAK`` so that a running job is not swapped
        for an equally valued waiting one (the LP is indifferent; a swap costs a restart)."""
        node_type = state.cluster.node_type
        current_k = np.array([sum(h.values()) for h in held])
        current_t = np.array([int(node_type[next(iter(h))]) if h else -1 for h in held])
        factor = np.array([self.restarts.factor(job, state.now, self.restart_seconds)
                           for job in jobs])
        moved = (current_k[:, None] > 0) & ((counts != current_k[:, None])
                                            | (types != current_t[:, None]))
        stays = (current_k[:, None] > 0) & ~moved
        with np.errstate(invalid="ignore"):  # -inf (not allowed) times a factor of 0
            speedup = np.where(moved, speedup * factor[:, None], speedup)
        return np.where(stays, speedup * (1 + STAY_TIE_BREAK), speedup)



def _span(blocks: list[tuple[NDArray, NDArray]], i: int) -> slice:
    start = sum(b[0].shape[1] for b in blocks[:i])
    return slice(start, start + blocks[i][0].shape[1])


def _usable_types(state: CycleState, jobs: list[Job], capacity: NDArray[np.int64]
                  ) -> NDArray[np.int64]:
    """(job, GPU type index): the most workers the job may have on the type, 0 where it may not
    use the type. A job may use the nodes of ``allowed_nodes``: its GPU-type pins, the types
    the throughput model rates above 0 for it (the core's ``runnable`` filter: Sia's own
    goodput model rates every type, so without it ResNet-50 b128 got a K80 under
    gavel-physical and never progressed) and its pool. The per-type budget of the ILP counts
    the whole cluster, so a job in a pool is bounded by its pool's GPUs of the type (``capacity``
    per node): a pool-b job was given all 8 GPUs of pools a and b, and placed there."""
    names, pools = state.cluster.type_names, state.cluster.pools
    rows_by_mask: dict[tuple[int, bool], tuple[int, ...]] = {}  # masks are shared per shape
    rows = []
    for job in jobs:
        mask = allowed_nodes(state, job)
        pooled = job.spec.pool is not None and job.spec.pool in pools
        row = rows_by_mask.get((id(mask), pooled))
        if row is None:
            row = rows_by_mask[(id(mask), pooled)] = (
                _pool_room(state, mask, capacity) if pooled else
                tuple(UNBOUNDED if ok else 0 for ok in _rated_types(state, mask)))
        rows.append(row)
    return np.array(rows, dtype=np.int64).reshape(len(jobs), len(names))


def _pool_room(state: CycleState, allowed: NDArray[np.bool_], capacity: NDArray[np.int64]
               ) -> tuple[int, ...]:
    """Per GPU type, the GPUs of ``capacity`` on ``allowed`` nodes of that type."""
    cluster = state.cluster
    kinds = cluster.node_type[allowed]
    room = np.bincount(kinds[kinds >= 0], weights=capacity[allowed][kinds >= 0],
                       minlength=len(cluster.type_names))
    return tuple(int(r) for r in room)


def _rated_types(state: CycleState, allowed: NDArray[np.bool_]) -> tuple[bool, ...]:
    """Per GPU type, whether any node of it is in ``allowed``."""
    cluster = state.cluster
    if allowed.all():
        return (True,) * len(cluster.type_names)
    kinds = cluster.node_type[allowed]
    counts = np.bincount(kinds[kinds >= 0], minlength=len(cluster.type_names))
    return tuple(bool(c) for c in counts)


@register_policy("sia")
def sia(p: float = -0.5, round_seconds: float = 60.0, restart_seconds: float = 30.0,
        elastic: str = "all", max_workers: int = DEFAULT_MAX_WORKERS,
        profiles: str = "auto", exact: bool = False) -> Profile:
    """Sia (SOSP'23): heterogeneity-aware goodput ILP over (GPU type, count) configurations
    (``exact``: HiGHS' branch and bound within a node budget, not the LP route)."""
    at_least(0, restart_seconds=restart_seconds)
    allocator = SiaAllocator(p, restart_seconds, elastic, max_workers, profiles, exact=exact)
    return Profile("sia", SubmitOrder(), plugins=(allocator,), round_seconds=round_seconds,
                   acts_on_running=True)
