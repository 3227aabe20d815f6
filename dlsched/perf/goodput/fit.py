"""Fitting the iteration-time model to measured step times (Pollux, OSDI'21 §3.2).

Like Pollux's ``fit_perf_params``, the loss is the squared error in *log* step time of both the
compute time (``step_time − sync_time``) and the whole step, so every configuration counts by its
relative error, plus two small regularizers: γ towards 1 (easier to fit α and β) and the
retrogressions ``β_r/α_r``, ``β_n/α_n`` towards 0 (prefer the optimistic model). The solver is
``scipy.optimize.least_squares`` (trust-region reflective, bounds α, β ≥ 1e-8 and 1 ≤ γ ≤ 10).
Where no row measures a multi-node (or multi-replica, one-node) placement, the matching sync
parameters cannot be identified and are set to the other link's values.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from dlsched.perf.goodput.iteration_time import PerfParams, grad_time, iteration_time
from dlsched.perf.goodput.measurements import StepMeasurements

_LOWER = np.array([1e-8] * 6 + [1.0])
_UPPER = np.array([np.inf] * 6 + [10.0])
_INITIAL = np.array([1e-1, 1e-2] * 3 + [1.0 + 1e-3])
_GAMMA_REG = 1e-3
_RETRO_REG = 1e-2


@dataclass(frozen=True, slots=True)
class FitError:
    """Relative error |predicted − measured| / measured of the step time over the fitted rows."""

    rows: int
    mean: float
    max: float


def _residuals(x: NDArray[np.float64], data: StepMeasurements) -> NDArray[np.float64]:
    params = PerfParams.from_array(x)
    pred_grad = grad_time(params, data.local_bsz)
    pred_step = iteration_time(params, data.num_nodes, data.num_replicas, data.local_bsz)
    scale = 1.0 / np.sqrt(len(data))  # mean squared error, as Pollux's RMSLE terms
    return np.concatenate([
        scale * (np.log(pred_grad) - np.log(data.grad_time)),
        scale * (np.log(pred_step) - np.log(data.step_time)),
        [np.sqrt(_GAMMA_REG) * (params.gamma - 1.0),
         np.sqrt(_RETRO_REG) * params.beta_r / params.alpha_r,
         np.sqrt(_RETRO_REG) * params.beta_n / params.alpha_n],
    ])


def fit_perf_params(data: StepMeasurements) -> PerfParams:
    """Least-squares fit of the seven parameters to ``data`` (see the module docstring)."""
    if len(data) < 2:
        raise ValueError("fitting the iteration-time model needs at least two measurements")
    from scipy.optimize import least_squares  # SciPy only when a model is fitted

    result = least_squares(_residuals, _INITIAL, bounds=(_LOWER, _UPPER), args=(data,),
                           x_scale="jac", max_nfev=2000)
    x = result.x.copy()
    multi = data.num_replicas > 1
    if not np.any(multi & (data.num_nodes > 1)):
        x[4:6] = x[2:4]  # no cross-node rows: assume the intra-node link
    if not np.any(multi & (data.num_nodes == 1)):
        x[2:4] = x[4:6]
    return PerfParams.from_array(x)


def fit_error(params: PerfParams, data: StepMeasurements) -> FitError:
    """Mean and max relative error of the predicted step time against ``data``."""
    predicted = iteration_time(params, data.num_nodes, data.num_replicas, data.local_bsz)
    relative = np.abs(predicted - data.step_time) / data.step_time
    return FitError(len(data), float(relative.mean()), float(relative.max()))
