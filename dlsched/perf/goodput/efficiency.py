"""Statistical efficiency from the gradient noise scale (Pollux, OSDI'21 §3.1).

Training at a global batch ``M`` larger than the initial ``M0`` makes less progress per example:
Pollux measures it with the gradient noise scale ``φ`` (McCandlish et al., 2018) and defines

    E(M) = (φ + M0) / (φ + M),

1 at ``M0`` and falling towards ``(φ + M0)/M`` as ``M`` grows. With Pollux's gradient statistics
(``grad_sqr`` = |g|², ``grad_var`` = tr Σ at batch ``M0``), ``φ = M0 · grad_var / grad_sqr``;
this is AdaptDL's ``gain / scale``. ``φ`` grows as training goes on, so large batches pay off later.

The statistics come from Pollux's ``validation-<M>.csv`` files: one row per epoch of progress,
measured while training at batch ``M``. By default ``φ`` comes from the file at ``M0`` only, so
it depends on training progress alone and ``E`` falls monotonically in ``M``. With
``interpolate_batch``, as in Pollux's simulator (``applications.py``), the statistics for a batch
between two measured ones interpolate linearly in the batch (clamped to the measured range);
the files disagree (bert's large-batch runs measure a larger ``φ``), so ``E`` may then rise
slightly with ``M``. dlsched also interpolates them linearly in training progress between the
epoch ends where rows were recorded (Pollux holds them constant over an epoch), clamped at both
ends, so ``φ`` changes smoothly as training goes on.
Progress is in *examples at* ``M0``: Pollux's ``progress`` column times ``M0``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray


def efficiency(noise_scale: ArrayLike, init_batch: float, batch: ArrayLike) -> NDArray[np.float64]:
    """``E(M) = (φ + M0)/(φ + M)``; 1 where ``φ`` is infinite (no measurable gradient signal)."""
    phi = np.asarray(noise_scale, dtype=float)
    batch = np.asarray(batch, dtype=float)
    finite = np.isfinite(phi)
    safe_phi = np.where(finite, phi, 0.0)
    return np.where(finite, (safe_phi + init_batch) / (safe_phi + batch), 1.0)


@dataclass(frozen=True)
class GradientStats:
    """One application's measured ``grad_sqr``/``grad_var`` by (batch file, epoch).

    ``progress[e]`` is the progress (examples at ``init_batch``) at the end of epoch ``e``: the
    least over the batch files, as Pollux's ``get_progress``. ``sqr[i][e]``, ``var[i][e]`` are
    the statistics of ``batch_sizes[i]`` at that epoch.
    """

    init_batch: int
    batch_sizes: tuple[int, ...]
    progress: tuple[float, ...]
    sqr: tuple[tuple[float, ...], ...]
    var: tuple[tuple[float, ...], ...]
    interpolate_batch: bool = False

    def stats_batch(self, batch: ArrayLike) -> NDArray[np.float64]:
        """The batch whose statistics apply when training at ``batch``: ``batch`` itself with
        ``interpolate_batch`` (Pollux's simulator), else ``init_batch`` (the default)."""
        batches = np.asarray(batch, dtype=float)
        return batches if self.interpolate_batch else np.full_like(batches, self.init_batch)

    @property
    def total_progress(self) -> float:
        """Examples (at ``init_batch``) to finish training: the end of the last epoch."""
        return self.progress[-1]

    def noise_scales(self, progress: float, batch: ArrayLike) -> NDArray[np.float64]:
        """``φ = M0 · var / sqr`` after ``progress`` examples at each global batch in ``batch``.

        ``grad_sqr`` and ``grad_var`` are each interpolated linearly in progress (per batch file),
        then linearly in the batch, both clamped to the measured range; ``φ`` is infinite where
        the interpolated ``grad_sqr`` is 0."""
        sqr_by_file = [np.interp(progress, self.progress, row) for row in self.sqr]
        var_by_file = [np.interp(progress, self.progress, row) for row in self.var]
        batches = self.stats_batch(batch)
        sqr = np.interp(batches, self.batch_sizes, sqr_by_file)
        var = np.interp(batches, self.batch_sizes, var_by_file)
        with np.errstate(divide="ignore"):
            return np.where(sqr > 0, self.init_batch * var / np.where(sqr > 0, sqr, 1.0), np.inf)

    def efficiency_along(self, progress: ArrayLike, batch: ArrayLike) -> NDArray[np.float64]:
        """``E`` at every (progress, batch) pair: rows follow ``progress``, columns ``batch``.
        Without ``interpolate_batch`` ``φ`` depends on progress only: one vector, no loop."""
        points = np.atleast_1d(np.asarray(progress, dtype=float))
        batches = np.atleast_1d(np.asarray(batch, dtype=float))
        if self.interpolate_batch:
            return np.stack([self.efficiency(float(p), batches) for p in points])
        sqr = np.interp(points, self.progress, self.sqr[0])
        var = np.interp(points, self.progress, self.var[0])
        with np.errstate(divide="ignore"):
            phi = np.where(sqr > 0, self.init_batch * var / np.where(sqr > 0, sqr, 1.0), np.inf)
        return efficiency(phi[:, None], self.init_batch, batches[None, :])

    def efficiency(self, progress: float, batch: ArrayLike) -> NDArray[np.float64]:
        """``E(M)`` after ``progress`` examples for each global batch ``M`` in ``batch``."""
        return efficiency(self.noise_scales(progress, batch), self.init_batch, batch)
