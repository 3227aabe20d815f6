"""Which running jobs a job that needs quota may evict (Kueue ``pkg/scheduler/preemption``,
concepts/preemption and concepts/fair_sharing). Works on quota only; the cycle checks nodes.

Candidates, by the preemptor queue's policy:
- ``withinClusterQueue``: jobs of its own queue of lower priority (``lower-priority``), or also
  of equal priority submitted later (``lower-or-newer-equal-priority``).
- ``reclaimWithinCohort``: jobs of other queues of the cohort tree that borrow in the flavor
  (``any``, or only lower priority with ``lower-priority``).
- ``borrowWithinCohort``: while the preemptor borrows, lower-priority jobs of other borrowing
  queues whose priority is at most the threshold.
Jobs within their queue's minimum runtime are never candidates. Order: other queues first, lower
priority first, most recently started first.

Classic mode (Kueue ``getTargets``): with only own-queue candidates, evict allowing borrowing;
otherwise first try borrowWithinCohort (if enabled), then reclaim only as far as the nominal
quota (no borrowing: reclaiming to borrow would let two queues evict each other in turn), then
own-queue candidates with borrowing. Each try removes candidates greedily while they still
matter (a candidate of another queue only while that queue borrows) until the job fits, then
gives back every removed job not needed, latest removed first.

Fair-sharing mode: take the next candidate from the queue with the highest share, found from
the root of the cohort tree down by the shares of sub-cohorts (``fairshare.most_unfair``, Kueue
KEP-79 with fair sharing); a job of another queue is evicted only if the strategy holds on the
shares of the two nodes just below the lowest common ancestor of the preemptor's and the
victim's queues (``fairshare.almost_lca``, ``strategy_allows``); strategies are tried in
order.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from dlsched.tenancy.config import (
    ClusterQueue,
    FlavorResource,
    Reclaim,
    ShareStrategy,
    TenantConfig,
    WithinQueue,
)
from dlsched.tenancy.fairshare import almost_lca, most_unfair, node_share, strategy_allows
from dlsched.tenancy.quota import Usage


class Why(enum.Enum):
    IN_CLUSTER_QUEUE = "in its cluster queue"
    RECLAIM = "to reclaim nominal quota in the cohort"
    BORROW_WITHIN_COHORT = "while borrowing within the cohort"
    FAIR_SHARING = "for fair sharing in the cohort"


@dataclass(frozen=True, slots=True)
class Admitted:
    """A running job as the tenant layer sees it: its queue, flavor and request."""

    job_id: str
    cq: str
    flavor: str
    request: Mapping[str, float] = field(hash=False)
    priority: int
    started: float
    submitted: float = 0.0


@dataclass(frozen=True, slots=True)
class Target:
    victim: Admitted
    why: Why


def by_queue(running: Iterable[Admitted]) -> dict[str, list[Admitted]]:
    """Running jobs grouped by cluster queue (what ``candidates`` reads)."""
    out: dict[str, list[Admitted]] = {}
    for job in running:
        out.setdefault(job.cq, []).append(job)
    return out


def candidates(config: TenantConfig, usage: Usage, incoming: Admitted,
               running: Mapping[str, Sequence[Admitted]], now: float) -> list[Target]:
    cq = config.cluster_queues[incoming.cq]
    policy = cq.preemption
    borrowing_after = usage.borrows(cq.name, incoming.flavor, incoming.request)
    across = (policy.reclaim_within_cohort is not Reclaim.NEVER
              or policy.borrow_within_cohort.enabled)
    found: list[Target] = []
    for member in usage.tree.cohort_members(cq.name):
        jobs = running.get(member)
        if not jobs:
            continue
        if member == cq.name:
            if policy.within_cluster_queue is WithinQueue.NEVER:
                continue
        elif not across or not usage.is_borrowing(member):
            continue  # Kueue takes quota back only from queues that borrow
        protect = config.cluster_queues[member].preemption.min_runtime
        for other in jobs:
            if other.flavor != incoming.flavor or now - other.started < protect:
                continue
            why = _why(config, cq, usage, incoming, other, borrowing_after)
            if why is not None:
                found.append(Target(other, why))
    found.sort(key=lambda t: (t.victim.cq == cq.name, t.victim.priority, -t.victim.started,
                              t.victim.job_id))
    return found


def _why(config: TenantConfig, cq: ClusterQueue, usage: Usage, incoming: Admitted,
         other: Admitted, borrowing_after: bool) -> Why | None:
    policy = cq.preemption
    lower = other.priority < incoming.priority
    if other.cq == cq.name:
        rule = policy.within_cluster_queue
        newer_equal = (other.priority == incoming.priority
                       and other.submitted > incoming.submitted)
        if (rule is WithinQueue.LOWER_PRIORITY and lower) or (
                rule is WithinQueue.LOWER_OR_NEWER_EQUAL_PRIORITY and (lower or newer_equal)):
            return Why.IN_CLUSTER_QUEUE
        return None
    # ``candidates`` looks only at other queues that borrow: Kueue reclaims only from those.
    if config.fair_sharing.enabled:
        return Why.FAIR_SHARING if policy.reclaim_within_cohort is not Reclaim.NEVER and (
            policy.reclaim_within_cohort is Reclaim.ANY or lower) else None
    reclaim = policy.reclaim_within_cohort
    if reclaim is Reclaim.ANY or (reclaim is Reclaim.LOWER_PRIORITY and lower):
        return Why.RECLAIM
    borrow = policy.borrow_within_cohort
    threshold = borrow.max_priority_threshold
    if borrow.enabled and borrowing_after and lower and (threshold is None
                                                         or other.priority <= threshold):
        return Why.BORROW_WITHIN_COHORT
    return None


def select_targets(config: TenantConfig, usage: Usage, incoming: Admitted,
                   running: Mapping[str, Sequence[Admitted]], now: float) -> list[Target]:
    """The victims to evict so the incoming job fits its quota, or [] if none will do."""
    if not config.fair_sharing.enabled and not _own_or_borrow_pass(config, incoming) and (
            usage.borrows(incoming.cq, incoming.flavor, incoming.request)):
        return []  # only reclaiming is allowed, and it never lets a queue go above nominal
    found = candidates(config, usage, incoming, running, now)
    if not found:
        return []
    if config.fair_sharing.enabled:
        return _fair_targets(config, usage, incoming, found)
    own = [t for t in found if t.why is Why.IN_CLUSTER_QUEUE]
    if len(own) == len(found):
        return _minimal(usage, incoming, found, allow_borrowing=True)
    tries = []
    if any(t.why is Why.BORROW_WITHIN_COHORT for t in found):
        tries.append((found, True))
    tries += [([t for t in found if t.why is not Why.BORROW_WITHIN_COHORT], False),
              (own, True)]
    for pool, allow_borrowing in tries:
        targets = _minimal(usage, incoming, pool, allow_borrowing)
        if targets:
            return targets
    return []


def _own_or_borrow_pass(config: TenantConfig, incoming: Admitted) -> bool:
    """Whether a pass that lets the preemptor borrow exists: own-queue victims or
    borrowWithinCohort."""
    policy = config.cluster_queues[incoming.cq].preemption
    return (policy.within_cluster_queue is not WithinQueue.NEVER
            or policy.borrow_within_cohort.enabled)


def _minimal(usage: Usage, incoming: Admitted, pool: Sequence[Target],
             allow_borrowing: bool) -> list[Target]:
    """Remove greedily until it fits, then give back the ones not needed (Kueue)."""
    removed: list[Target] = []
    fits = False
    for target in pool:
        victim = target.victim
        if victim.cq != incoming.cq and target.why is not Why.FAIR_SHARING and (
                not usage.is_borrowing(victim.cq, [(victim.flavor, r) for r in victim.request])):
            continue  # that queue no longer borrows: it keeps the rest
        _remove(usage, victim)
        removed.append(target)
        if usage.fits(incoming.cq, incoming.flavor, incoming.request, allow_borrowing):
            fits = True
            break
    if fits:
        for target in reversed(removed[:-1]):
            _restore(usage, target.victim)
            if usage.fits(incoming.cq, incoming.flavor, incoming.request, allow_borrowing):
                removed.remove(target)
            else:
                _remove(usage, target.victim)
    for target in removed:
        _restore(usage, target.victim)
    return removed if fits else []


def _fair_targets(config: TenantConfig, usage: Usage, incoming: Admitted,
                  found: Sequence[Target]) -> list[Target]:
    for strategy in config.fair_sharing.strategies:
        removed: list[Target] = []
        by_queue: dict[str, list[Target]] = {}
        for target in found:
            by_queue.setdefault(target.victim.cq, []).append(target)
        extra = {(incoming.flavor, r): v for r, v in incoming.request.items()}
        fits = False
        while by_queue and not fits:
            cq = most_unfair(usage, by_queue)
            target = by_queue[cq].pop(0)
            if not by_queue[cq]:
                del by_queue[cq]
            victim = target.victim
            if cq != incoming.cq and not _fair_allows(strategy, usage, incoming, victim, extra):
                by_queue.pop(cq, None)
                continue
            _remove(usage, victim)
            removed.append(target)
            fits = usage.fits(incoming.cq, incoming.flavor, incoming.request)
        for target in removed:
            _restore(usage, target.victim)
        if fits:
            return _minimal(usage, incoming, removed, allow_borrowing=True)
    return []


def _fair_allows(strategy: ShareStrategy, usage: Usage, incoming: Admitted, victim: Admitted,
                 extra: Mapping[FlavorResource, float]) -> bool:
    """The strategy, on the shares of the two nodes just below the preemptor's and the
    victim's lowest common ancestor (Kueue ``ComputeShares``; the queues themselves in a flat
    cohort), the preemptor's with its job admitted."""
    mine, theirs = almost_lca(usage, incoming.cq, victim.cq)
    minus = {(victim.flavor, r): -v for r, v in victim.request.items()}
    return strategy_allows(strategy, node_share(usage, mine, extra, at=incoming.cq),
                           node_share(usage, theirs),
                           node_share(usage, theirs, minus, at=victim.cq))


def _remove(usage: Usage, job: Admitted) -> None:
    usage.add(job.cq, job.flavor, job.request, -1.0)


def _restore(usage: Usage, job: Admitted) -> None:
    usage.add(job.cq, job.flavor, job.request)
