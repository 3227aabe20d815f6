"""Fair-sharing preemption (Kueue ``fairPreemptions``, KEP-1714 rules S2-a and S2-b,
concepts/fair_sharing), on quota only.

With the preemptor's job counted in its queue's usage (Kueue ``SimulateUsageAddition``), the
queues holding candidates are visited from the root of the cohort tree down, at each level
the child with the highest share first (``next_queue``: Kueue ``TargetClusterQueueOrdering``;
queues that no longer borrow, and cohorts that no longer borrow off the preemptor's path, are
pruned). In the chosen queue:

- the preemptor's own queue: its next candidate is evicted (``InClusterQueue``);
- otherwise the queue's candidates are tried in order with the first strategy on the shares of
  the two nodes below the lowest common ancestor; the first that passes is evicted
  (``InCohortFairSharing``) and the next queue is chosen afresh; those that fail are kept for
  the second strategy, and the queue's remaining candidates are still tried.

If the job does not fit yet and a second strategy is configured (``LessThanInitialShare``), the
kept candidates are visited again in the same order of queues, one try per queue (rule S2-b),
with the victims chosen so far still evicted. Then the victims not needed are given back.
"""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping, Sequence

from dlsched.tenancy.config import ShareStrategy, TenantConfig
from dlsched.tenancy.fairshare import (
    INFINITE,
    almost_lca,
    node_share,
    path_to_root,
    strategy_allows,
)
from dlsched.tenancy.preemption import (
    Admitted,
    Target,
    contested,
    exceeds,
    fill_back,
    remove,
    restore,
)
from dlsched.tenancy.quota import Usage

Lines = MutableMapping[str, list[Target]]


def fair_targets(config: TenantConfig, usage: Usage, incoming: Admitted,
                 found: Sequence[Target]) -> list[Target]:
    frs = contested(usage, incoming)
    strategies = config.fair_sharing.strategies
    restore(usage, incoming)  # shares are computed with the preemptor's job admitted
    targets: list[Target] = []
    try:
        fits, retry = _first_pass(usage, incoming, found, strategies[0], frs, targets)
        if not fits and len(strategies) > 1:
            fits = _second_pass(usage, incoming, retry, frs, targets)
    finally:
        remove(usage, incoming)
    if fits:
        targets = fill_back(usage, incoming, targets, True)
    for target in targets:
        restore(usage, target.victim)
    return targets if fits else []


def _fits(usage: Usage, incoming: Admitted) -> bool:
    remove(usage, incoming)
    try:
        return usage.fits(incoming.cq, incoming.flavor, incoming.request)
    finally:
        restore(usage, incoming)


def _evict(usage: Usage, incoming: Admitted, target: Target, targets: list[Target]) -> bool:
    remove(usage, target.victim)
    targets.append(target)
    return _fits(usage, incoming)


def _first_pass(usage: Usage, incoming: Admitted, found: Sequence[Target],
                strategy: ShareStrategy, frs: Sequence, targets: list[Target]
                ) -> tuple[bool, list[Target]]:
    lines = _lines(found)
    retry: list[Target] = []
    while (cq := next_queue(usage, incoming.cq, lines, frs)) is not None:
        line = lines[cq]
        if cq == incoming.cq:
            if _evict(usage, incoming, line.pop(0), targets):
                return True, retry
            continue
        mine, theirs = almost_lca(usage, incoming.cq, cq)
        preemptor_new, target_old = node_share(usage, mine), node_share(usage, theirs)
        while line:
            target = line.pop(0)
            if preemptor_new == INFINITE and target_old != INFINITE:
                retry.append(target)  # no candidate of this queue can pass either strategy
                continue
            remove(usage, target.victim)
            target_new = node_share(usage, theirs)
            restore(usage, target.victim)
            if strategy_allows(strategy, preemptor_new, target_old, target_new):
                if _evict(usage, incoming, target, targets):
                    return True, retry
                break  # shares moved: choose the queue afresh
            retry.append(target)
    return False, retry


def _second_pass(usage: Usage, incoming: Admitted, retry: Sequence[Target], frs: Sequence,
                 targets: list[Target]) -> bool:
    lines = _lines(retry)
    while (cq := next_queue(usage, incoming.cq, lines, frs)) is not None:
        mine, theirs = almost_lca(usage, incoming.cq, cq)
        target = lines.pop(cq)[0]
        if strategy_allows(ShareStrategy.LESS_THAN_INITIAL_SHARE, node_share(usage, mine),
                   node_share(usage, theirs), 0.0) and _evict(usage, incoming, target, targets):
            return True
    return False


def _lines(found: Sequence[Target]) -> dict[str, list[Target]]:
    lines: dict[str, list[Target]] = {}
    for target in found:
        lines.setdefault(target.victim.cq, []).append(target)
    return lines


def next_queue(usage: Usage, preemptor: str, lines: Lines, frs: Sequence) -> str | None:
    """The queue to take the next candidate from, or None when none is left (Kueue
    ``TargetClusterQueueOrdering.nextTarget``): from the root down, among the children that
    lead to a queue with candidates, the one with the highest share (a cohort wins a tie with
    a queue; queues tie-break on their first candidates' order). A queue other than the
    preemptor's that no longer borrows is dropped; so is a cohort off the preemptor's path
    that no longer borrows."""
    for cq in [q for q, line in lines.items() if not line or (
            q != preemptor and not exceeds(usage, q, frs))]:
        del lines[cq]
    if not lines:
        return None
    on_path = set(path_to_root(usage, preemptor))
    paths = {q: path_to_root(usage, q)[::-1] for q in lines}
    remaining, depth = list(lines), 1
    while True:
        if len(paths[remaining[0]]) <= depth:  # a queue in no cohort: only itself
            return remaining[0]
        level = {paths[q][depth] for q in remaining}
        best = _best_child(usage, level, lines, on_path)
        if best is None:
            for q in remaining:
                del lines[q]
            return None if not lines else next_queue(usage, preemptor, lines, frs)
        remaining = [q for q in remaining if paths[q][depth] == best]
        if best in lines:
            return best
        depth += 1


def _best_child(usage: Usage, level: set[str], lines: Mapping[str, list[Target]],
                on_path: set[str]) -> str | None:
    queues = [n for n in level if n in lines]
    cohorts = [n for n in level if n not in lines and (n in on_path or _borrows(usage, n))]

    def queue_key(q: str) -> tuple:
        first = lines[q][0].victim
        return (node_share(usage, q), -first.priority, first.started, q)

    best_queue = max(queues, key=queue_key, default=None)
    best_cohort = max(cohorts, key=lambda n: (node_share(usage, n), n), default=None)
    if best_cohort is None:
        return best_queue
    if best_queue is None or node_share(usage, best_cohort) >= node_share(usage, best_queue):
        return best_cohort
    return best_queue


def _borrows(usage: Usage, key: str) -> bool:
    return exceeds(usage, key, usage.tree.resources)
