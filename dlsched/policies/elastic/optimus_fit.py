"""Optimus's speed model and its marginal-gain greedy (Peng et al., EuroSys'18 §4.2, §5.1).

Optimus fits, online from observed step times, a job's training speed as a function of its
resources. For synchronous data-parallel training its model (§4.2, Eq. 4 without parameter
servers, whose traffic an all-reduce job does not have) is

    f(w) = (θ0 / w + θ1 + θ2 · w)^-1,     θ ≥ 0,

compute shared by ``w`` workers plus a constant and a communication term that grows with
``w``. dlsched fits ``θ`` by non-negative least squares on relative errors to the throughput
model's rates at the sizes ``1, 2, 4, …`` up to the job's largest size (``fit_speed``): the
samples stand in for the speeds Optimus observes while a job runs.
"""

from __future__ import annotations

import heapq

import numpy as np

from dlsched.policies.elastic.speed import SpeedCurves
from dlsched.scheduling.state import CycleState
from dlsched.workload.job import Job


def sample_sizes(lo: int, hi: int) -> list[int]:
    """``lo``, ``hi`` and the powers of two between them."""
    sizes = {lo, hi}
    power = 1
    while power < hi:
        if power > lo:
            sizes.add(power)
        power *= 2
    return sorted(s for s in sizes if s >= 1)


def fit_speed(sizes: np.ndarray, rates: np.ndarray) -> np.ndarray:
    """``θ = (θ0, θ1, θ2)`` of ``1/f(w) = θ0/w + θ1 + θ2·w`` fitted to positive ``rates``
    (relative error, so slow and fast sizes weigh alike)."""
    ok = rates > 0
    w, inverse = sizes[ok].astype(float), 1.0 / rates[ok]
    design = np.column_stack([1.0 / w, np.ones_like(w), w]) / inverse[:, None]
    from scipy.optimize import nnls  # SciPy only when a curve is fitted

    theta, _ = nnls(design, np.ones_like(w))
    return theta


def fitted_rates(theta: np.ndarray, hi: int) -> np.ndarray:
    """``f(w)`` for ``w = 0..hi`` (``f(0) = 0``)."""
    w = np.arange(1, hi + 1, dtype=float)
    inverse = theta[0] / w + theta[1] + theta[2] * w
    with np.errstate(divide="ignore"):
        rates = np.where(inverse > 0, 1.0 / np.maximum(inverse, 1e-300), 0.0)
    return np.concatenate([[0.0], rates])


def marginal_greedy(times: np.ndarray, base: np.ndarray, free: int) -> np.ndarray:
    """Optimus's allocation (§5.1): starting from ``base`` workers per job, give one more
    worker at a time to the job whose remaining time falls most, until ``free`` workers are
    used or no job gains. ``times[j, n]`` is job j's remaining time on n workers (``inf``
    where it cannot run, e.g. above its largest size).

    With the fitted model remaining time is convex in ``w`` (θ ≥ 0), so each job's gains fall
    as it grows and the step-by-step greedy equals taking the ``free`` largest positive gains
    at once; ties go to the earlier job (row), then the smaller size."""
    jobs, width = times.shape
    cols = np.arange(width - 1)
    with np.errstate(invalid="ignore"):
        gain = times[:, :-1] - times[:, 1:]
    usable = (cols[None, :] >= base[:, None]) & np.isfinite(gain) & (gain > 0) & (base > 0)[:, None]
    rows, steps = np.nonzero(usable)
    values = gain[rows, steps]
    order = np.lexsort((steps, rows, -values))[:max(free, 0)]
    return base + np.bincount(rows[order], minlength=jobs)


def stepwise_greedy(times: np.ndarray, base: np.ndarray, free: int) -> np.ndarray:
    """Optimus's allocation taken literally, one worker at a time, for speed curves that need
    not be convex (exact rates): starting from ``base``, the next worker goes to the job whose
    remaining time falls most from its current size; a job whose next worker gains nothing
    stops growing (as the Pollux artifact's ``simulator/optimus.py`` sets its gain to 0), even
    where a larger size would be faster again. Ties go to the earlier job (row)."""
    counts = np.array(base, dtype=np.int64)
    width = times.shape[1]
    heap: list[tuple[float, int]] = []

    def push(row: int) -> None:
        n = int(counts[row])
        if n <= 0 or n + 1 >= width:
            return
        with np.errstate(invalid="ignore"):
            gain = float(times[row, n] - times[row, n + 1])
        if np.isfinite(gain) and gain > 0:
            heapq.heappush(heap, (-gain, row))

    for row in range(len(counts)):
        push(row)
    while free > 0 and heap:
        _, row = heapq.heappop(heap)
        counts[row] += 1
        free -= 1
        push(row)
    return counts


def fitted_curve(curves: SpeedCurves, state: CycleState, job: Job, lo: int,
                 hi: int) -> np.ndarray:
    """``f(0..hi)`` fitted to the model's rates at ``sample_sizes(lo, hi)``; 0 above the
    largest sampled size the model can run and everywhere if it can run none. Fitted once per
    job and bounds (``curves.fits``); the array returned is read-only."""
    key = (job.job_id, lo, hi)
    curve = curves.fits.get(key)
    if curve is None:
        curve = curves.fits[key] = _fit_curve(curves, state, job, lo, hi)
        curve.flags.writeable = False
    return curve


def _fit_curve(curves: SpeedCurves, state: CycleState, job: Job, lo: int,
               hi: int) -> np.ndarray:
    sizes = np.array(sample_sizes(lo, hi))
    rates = curves.rates(state, job, sizes)
    if not (rates > 0).any():
        return np.zeros(hi + 1)
    curve = fitted_rates(fit_speed(sizes, rates), hi)
    curve[int(sizes[rates > 0].max()) + 1:] = 0.0
    return curve
