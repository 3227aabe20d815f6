"""The ``goodput-measured-fit`` throughput model: ``goodput-measured`` with each job choosing its
batch as the Pollux artifact's jobs do, by a fitted model rather than the true step times.

Pollux (OSDI'21 §3.3) picks the batch of highest *predicted* goodput; the artifact's job
(petuum/adaptdl ``osdi21-artifact``, ``simulator.py`` ``Job.update_local_bsz``) predicts it
with the iteration-time model it fitted to its own steps (``goodput.py`` ``optimize``) and then
runs at the true step time of what it chose. Its candidates are 50 global batches spaced
geometrically from ``max(M0, K·min_local_bsz)`` to the largest batch, each split into the
fewest micro-batches within ``max_local_bsz`` (at least two on one GPU above ``M0``).

``goodput-measured`` instead takes the best over every ``(m, s)`` at the true times, an upper
bound. Here the choice at each progress knot is the candidate above that the bundled fit
(``bundle.py``: dlsched's fit to the application's measured placements, standing in for the
job's own fit) rates highest; it runs at the measured step time. The job's own fit can differ
from the bundled one (fewer observations, priors for unseen terms); that part is not modelled.
"""

from __future__ import annotations

import functools

import numpy as np
from numpy.typing import NDArray

from dlsched.perf.goodput.goodput import BatchLimits
from dlsched.perf.goodput.iteration_time import throughput
from dlsched.perf.goodput.measured import (
    FIXED_BATCH,
    MeasuredGoodputThroughputs,
    artifact_function,
    batch_efficiency,
    measured_rates,
    measured_run,
    shape_of,
)
from dlsched.perf.goodput.run_table import RunTable, knots_of
from dlsched.perf.model import Placement

CANDIDATE_BATCHES = 50  # the artifact's ``np.geomspace`` default
_EPS = 1e-8


def artifact_candidates(limits: BatchLimits,
                        replicas: int) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """``(m, s)`` the artifact's ``optimize`` evaluates on ``replicas`` GPUs (module docstring);
    empty when ``K·min_local_bsz`` exceeds the largest batch."""
    lowest = max(limits.init_batch, limits.min_local_bsz * replicas)
    if lowest > limits.max_batch:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    local = np.geomspace(lowest, limits.max_batch, CANDIDATE_BATCHES) / replicas
    accum = np.ceil(local / limits.max_local_bsz - _EPS) - 1
    if replicas == 1:  # one GPU above M0 accumulates: its gradient statistics need two
        accum = np.where(local > limits.init_batch + _EPS, np.maximum(accum, 1), accum)
    accum = accum.astype(np.int64)
    atomic = np.ceil(local / (accum + 1) - _EPS).astype(np.int64)
    keep = (atomic >= limits.min_local_bsz) & (atomic <= limits.max_local_bsz)
    return atomic[keep], accum[keep]


@functools.lru_cache(maxsize=65536)
def fitted_choice_run(app: str, shape: tuple[int, ...], batch: int) -> RunTable:
    """The run of ``app`` on ``shape`` (sorted GPUs per node) choosing, at each knot, the
    artifact's candidate the bundled fit rates highest, at measured step times; the submitted
    ``batch`` when no candidate fits."""
    fn = artifact_function(app)
    replicas, knots = sum(shape), knots_of(fn)
    atomic, accum = artifact_candidates(fn.limits, replicas)
    if len(atomic) == 0:
        return measured_run(app, shape, batch, False)
    eff = batch_efficiency(fn.stats, knots, replicas * atomic * (accum + 1))
    predicted = eff * throughput(fn.params, len(shape), replicas, atomic, accum)[None, :]
    chosen = predicted.argmax(axis=1)
    rows = np.arange(len(knots))
    good = (eff * measured_rates(app, shape, atomic, accum)[None, :])[rows, chosen]
    batches = (replicas * atomic * (accum + 1))[chosen].astype(float)
    return RunTable.of(knots, good, batches)


class FittedChoiceGoodputThroughputs(MeasuredGoodputThroughputs):
    """``goodput-measured`` with the batch chosen by the fitted model (module docstring)."""

    name = "goodput-measured-fit"

    def run_on(self, app: str, batch: int, placement: Placement) -> RunTable:
        if not self.adaptive_batch or app in FIXED_BATCH:
            return super().run_on(app, batch, placement)
        return fitted_choice_run(app, shape_of(placement), batch)
