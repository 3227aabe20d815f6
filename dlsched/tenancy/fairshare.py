"""Fair share across tenant queues.

- ``share_value``: Kueue's fair sharing (concepts/fair_sharing, KEP-1714): per resource, what a
  queue borrows above its nominal quota relative to what its cohort can lend of that resource;
  the dominant (largest) such ratio, times 1000, divided by the queue's weight. The queue with
  the lowest value admits first; a weight of 0 with any borrowing is infinitely unfair.
- ``dominant_share``: dominant resource fairness (Ghodsi et al., NSDI'11 §4): a queue's share is
  its largest share of any cluster resource, divided by its weight.
- ``DecayedUsage``: usage that halves every ``half_life`` seconds (Slurm's multifactor priority,
  PriorityDecayHalfLife, slurm.schedmd.com/priority_multifactor.html; Kueue's admission fair
  sharing, KEP-4136, usageHalfLifeTime), so that fair share remembers recent history.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from dlsched.tenancy.config import ShareStrategy
from dlsched.tenancy.quota import EPS, Usage

INFINITE = math.inf


def share_value(usage: Usage, cq: str, extra: Mapping[tuple[str, str], float] | None = None
                ) -> float:
    """Kueue's weighted dominant resource share of what ``cq`` borrows, with ``extra`` usage
    (a job about to be admitted, or minus a victim) added per (flavor, resource)."""
    tree, weight = usage.tree, tree_weight(usage, cq)
    borrowed: dict[str, float] = {}
    lendable: dict[str, float] = {}
    root = _root(usage, cq)
    for fr in tree.resources:
        used = usage.usage(cq, fr) + (extra or {}).get(fr, 0.0)
        borrowed[fr[1]] = borrowed.get(fr[1], 0.0) + max(0.0, used - tree.nominal(cq, fr))
        lendable[fr[1]] = lendable.get(fr[1], 0.0) + tree.subtree[root].get(fr, 0.0)
    ratio = max((1000.0 * b / lendable[r] for r, b in borrowed.items()
                 if b > EPS and lendable[r] > EPS), default=0.0)
    if ratio > 0 and weight <= 0:
        return INFINITE
    return ratio / weight if weight > 0 else 0.0


def tree_weight(usage: Usage, cq: str) -> float:
    return usage.tree.config.cluster_queues[cq].weight


def _root(usage: Usage, key: str) -> str:
    nodes = usage.tree.nodes
    while nodes[key].parent is not None:
        key = nodes[key].parent  # type: ignore[assignment]
    return key


def dominant_share(used: Mapping[str, float], totals: Mapping[str, float],
                   weight: float = 1.0) -> float:
    """DRF: the largest fraction of any resource's total, divided by the weight."""
    share = max((used.get(r, 0.0) / t for r, t in totals.items() if t > 0), default=0.0)
    if weight <= 0:
        return INFINITE if share > 0 else 0.0
    return share / weight


def strategy_allows(strategy: ShareStrategy, preemptor_after: float, target_before: float,
                    target_after: float) -> bool:
    """Kueue's fair preemption strategies: LessThanOrEqualToFinalShare evicts a job of the
    target queue if the preemptor's share with its job is at most the target's share without
    the victim; LessThanInitialShare if it is strictly below the target's share before."""
    if strategy is ShareStrategy.LESS_THAN_OR_EQUAL_TO_FINAL_SHARE:
        return preemptor_after <= target_after + EPS
    return preemptor_after < target_before - EPS


class DecayedUsage:
    """Per-queue usage (e.g. GPU-seconds) decayed with a half-life: after ``dt`` seconds the
    old value is multiplied by 2^(-dt / half_life) and the new usage added (Slurm)."""

    def __init__(self, half_life: float) -> None:
        if half_life <= 0:
            raise ValueError(f"half_life must be > 0, got {half_life}")
        self.half_life = half_life
        self.values: dict[str, float] = {}
        self.time = 0.0

    def advance(self, now: float, rates: Mapping[str, float]) -> None:
        """Move to ``now``; ``rates`` is each queue's usage per second since the last call.
        The usage accrued over the interval decays as it accrues (exact integral)."""
        dt = now - self.time
        if dt <= 0:
            return
        factor = 2.0 ** (-dt / self.half_life)
        accrued = (1.0 - factor) * self.half_life / math.log(2.0)
        for queue in set(self.values) | set(rates):
            self.values[queue] = self.values.get(queue, 0.0) * factor + rates.get(
                queue, 0.0) * accrued
        self.time = now

    def value(self, queue: str) -> float:
        return self.values.get(queue, 0.0)
