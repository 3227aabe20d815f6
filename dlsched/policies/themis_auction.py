"""Themis' arbiter arithmetic (Mahajan et al., NSDI'20), free of the scheduler core.

- ``offered_count``: the fairness knob (§4, "fairness knob f"): each round only the
  ``1 - f`` fraction of jobs with the worst ρ are offered resources (at least one job).
- ``Bid`` and ``auction``: the partial-allocation auction among offered jobs (§4.1), simplified
  to gang jobs of fixed size: a job bids for its whole gang on one GPU type; its valuation of
  winning is ``log(ρ_lose / ρ_win)`` (the arbiter maximizes the product of ``1/ρ``, i.e. the
  sum of logs: Nash social welfare). The exact maximization over bundles is a knapsack; it is
  replaced by the greedy rule "grant the bid with the largest gain per GPU that still fits",
  one bid per job. The partial-allocation step that withholds a fraction of each winner's
  bundle (it exists to make bidding truthful, §4.1) is left out: simulated agents report their
  true ρ, so winners get their whole bundle; what is left goes to the leftover allocation.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass


def offered_count(active: int, fairness_knob: float) -> int:
    """Jobs offered resources this round: ``ceil((1 - f) * active)``, at least 1 (Themis §4:
    f = 0 offers to every job, f close to 1 only to the worst-off one)."""
    if not 0.0 <= fairness_knob < 1.0:
        raise ValueError(f"fairness_knob must be in [0, 1), got {fairness_knob}")
    if active <= 0:
        return 0
    return max(1, math.ceil((1.0 - fairness_knob) * active - 1e-9))


def rho(elapsed: float, remaining_seconds: float, isolated: float, contention: float) -> float:
    """Themis §3: ρ = T_shared / T_independent, with T_shared = time so far + estimated time to
    finish and T_independent = isolated time x average contention N (a 1/N share)."""
    return (elapsed + remaining_seconds) / (isolated * max(contention, 1.0))


@dataclass(frozen=True, slots=True)
class Bid:
    """Job ``job_id`` asks for ``gpus`` GPUs of type ``gpu_type``; ``gain`` is
    ``log(ρ if it loses / ρ if it wins)``, its valuation in the auction."""

    job_id: str
    gpu_type: int
    gpus: int
    gain: float


def auction(bids: Sequence[Bid], capacity: Mapping[int, int]) -> dict[str, int]:
    """Winners and their GPU type, in grant order. The modified greedy for knapsacks: grant
    bids by the largest gain per GPU (ties: larger gain, then job id) while they fit, one bid
    per job; do the same again after first granting the single bid of largest gain, and keep
    the set with the larger total gain (at least half the optimum's). Bids with no positive
    gain never win (Themis §4.1, simplified as the module docstring says)."""
    ordered = sorted((b for b in bids if b.gain > 0),
                     key=lambda b: (-b.gain / b.gpus, -b.gain, b.job_id, b.gpu_type))
    by_density = _grant(ordered, capacity)
    fitting = [b for b in ordered if capacity.get(b.gpu_type, 0) >= b.gpus]
    if not fitting:
        return {}
    largest = max(fitting, key=lambda b: (b.gain, -b.gpus))
    by_largest = _grant([largest, *ordered], capacity)
    chosen = by_largest if _total(by_largest) > _total(by_density) else by_density
    return {b.job_id: b.gpu_type for b in chosen}


def _grant(ordered: Sequence[Bid], capacity: Mapping[int, int]) -> list[Bid]:
    left = dict(capacity)
    won: dict[str, Bid] = {}
    for bid in ordered:
        if bid.job_id in won or left.get(bid.gpu_type, 0) < bid.gpus:
            continue
        won[bid.job_id] = bid
        left[bid.gpu_type] -= bid.gpus
    return list(won.values())


def _total(bids: Sequence[Bid]) -> float:
    return sum(b.gain for b in bids)
