"""Fair share across tenant queues.

- ``share_value``: Kueue's fair sharing (concepts/fair_sharing, KEP-1714): per resource, what a
  queue borrows above its nominal quota relative to what its cohort can lend of that resource;
  the dominant (largest) such ratio, times 1000, divided by the queue's weight. The queue with
  the lowest value admits first; a weight of 0 with any borrowing is infinitely unfair.
- ``node_share``: the same for any node of a hierarchical cohort tree (Kueue KEP-79 with fair
  sharing, ``pkg/cache/fair_sharing.go``): what the node's subtree uses above its subtree quota,
  relative to its parent's subtree quota, divided by the node's weight (a cohort's
  ``weight``). ``admission_rank`` and ``almost_lca`` compare two queues at the level below
  their lowest common ancestor (Kueue's fair-sharing tournament).
- ``dominant_share``: dominant resource fairness (Ghodsi et al., NSDI'11 §4): a queue's share is
  its largest share of any cluster resource, divided by its weight.
- ``DecayedUsage``: usage that halves every ``half_life`` seconds (Slurm's multifactor priority,
  PriorityDecayHalfLife, slurm.schedmd.com/priority_multifactor.html; Kueue's admission fair
  sharing, KEP-4136, usageHalfLifeTime), so that fair share remembers recent history.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping

from dlsched.tenancy.config import FlavorResource, ShareStrategy
from dlsched.tenancy.quota import EPS, Usage

INFINITE = math.inf
Extra = Mapping[FlavorResource, float]


def share_value(usage: Usage, cq: str, extra: Extra | None = None) -> float:
    """Kueue's weighted dominant resource share of what ``cq`` borrows, with ``extra`` usage
    (a job about to be admitted, or minus a victim) added per (flavor, resource)."""
    return node_share(usage, cq, extra)


def node_share(usage: Usage, key: str, extra: Extra | None = None, at: str | None = None
               ) -> float:
    """The weighted share of node ``key`` (a cluster queue, or ``cohort:NAME``), with
    ``extra`` usage added to cluster queue ``at`` (default: ``key`` itself) and carried up the
    tree as Kueue carries usage (only what exceeds a node's guaranteed quota reaches its
    parent). Borrowed = usage above the node's subtree quota (its nominal, for a queue);
    lendable = its parent's subtree quota (its own, for a queue in no cohort), summed over
    flavors per resource (Kueue ``dominantResourceShare``, ``calculateLendable``)."""
    tree = usage.tree
    after = _carried(usage, at or key, extra) if extra else {}
    mine = after.get(key, {})
    parent = tree.nodes[key].parent
    pool = tree.subtree[parent if parent is not None else key]
    borrowed: dict[str, float] = {}
    lendable: dict[str, float] = {}
    for fr in tree.resources:
        used = mine.get(fr, usage.usage(key, fr))
        borrowed[fr[1]] = borrowed.get(fr[1], 0.0) + max(
            0.0, used - tree.subtree[key].get(fr, 0.0))
        lendable[fr[1]] = lendable.get(fr[1], 0.0) + pool.get(fr, 0.0)
    ratio = max((1000.0 * b / lendable[r] for r, b in borrowed.items()
                 if b > EPS and lendable[r] > EPS), default=0.0)
    weight = node_weight(usage, key)
    if ratio > 0 and weight <= 0:
        return INFINITE
    return ratio / weight if weight > 0 else 0.0


def _carried(usage: Usage, cq: str, extra: Extra) -> dict[str, dict[FlavorResource, float]]:
    """Each node's usage after adding ``extra`` to ``cq``, without changing ``usage`` (the
    walk of ``Usage._shift``: a node passes up only what exceeds its guaranteed quota)."""
    tree, out = usage.tree, {}
    for fr, delta in extra.items():
        key: str | None = cq
        while key is not None and abs(delta) > EPS:
            used = usage.usage(key, fr)
            guaranteed = tree.guaranteed[key].get(fr, 0.0)
            out.setdefault(key, {})[fr] = used + delta
            delta = max(0.0, used + delta - guaranteed) - max(0.0, used - guaranteed)
            key = tree.nodes[key].parent
    return out


def node_weight(usage: Usage, key: str) -> float:
    """A cluster queue's or a cohort's fair-sharing weight."""
    config = usage.tree.config
    queue = config.cluster_queues.get(key)
    if queue is not None:
        return queue.weight
    return config.cohorts[usage.tree.nodes[key].name].weight


def path_to_root(usage: Usage, key: str) -> list[str]:
    """``key`` and its ancestors, up to (and with) the root of its tree."""
    nodes, path = usage.tree.nodes, [key]
    while nodes[path[-1]].parent is not None:
        path.append(nodes[path[-1]].parent)  # type: ignore[arg-type]
    return path


ShareRank = tuple[float, ...]  # shares along a queue's path, top level first


def admission_rank(usage: Usage, cq: str, extra: Extra | None = None) -> ShareRank:
    """A job's fair-sharing admission rank (smaller first): the shares, with the job admitted,
    of the nodes on its queue's path from the level below the root down to the queue (the
    same call as ``share_value``).

    Kueue's fair-sharing tournament (``pkg/scheduler/fair_sharing_iterator.go``, KEP-79)
    compares two workloads at the level below their lowest common ancestor, with each one's
    usage added. Compared as tuples, two jobs of different top-level subtrees are decided by
    those subtrees' shares, as in the tournament. Two jobs of one subtree compare equal at the
    levels above their common ancestor when they ask the same (the usual case); a larger job
    raises those shares more, so it goes later there, where the tournament would compare them
    lower down. For a flat cohort the rank is ``(share_value(...),)``."""
    path = path_to_root(usage, cq)[:-1] or [cq]
    return tuple(node_share(usage, key, extra, at=cq) for key in reversed(path))


def almost_lca(usage: Usage, preemptor: str, target: str) -> tuple[str, str]:
    """The nodes just below the lowest common ancestor of two queues of one tree, on the
    preemptor's and on the target's side (Kueue ``getAlmostLCAs``, fairsharing preemption);
    the queues themselves when they are siblings."""
    if preemptor == target:
        return preemptor, target
    mine = path_to_root(usage, preemptor)
    theirs = path_to_root(usage, target)
    ancestors = set(mine)
    below_target = target
    for node in theirs:
        if node in ancestors:
            return mine[mine.index(node) - 1], below_target
        below_target = node
    raise ValueError(f"queues {preemptor!r} and {target!r} are not in one cohort tree")


def most_unfair(usage: Usage, queues: Collection[str]) -> str:
    """The queue to take the next fair-sharing victim from, among ``queues`` (of one tree):
    from the root down, the child with the highest share among those holding one of
    ``queues`` (a cohort before a queue of equal share, then the larger name), until a queue
    is reached (Kueue ``TargetClusterQueueOrdering.nextTarget``, fairsharing preemption)."""
    paths = {q: path_to_root(usage, q)[::-1] for q in queues}
    remaining, depth = list(queues), 1
    while len(remaining) > 1:
        level = {paths[q][depth] for q in remaining}
        best = max(level, key=lambda n: (node_share(usage, n), n not in paths, n))
        remaining = [q for q in remaining if paths[q][depth] == best]
        depth += 1
    return remaining[0]


def tree_weight(usage: Usage, cq: str) -> float:
    return node_weight(usage, cq)


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
        values, rate = self.values, rates.get
        if not rates.keys() <= values.keys():
            for queue in rates:
                values.setdefault(queue, 0.0)
        for queue, value in values.items():  # no key added: the values change in place
            values[queue] = value * factor + rate(queue, 0.0) * accrued
        self.time = now

    def value(self, queue: str) -> float:
        return self.values.get(queue, 0.0)
