"""The ``goodput`` throughput model: Pollux's goodput for non-elastic schedulers (OSDI'21 §3).

Work unit, as for ``pollux`` (``dlsched/perf/pollux_table.py``): reference seconds, the time of
the whole training run at the submitted global batch ``spec.batch_size`` on ``spec.num_gpus``
T4 GPUs packed four per node. The rate on a placement is that reference time over the run's
time there, both from the fitted goodput model: a run at a fixed configuration takes
``∫ dP / GOODPUT(P)`` seconds over its progress (``progress.seconds_to_progress``).

With ``adaptive_batch`` (the default) the job trains on its placement at one configuration for
the whole run (the allocation is fixed): of the submitted batch and the best-goodput
configurations at 0, 25, 50, 75 and 100 % of training, the one that finishes first (elastic
policies re-optimize as ``φ`` grows); without, at the submitted batch, split into micro-batches
as Pollux does. A placement over several GPU types runs at its slowest type; a GPU type without
fitted parameters uses the T4 ones (as ``pollux``, which ignores types).
"""

from __future__ import annotations

import functools

from dlsched.perf.goodput.bundle import load_grad_stats, load_perf_params
from dlsched.perf.goodput.goodput import BatchConfig, BatchLimits, GoodputFunction
from dlsched.perf.goodput.goodput import pollux_accumulation as split_batch
from dlsched.perf.goodput.progress import seconds_to_progress
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


@functools.lru_cache(maxsize=65536)
def run_seconds(app: str, gpu: str, num_nodes: int, num_replicas: int, batch: int,
                adaptive: bool = False) -> float:
    """Seconds for the whole run on ``(num_nodes, num_replicas)`` GPUs of type ``gpu`` at the
    global ``batch`` or, ``adaptive``, at the best configuration; ``inf`` if none fits."""
    fn = goodput_function(app, gpu)
    total = fn.stats.total_progress
    configs = _configs(fn, num_nodes, num_replicas, batch, adaptive)
    return min((seconds_to_progress(fn.stats, c, 0.0, total) for c in configs
                if c.throughput > 0), default=float("inf"))


def _configs(fn: GoodputFunction, nodes: int, replicas: int, batch: int,
             adaptive: bool) -> list[BatchConfig]:
    """The submitted batch and (adaptive) the best configurations at five points of training."""
    atomic, accum = split_batch(batch, replicas, fn.limits.max_local_bsz)
    submitted = fn.config(nodes, replicas, atomic, accum, 0.0)
    if not adaptive:
        return [submitted]
    points = [fn.stats.total_progress * f for f in (0.0, 0.25, 0.5, 0.75, 1.0)]
    best = (fn.optimize(nodes, replicas, p) for p in points)
    return [submitted, *(c for c in best if c is not None)]


class GoodputThroughputs:
    """Reference seconds per second from the fitted goodput model; see the module docstring."""

    name = "goodput"

    def __init__(self, adaptive_batch: bool = True, gpus_per_node: int = 4) -> None:
        self.adaptive_batch = adaptive_batch
        self.gpus_per_node = gpus_per_node

    def rate(self, spec: JobSpec, placement: Placement) -> float:
        if not placement.gpu_types:
            return 0.0
        app, batch = _app_and_batch(spec)
        nodes, replicas = len(set(placement.nodes)), placement.num_workers
        seconds = max(run_seconds(app, gpu, nodes, replicas, batch, self.adaptive_batch)
                      for gpu in set(placement.gpu_types))
        return self._reference(app, batch, spec.num_gpus) / seconds

    def reference_rate(self, spec: JobSpec) -> float:
        return 1.0

    def _reference(self, app: str, batch: int, num_gpus: int) -> float:
        shape = packed_placement(max(num_gpus, 1), self.gpus_per_node)
        return run_seconds(app, REFERENCE_GPU, len(shape), sum(shape), batch)


def _app_and_batch(spec: JobSpec) -> tuple[str, int]:
    if spec.model is None or spec.batch_size is None:
        raise ValueError(f"job {spec.job_id}: the goodput model needs spec.model and batch_size")
    return spec.model.casefold(), spec.batch_size
