"""The ``goodput-measured`` throughput model: Pollux's goodput as the Pollux artifact's simulator
runs its jobs, with measured step times instead of the fitted iteration-time model.

The artifact (petuum/adaptdl ``osdi21-artifact``, ``simulator.py`` ``Job.step``) advances a job
at the true step time of its placement (``applications.py`` ``get_throughput``: the measured
row of ``placements.csv`` for that many GPUs per node, else interpolated over nodes, replicas
and per-GPU batch) and the statistical efficiency of the batch it runs (gradient statistics
interpolated between the measured batch files); the fitted model is only what its scheduler
believes. dlsched's ``goodput`` model runs jobs at the fitted step times (-30% to +40% off the
measured ones per placement shape: two nodes of four GPUs ~0.7x, four single-GPU nodes
~1.15-1.4x) and at the initial batch's gradient statistics.

Here a placement's goodput at each progress knot is the best over the ``goodput`` model's batch
configurations and the submitted batch, each timed by the measured step and all-reduce seconds
of its per-GPU micro-batch on the placement's GPUs-per-node shape (``pollux_progress.step_sync``,
one all-reduce per step), with the efficiency of the batch run. The reference run (the work
unit) is the submitted batch on the requested GPUs packed, split as the artifact does: within
4% of the artifact's time to its progress target (``--work-definition progress``) but yolov3
(+24%: statistics interpolated in progress here, per epoch there). As in the artifact, ncf
keeps its submitted batch. The batch is chosen knowing the true times (the artifact's job picks
it with the model it fitted to its own steps): an upper bound on the artifact's goodput
(``goodput-measured-fit``, ``fitted_choice.py``, chooses by a fitted model).
"""

from __future__ import annotations

import functools
from collections import defaultdict
from dataclasses import replace

import numpy as np

from dlsched.perf.goodput.efficiency import GradientStats, efficiency
from dlsched.perf.goodput.goodput import GoodputFunction
from dlsched.perf.goodput.run_table import Candidates, RunTable, knots_of
from dlsched.perf.goodput.throughput_model import GoodputThroughputs, goodput_function
from dlsched.perf.model import Placement
from dlsched.perf.pollux_progress import step_sync_many
from dlsched.perf.pollux_table import packed_placement
from dlsched.workload.readers.pollux_work import micro_batch


@functools.lru_cache(maxsize=65536)
def measured_run(app: str, shape: tuple[int, ...], batch: int, adaptive: bool) -> RunTable:
    """The run of ``app`` on ``shape`` (sorted GPUs per node) at the submitted ``batch`` or,
    ``adaptive``, the best configuration at each knot, at measured step times."""
    fn = artifact_function(app)
    replicas = sum(shape)
    knots = knots_of(fn)
    atomic, accum = micro_batch(app, batch, replicas)
    fixed_batch = replicas * atomic * (accum + 1)
    good = measured_rates(app, shape, np.array([atomic]), np.array([accum]))[0] * \
        batch_efficiency(fn.stats, knots, np.array([fixed_batch]))[:, 0]
    batches = np.full(len(knots), float(fixed_batch))
    if adaptive:
        table = _candidates(app, replicas)
        if len(table.atomic):
            rates = measured_rates(app, shape, table.atomic, table.accum)
            all_good = table.efficiency * rates[None, :]
            best = all_good.argmax(axis=1)
            best_good = all_good[np.arange(len(knots)), best]
            best_batch = (replicas * table.atomic * (table.accum + 1))[best].astype(float)
            batches = np.where(best_good > good, best_batch, batches)
            good = np.maximum(good, best_good)
    return RunTable.of(knots, good, batches)


@functools.cache
def artifact_function(app: str) -> GoodputFunction:
    """The bundled goodput function with the artifact's efficiency: the gradient statistics of
    the batch run (interpolated between the measured batch files), not the initial batch's."""
    fn = goodput_function(app)
    return GoodputFunction(fn.params, replace(fn.stats, interpolate_batch=True), fn.limits)


@functools.cache
def _candidates(app: str, replicas: int) -> Candidates:
    fn = artifact_function(app)
    m, s = fn.candidates(replicas)
    knots = knots_of(fn)
    return Candidates(m, s, batch_efficiency(fn.stats, knots, replicas * m * (s + 1)))


def batch_efficiency(stats: GradientStats, progress: np.ndarray,
                     batches: np.ndarray) -> np.ndarray:
    """``E`` at each progress (rows) and global batch (columns) with the statistics of the
    batch run (``GradientStats.efficiency_along`` with ``interpolate_batch``, vectorised)."""
    sqr_files = np.array([np.interp(progress, stats.progress, row) for row in stats.sqr])
    var_files = np.array([np.interp(progress, stats.progress, row) for row in stats.var])
    sizes = np.asarray(stats.batch_sizes, dtype=float)
    b = np.clip(np.asarray(batches, dtype=float), sizes[0], sizes[-1])
    upper = np.clip(np.searchsorted(sizes, b, side="right"), 1, len(sizes) - 1)
    lower = upper - 1
    span = sizes[upper] - sizes[lower]
    w = np.where(span > 0, (b - sizes[lower]) / np.where(span > 0, span, 1.0), 0.0)
    sqr = sqr_files[lower].T * (1 - w) + sqr_files[upper].T * w  # progress x batches
    var = var_files[lower].T * (1 - w) + var_files[upper].T * w
    with np.errstate(divide="ignore", invalid="ignore"):
        phi = np.where(sqr > 0, stats.init_batch * var / np.where(sqr > 0, sqr, 1.0), np.inf)
    return efficiency(phi, stats.init_batch, np.asarray(batches, dtype=float)[None, :])


def measured_rates(app: str, shape: tuple[int, ...], atomic: np.ndarray,
           accum: np.ndarray) -> np.ndarray:
    """Examples per second of each ``(atomic, accum)`` configuration on ``shape``."""
    replicas = sum(shape)
    step, sync = step_sync_many(app, shape, np.asarray(atomic, dtype=float))
    total = step + (step - sync) * accum
    with np.errstate(divide="ignore", invalid="ignore"):
        rate = replicas * atomic * (accum + 1) / total
    return np.where(np.isfinite(rate) & (rate > 0), rate, -np.inf)


def shape_of(placement: Placement) -> tuple[int, ...]:
    """The placement's GPUs per node, sorted."""
    per_node: dict[int, int] = defaultdict(int)
    for node in placement.nodes:
        per_node[node] += 1
    return tuple(sorted(per_node.values()))


FIXED_BATCH = frozenset({"ncf"})  # the artifact runs ncf at 32,768 under Pollux too


class MeasuredGoodputThroughputs(GoodputThroughputs):
    """The goodput model at the artifact's measured step times (module docstring)."""

    name = "goodput-measured"

    def run_on(self, app: str, batch: int, placement: Placement) -> RunTable:
        adaptive = self.adaptive_batch and app not in FIXED_BATCH
        return measured_run(app, shape_of(placement), batch, adaptive)

    def reference_run(self, app: str, batch: int, num_gpus: int) -> RunTable:
        shape = packed_placement(max(num_gpus, 1), self.gpus_per_node)
        return measured_run(app, tuple(sorted(shape)), batch, False)
