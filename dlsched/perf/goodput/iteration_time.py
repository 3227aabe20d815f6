"""Pollux's iteration-time model (Qiao et al., OSDI'21 §3.2, "Modeling system throughput").

One optimizer step of data-parallel training on ``K`` replicas over ``N`` nodes, each replica
computing gradients for ``m`` examples (the *atomic* or per-GPU batch) ``s + 1`` times (``s``
gradient-accumulation steps that skip synchronization):

- compute, linear in the per-GPU batch: ``T_grad(m) = α_c + β_c·m``;
- synchronization (ring all-reduce), by placement: ``0`` for one replica,
  ``α_r + β_r·(K − 2)`` for several replicas on one node and ``α_n + β_n·(K − 2)`` across nodes
  (``β`` is the *retrogression*: the per-replica slowdown of a ring of ``K`` replicas);
- the last micro-step overlaps compute with synchronization, combined by a γ-norm
  ``(T_grad^γ + T_sync^γ)^(1/γ)`` (``γ = 1``: no overlap, ``γ → ∞``: perfect overlap);
- ``T_iter = s·T_grad + (T_grad^γ + T_sync^γ)^(1/γ)``.

Functions take numpy arrays or scalars, so the batch search evaluates many configurations at once.
"""

from __future__ import annotations

from dataclasses import astuple, dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

PARAM_NAMES = ("alpha_c", "beta_c", "alpha_r", "beta_r", "alpha_n", "beta_n", "gamma")


@dataclass(frozen=True, slots=True)
class PerfParams:
    """Fitted parameters of one application on one GPU type (seconds, seconds per example)."""

    alpha_c: float
    beta_c: float
    alpha_r: float  # sync within one node
    beta_r: float
    alpha_n: float  # sync across nodes
    beta_n: float
    gamma: float

    def as_array(self) -> NDArray[np.float64]:
        return np.asarray(astuple(self), dtype=float)

    @classmethod
    def from_array(cls, values: ArrayLike) -> PerfParams:
        return cls(*(float(v) for v in np.asarray(values, dtype=float)))


def grad_time(params: PerfParams, atomic_bsz: ArrayLike) -> NDArray[np.float64]:
    """Seconds of forward and backward pass for ``atomic_bsz`` examples per GPU (``T_grad``)."""
    return params.alpha_c + params.beta_c * np.asarray(atomic_bsz, dtype=float)


def sync_time(params: PerfParams, num_nodes: ArrayLike, num_replicas: ArrayLike) -> NDArray:
    """Seconds of gradient all-reduce (``T_sync``): zero for a single replica."""
    nodes = np.asarray(num_nodes)
    replicas = np.asarray(num_replicas)
    ring = np.maximum(replicas - 2, 0)
    within = params.alpha_r + params.beta_r * ring
    across = params.alpha_n + params.beta_n * ring
    return np.where(replicas <= 1, 0.0, np.where(nodes > 1, across, within))


def iteration_time(
    params: PerfParams,
    num_nodes: ArrayLike,
    num_replicas: ArrayLike,
    atomic_bsz: ArrayLike,
    accum_steps: ArrayLike = 0,
) -> NDArray[np.float64]:
    """Seconds per optimizer step (``T_iter``), with ``accum_steps`` extra micro-steps."""
    grad = grad_time(params, atomic_bsz)
    sync = sync_time(params, num_nodes, num_replicas)
    gamma = params.gamma
    overlapped = (grad**gamma + sync**gamma) ** (1.0 / gamma)
    return np.asarray(accum_steps) * grad + overlapped


def throughput(
    params: PerfParams,
    num_nodes: ArrayLike,
    num_replicas: ArrayLike,
    atomic_bsz: ArrayLike,
    accum_steps: ArrayLike = 0,
) -> NDArray[np.float64]:
    """Examples per second: the global batch ``K·m·(s + 1)`` over ``T_iter``."""
    batch = np.asarray(num_replicas) * np.asarray(atomic_bsz) * (np.asarray(accum_steps) + 1)
    return batch / iteration_time(params, num_nodes, num_replicas, atomic_bsz, accum_steps)
