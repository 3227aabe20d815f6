"""Sia's configurations and their values (Jayaram Subramanya et al., SOSP'23 §4.1–4.2).

A *configuration* is (GPU type, worker count, nodes): on a type whose nodes hold ``S`` GPUs,
``1, 2, 4, … ≤ S`` GPUs on one node, or ``n·S`` GPUs on ``n ≥ 2`` whole nodes (§4.1: a small
set that packs without fragmentation). A rigid job may only run at its requested size, so it
gets that one configuration per type (on one node when it fits there).

Values (§4.2): the job's best goodput in each configuration (batch co-adapted, from the goodput
model of that GPU type) is divided by its smallest over the job's configurations (Sia's
normalization: the speedup over the job's minimal configuration); configurations other than a
running job's current one are discounted by the restart factor ``(T − R·δ) / (T + δ)`` (the one
Sia inherits from Pollux); the ILP maximizes ``Σ sign(p)·S^p`` over chosen configurations, with
a job left out counted at ``zero_speedup`` (Sia's ``ZERO_ALLOC_GAIN``, 0.01), so a column's
value is its gain over nothing.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray


@dataclass(frozen=True, slots=True)
class TypeConfigs:
    """One GPU type's configurations: worker counts and whether they span whole nodes."""

    gpu_type: str
    type_index: int
    node_size: int
    counts: NDArray[np.int64]
    multi: NDArray[np.bool_]


def type_configs(gpu_type: str, type_index: int, node_size: int, num_nodes: int,
                 cap: int) -> TypeConfigs:
    """Powers of two up to a node, then whole nodes, up to ``cap`` workers (§4.1)."""
    single = [k for k in (2 ** i for i in range(node_size.bit_length())) if k <= node_size]
    whole = [n * node_size for n in range(2, num_nodes + 1) if n * node_size <= cap]
    counts = np.array([k for k in single if k <= cap] + whole, dtype=np.int64)
    multi = counts > node_size
    return TypeConfigs(gpu_type, type_index, node_size, counts, multi)


@dataclass(frozen=True, slots=True)
class Columns:
    """The ILP's columns: one per useful (job, type, count) with its value."""

    job: NDArray[np.int64]
    type_index: NDArray[np.int64]
    count: NDArray[np.int64]
    multi: NDArray[np.bool_]
    value: NDArray[np.float64]


def gain(speedup: NDArray[np.float64], p: float, zero_speedup: float) -> NDArray[np.float64]:
    """``sign(p)·S^p − sign(p)·zero^p`` (``log S − log zero`` at ``p = 0``): the objective's
    gain from running at speedup ``S`` instead of not at all."""
    with np.errstate(divide="ignore", invalid="ignore"):
        if p == 0:
            return np.log(speedup) - np.log(zero_speedup)
        sign = 1.0 if p > 0 else -1.0
        return sign * (np.power(speedup, p) - zero_speedup ** p)


def prune_dominated(value: NDArray[np.float64]) -> NDArray[np.bool_]:
    """Per row of a (jobs × counts) block sorted by count: keep a count only if it is worth
    more than every smaller one (a larger count worth no more is never worth its GPUs)."""
    before = np.maximum.accumulate(np.where(np.isfinite(value), value, -np.inf), axis=1)
    previous = np.concatenate([np.full((value.shape[0], 1), -np.inf), before[:, :-1]], axis=1)
    return np.isfinite(value) & (value > 0) & (value > previous)
