"""Synchronous vs stale-synchronous vs asynchronous data parallelism: hardware throughput
against statistical efficiency.

- Synchronous (BSP): every step waits for the slowest of ``n`` workers. With per-step compute
  times of mean ``mu`` and standard deviation ``sigma`` (independent, near-Gaussian), the
  expected maximum is about ``mu + sigma sqrt(2 ln n)``; no gradient is stale.
- Stale-synchronous parallel with bound ``s`` (Ho et al., "More Effective Distributed ML via
  a Stale Synchronous Parallel Parameter Server", NIPS'13): a worker waits only when it is
  ``s`` steps ahead of the slowest, so the straggler's delay is paid once per ``s + 1`` steps;
  a gradient is on average ``s / 2`` steps stale.
- Asynchronous (Dean et al., "Large Scale Distributed Deep Networks", NIPS'12): no worker ever
  waits; with ``n`` workers each update is on average ``n - 1`` updates stale.

Statistical efficiency: SGD with delayed gradients needs more iterations, about linearly in
the staleness for moderate delays (Lian et al., NeurIPS'15, Thm. 1; measured by Dai et al.,
ICLR'19, Fig. 1): progress per update ``1 / (1 + c tau)`` for mean staleness ``tau``; ``c``
depends on the model and learning rate and must be measured (``staleness_cost``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class SyncOutcome:
    mode: str
    steps_per_second: float  # updates applied per second, all workers together
    mean_staleness: float
    statistical_efficiency: float

    @property
    def goodput(self) -> float:
        """Useful updates per second (sync-equivalent)."""
        return self.steps_per_second * self.statistical_efficiency


def compare_sync_modes(workers: int, compute_mean: float, compute_std: float,
                       comm_seconds: float, staleness_bound: int,
                       staleness_cost: float) -> list[SyncOutcome]:
    """Sync, SSP(``staleness_bound``) and async for ``workers`` data-parallel workers. In sync
    and SSP one step is one update of the whole batch; in async every worker's gradient is an
    update of its ``1/n`` share, so its rate is counted in whole-batch updates."""
    if workers < 1 or compute_mean <= 0 or compute_std < 0 or staleness_bound < 0:
        raise ValueError("workers >= 1, compute_mean > 0, compute_std >= 0, bound >= 0")
    straggle = compute_std * math.sqrt(2 * math.log(workers)) if workers > 1 else 0.0
    sync_step = compute_mean + straggle + comm_seconds
    ssp_step = compute_mean + straggle / (staleness_bound + 1) + comm_seconds
    async_step = compute_mean + comm_seconds

    def outcome(mode: str, step: float, tau: float) -> SyncOutcome:
        return SyncOutcome(mode, 1.0 / step, tau, 1.0 / (1.0 + staleness_cost * tau))

    return [outcome("sync", sync_step, 0.0),
            outcome("stale-sync", ssp_step, staleness_bound / 2),
            outcome("async", async_step, float(workers - 1))]
