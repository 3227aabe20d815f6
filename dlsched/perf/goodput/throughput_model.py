"""The ``goodput`` throughput model: Pollux's goodput for every scheduler (OSDI'21 §3, §5.2).

Work unit, as for ``pollux`` (``dlsched/perf/pollux_table.py``): reference seconds, the time of
the whole training run at the submitted global batch ``spec.batch_size`` on ``spec.num_gpus``
T4 GPUs packed four per node. Both that reference run and the run on a placement are
``run_table.RunTable``s: goodput along training progress ``P`` and the seconds to reach it.

With ``adaptive_batch`` (the default) a job re-picks its batch as ``φ`` grows (§3.3; AdaptDL
does so even on a fixed allocation): on a placement its goodput at ``P`` is the best of the
submitted batch and every configuration the limits allow there; without, it trains at the
submitted batch, split into micro-batches as Pollux does. A placement over several GPU types
runs at its slowest type at each ``P``; a type without fitted parameters uses T4's (``params``
may supply more, e.g. Sia's fits).

Two rates, consistent with each other:

- ``rate(spec, placement)``: the whole run's mean, reference seconds over run seconds there
  (what a policy uses to estimate a job's speed, and the core's rate for a job it never
  re-rates);
- ``rate(spec, placement, progress)``: the instantaneous rate once ``progress`` (a fraction of
  ``spec.work``) is done, ``g_placement(P) / g_reference(P)`` at the ``P`` the reference run
  reaches after that fraction of its time. Integrated over the run on a fixed placement it
  gives the same run time. ``progress_dependent`` (true when adaptive: the ratio is constant
  otherwise) tells the core to re-rate running jobs each round.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from dlsched.perf.goodput.bundle import load_grad_stats, load_perf_params, sia_perf_params
from dlsched.perf.goodput.goodput import BatchLimits, GoodputFunction
from dlsched.perf.goodput.iteration_time import PerfParams
from dlsched.perf.goodput.run_table import (
    Along,
    Candidates,
    RunTable,
    best_goodput_along,
    fixed_goodput_along,
    knots_of,
)
from dlsched.perf.model import Placement
from dlsched.perf.pollux_table import packed_placement
from dlsched.workload.job import JobSpec

REFERENCE_GPU = "T4"


@functools.cache
def goodput_function(app: str, gpu: str = REFERENCE_GPU) -> GoodputFunction:
    """The bundled goodput function of ``app`` on ``gpu`` (T4 parameters if none are fitted)."""
    stats = load_grad_stats()
    if app not in stats:
        raise KeyError(f"goodput model has no application {app!r} (known: {sorted(stats)})")
    fitted = load_perf_params()
    params = fitted.get((app, gpu)) or fitted[(app, REFERENCE_GPU)]
    return GoodputFunction(params.params, stats[app], BatchLimits.pollux(app))


@functools.cache
def _candidates(app: str, num_replicas: int) -> Candidates:
    return Candidates.of(goodput_function(app), num_replicas)


@functools.lru_cache(maxsize=65536)
def goodput_along(app: str, gpu: str, num_nodes: int, num_replicas: int, batch: int,
                  adaptive: bool, params: PerfParams | None = None) -> Along:
    """Goodput at the knots of ``app`` on ``(num_nodes, num_replicas)`` GPUs of type ``gpu``
    at the global ``batch`` or, ``adaptive``, at the best of it and the configurations the
    limits allow; ``params`` override the fitted iteration-time parameters. Read-only."""
    fn = goodput_function(app, gpu)
    if params is not None:
        fn = GoodputFunction(params, fn.stats, fn.limits)
    good, batches = fixed_goodput_along(fn, num_nodes, num_replicas, batch)
    if adaptive:
        best, best_batch = best_goodput_along(fn, num_nodes, num_replicas,
                                              _candidates(app, num_replicas))
        batches = np.where(best > good, best_batch, batches)
        good = np.maximum(good, best)
    for array in (good, batches):
        array.flags.writeable = False
    return good, batches


@functools.lru_cache(maxsize=65536)
def run_table(app: str, gpu_types: tuple[str, ...], num_nodes: int, num_replicas: int,
              batch: int, adaptive: bool, params: tuple[PerfParams | None, ...]) -> RunTable:
    """The run on a placement of the (sorted, distinct) ``gpu_types``: the slowest type's
    goodput at each knot (synchronous data parallelism waits for it)."""
    along = [goodput_along(app, gpu, num_nodes, num_replicas, batch, adaptive, p)
             for gpu, p in zip(gpu_types, params, strict=True)]
    goodput = np.minimum.reduce([good for good, _ in along])
    slowest = np.argmin(np.stack([good for good, _ in along]), axis=0)
    batches = np.stack([b for _, b in along])[slowest, np.arange(len(goodput))]
    return RunTable.of(knots_of(goodput_function(app)), goodput, batches)


@dataclass(frozen=True, slots=True)
class GoodputSample:
    """A job's state under the model: ``progress`` in examples at ``M0``, its global ``batch``,
    statistical ``efficiency`` ``E(batch)`` there and ``goodput`` (examples at ``M0``/s)."""

    progress: float
    batch: float
    efficiency: float
    goodput: float


class GoodputThroughputs:
    """Reference seconds per second from the fitted goodput model; see the module docstring."""

    name = "goodput"

    def __init__(self, adaptive_batch: bool = True, gpus_per_node: int = 4,
                 params: Mapping[tuple[str, str], PerfParams] | None = None) -> None:
        self.adaptive_batch = adaptive_batch
        self.progress_dependent = adaptive_batch
        self.gpus_per_node = gpus_per_node
        self.params = dict(params or {})

    def rate(self, spec: JobSpec, placement: Placement, progress: float | None = None) -> float:
        if not placement.gpu_types:
            return 0.0
        app, batch = _app_and_batch(spec)
        run = self.run_on(app, batch, placement)
        reference = self.reference_run(app, batch, spec.num_gpus)
        if not np.isfinite(run.total_seconds):
            return 0.0
        if progress is None:
            return reference.total_seconds / run.total_seconds
        at = reference.progress_at_fraction(progress)
        return max(run.goodput_at(at), 0.0) / reference.goodput_at(at)

    def reference_rate(self, spec: JobSpec) -> float:
        return 1.0

    def sample(self, spec: JobSpec, placement: Placement, progress: float) -> GoodputSample:
        """What the job trains at on ``placement`` once ``progress`` of its work is done: its
        training progress, batch, statistical efficiency and goodput (for reports)."""
        app, batch = _app_and_batch(spec)
        reference = self.reference_run(app, batch, spec.num_gpus)
        at = reference.progress_at_fraction(progress)
        if not placement.gpu_types:
            return GoodputSample(at, 0.0, 0.0, 0.0)
        run = self.run_on(app, batch, placement)
        chosen = run.batch_at(at)
        stats = goodput_function(app).stats
        eff = float(stats.efficiency(at, chosen)) if chosen > 0 else 0.0
        return GoodputSample(at, chosen, eff, max(run.goodput_at(at), 0.0))

    def run_on(self, app: str, batch: int, placement: Placement) -> RunTable:
        """The run of ``app`` on ``placement`` (at ``batch`` unless adaptive)."""
        types = tuple(sorted(set(placement.gpu_types)))
        params = tuple(self.params.get((app, t)) for t in types)
        return run_table(app, types, len(set(placement.nodes)), placement.num_workers,
                         batch, self.adaptive_batch, params)

    def reference_run(self, app: str, batch: int, num_gpus: int) -> RunTable:
        return reference_run(app, batch, num_gpus, self.gpus_per_node)


def reference_run(app: str, batch: int, num_gpus: int, gpus_per_node: int = 4) -> RunTable:
    """The reference run: ``batch`` on ``num_gpus`` T4 packed ``gpus_per_node`` a node."""
    shape = packed_placement(max(num_gpus, 1), gpus_per_node)
    return run_table(app, (REFERENCE_GPU,), len(shape), sum(shape), batch, False, (None,))


def _app_and_batch(spec: JobSpec) -> tuple[str, int]:
    if spec.model is None or spec.batch_size is None:
        raise ValueError(f"job {spec.job_id}: the goodput model needs spec.model and batch_size")
    return spec.model.casefold(), spec.batch_size


def fixed_batch() -> GoodputThroughputs:
    """The ``goodput-fixed`` model: every job trains at its submitted global batch (split into
    micro-batches as Pollux does), its work still the progress target scaled by statistical
    efficiency at that batch. The Pollux artifact runs its Tiresias and Optimus baselines so
    (``simulator.py``: ``target_batch_size`` from the workload)."""
    return GoodputThroughputs(adaptive_batch=False)


def with_sia_fits() -> GoodputThroughputs:
    """The ``goodput-sia`` model: the goodput model with Sia's per-GPU-type fits
    (``bundle.sia_perf_params``, fitted once per process from ``bundle.sia_profiles_dir()``;
    T4's bundled fit for a type without one, and for every type, with a ``DataWarning``, when
    Sia's profiles are absent).
    Sia's heterogeneous setting uses it."""
    return GoodputThroughputs(params=sia_perf_params())
