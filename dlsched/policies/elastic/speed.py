"""Speed curves and worker bounds shared by the elastic allocation policies (Optimus, AFS,
ElasticFlow, Chronus).

A job's *speed curve* is its rate (work units per second, from the trace's throughput model)
at ``n = 0..hi`` workers packed on the fewest nodes of one GPU type, the placement every one of
these papers assumes when it estimates a job's speed (Optimus §5.2, ElasticFlow §4.3). Its
remaining time at ``n`` workers is ``remaining_work / rate[n]``.

Which sizes a job may take (the papers treat every job as elastic; traces such as Pollux's
declare rigid sizes) is the ``elastic`` option:

- ``"declared"``: ``allocation.worker_bounds`` (a rigid job gets exactly its requested size);
- ``"all"``: a job without declared bounds may use ``1..max_workers`` workers (a declared
  job keeps its bounds, a MIG job its one instance). ``max_workers`` (default 64, the Pollux
  testbed) stands in for the application's own limit; with the ``goodput`` model the rate is
  0 beyond the batch-size limit (``max_batch / min_local_bsz`` replicas), so no policy grows a
  job past it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from dlsched.cluster.cluster import Cluster
from dlsched.perf.model import Placement
from dlsched.scheduling.allocation import worker_bounds
from dlsched.scheduling.plugins.filters import (
    allowed_nodes,
    allowed_signature,
    allows_every_node,
)
from dlsched.scheduling.state import CycleState
from dlsched.workload.job import Job

ELASTIC_MODES = ("all", "declared")
DEFAULT_MAX_WORKERS = 64
# usable_gpus' per-round cache: the job's allowed-node mask as bytes -> GPUs
UsableCache = dict[bytes, int]


def check_elastic(mode: str) -> str:
    if mode not in ELASTIC_MODES:
        raise ValueError(f"elastic must be one of {', '.join(ELASTIC_MODES)}, got {mode!r}")
    return mode


def active_jobs(state: CycleState) -> list[Job]:
    """Running and waiting jobs, in submission order (then id)."""
    snap = state.snapshot
    jobs = [*snap.running, *snap.waiting]
    return sorted(jobs, key=lambda j: (j.spec.submit_time, j.job_id))


def node_capacity(state: CycleState) -> np.ndarray:
    """GPUs per node that an allocation policy may hand out: every GPU of an up node (the
    policy re-decides the GPUs of running jobs too)."""
    capacity = np.array(state.cluster.node_gpus, dtype=np.int64)
    for node in state.snapshot.down_nodes:
        capacity[node] = 0
    return capacity


def job_bounds(job: Job, mode: str, max_workers: int, capacity: int) -> tuple[int, int]:
    """``(lo, hi)`` workers for ``job`` under the ``elastic`` mode (see the module docstring);
    ``hi`` never exceeds the cluster's ``capacity``. A MIG job stays at its one worker: it
    asks for one instance of its profile, which the core books on one GPU."""
    if mode == "all" and not job.spec.is_elastic and job.spec.mig_profile is None:
        lo, hi = 1, max_workers
    else:
        lo, hi = worker_bounds(job)
    return lo, min(hi, capacity)


def usable_gpus(state: CycleState, job: Job, capacity: np.ndarray,
                cache: UsableCache) -> int:
    """GPUs of ``capacity`` on the nodes the job may be placed on (``filters.allowed_nodes``:
    its GPU-type pins, its pool, the types the throughput model rates above 0 for it; the
    mask the placement, ``fewest_nodes``, uses): an elastic job grown past them would never be
    placed, and wait for good. ``cache``: one round's, by that mask. Keyed by the pins alone,
    a job rated 0 on a pinned type read the count of an earlier job with the same pins
    (Optimus planned ResNet-50 b128 7 GPUs of the 4 it can use, and placement gave it none);
    without the pool, a pool-a job was counted pool b's GPUs."""
    if allows_every_node(state, job):
        return int(capacity.sum())
    key = allowed_signature(state, job)
    found = cache.get(key)
    if found is None:
        found = cache[key] = int(capacity[allowed_nodes(state, job)].sum())
    return found


def reference_type(state: CycleState, job: Job) -> tuple[str, int]:
    """The GPU type a job's speed is estimated on: of the types it may use, the one with the
    most GPUs (ties by name); and the most GPUs a node of that type has. Types with no node the
    job may use (``filters.allowed_nodes``) are left out while another is left: types the
    throughput model rates 0 for it (a curve of zeros there, ResNet-50 b128 on K80, gave the
    job no GPU, ever) and types absent from its pool."""
    if allows_every_node(state, job):
        return _reference_type(state.cluster, job.spec.gpu_types)
    allowed = allowed_nodes(state, job)
    if not allowed.any():
        return _reference_type(state.cluster, job.spec.gpu_types)
    cluster = state.cluster
    rated = {cluster.type_names[c] for c in np.unique(cluster.node_type[allowed]) if c >= 0}
    types = tuple(t for t in (job.spec.gpu_types or cluster.type_names) if t in rated)
    return _reference_type(cluster, types)


def _reference_type(cluster: Cluster, gpu_types: tuple[str, ...]) -> tuple[str, int]:
    key = (id(cluster), gpu_types)
    found = _REFERENCE.get(key)
    if found is None or found[0] is not cluster:
        allowed = set(gpu_types) or set(cluster.type_names)
        totals = {t: n for t, n in cluster.gpus_by_type().items() if t in allowed and n > 0}
        best = min(totals, key=lambda t: (-totals[t], t)) if totals else ""
        pick = (best, cluster.largest_node_by_type[best]) if best else ("", 0)
        if len(_REFERENCE) > 10_000:
            _REFERENCE.clear()
        found = _REFERENCE[key] = (cluster, pick)
    return found[1]


# (id(cluster), job's GPU types) -> (the cluster, its reference type and largest node)
_REFERENCE: dict[tuple[int, tuple[str, ...]], tuple[Cluster, tuple[str, int]]] = {}


def packed(gpu_type: str, per_node: int, workers: int) -> Placement:
    """``workers`` workers filling nodes of ``per_node`` GPUs one after another."""
    return Placement((gpu_type,) * workers, tuple(i // per_node for i in range(workers)))


class SpeedCurves:
    """Per-job memo of rates at packed sizes. The rate of the throughput models depends on the
    spec and placement only, so a job's curve is computed once; ``forget`` drops gone jobs."""

    def __init__(self, method: str = "rate") -> None:
        self._rates: dict[tuple[str, int], float] = {}
        self.method = method  # the model's method giving a rate: rate, or step_rate
        # curves fitted to these rates by (job, lo, hi) (optimus_fit.fitted_curve): the rates
        # do not change, so neither does the fit, and refitting every job every round was
        # most of an Optimus or AFS run
        self.fits: dict[tuple[str, int, int], np.ndarray] = {}

    def rates(self, state: CycleState, job: Job, sizes: Iterable[int]) -> np.ndarray:
        """Rates at each of ``sizes`` (0 at size 0 or where the job cannot run)."""
        gpu, per_node = reference_type(state, job)
        model = state.snapshot.throughput
        rate = getattr(model, self.method, None)
        if rate is None:
            raise ValueError(f"throughput model {model.name!r} has no {self.method} "
                             "(step-time speeds need one with step times, e.g. pollux-progress)")
        out = []
        for n in sizes:
            key = (job.job_id, int(n))
            if key not in self._rates:
                ok = n > 0 and per_node > 0
                self._rates[key] = float(rate(job.spec, packed(gpu, per_node, n))) \
                    if ok else 0.0
            out.append(self._rates[key])
        return np.array(out, dtype=float)

    def curve(self, state: CycleState, job: Job, hi: int) -> np.ndarray:
        """Rates at ``0..hi`` workers."""
        return self.rates(state, job, range(hi + 1))

    def forget(self, active: Sequence[Job]) -> None:
        keep = {j.job_id for j in active}
        self._rates = {k: v for k, v in self._rates.items() if k[0] in keep}
        self.fits = {k: v for k, v in self.fits.items() if k[0] in keep}


def remaining_times(remaining_work: float, rates: np.ndarray) -> np.ndarray:
    """``remaining_work / rate``, ``inf`` where the rate is 0."""
    with np.errstate(divide="ignore"):
        return np.where(rates > 0, remaining_work / np.maximum(rates, 1e-300), np.inf)


class ElasticAllocator:
    """What Optimus, AFS and ElasticFlow's allocators share: the ``elastic`` mode, the cap on
    workers, the speed curves, their worker bounds and the start of every round."""

    def __init__(self, elastic: str, max_workers: int) -> None:
        self.elastic = check_elastic(elastic)
        self.max_workers = max_workers
        self.curves = SpeedCurves()

    def worker_bounds(self, job: Job, capacity: int | None = None) -> tuple[int, int]:
        """The fewest and most workers this policy may give ``job``."""
        return job_bounds(job, self.elastic, self.max_workers,
                          self.max_workers if capacity is None else capacity)

    def begin_round(self, state: CycleState) -> tuple[list[Job], np.ndarray, int]:
        """The active jobs (curves of departed ones forgotten), GPUs per node and in all."""
        jobs = active_jobs(state)
        self.curves.forget(jobs)
        capacity = node_capacity(state)
        return jobs, capacity, int(capacity.sum())
