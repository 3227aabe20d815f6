"""Which running jobs a job that needs quota may evict (Kueue ``pkg/scheduler/preemption``,
concepts/preemption, concepts/fair_sharing). Works on quota only; the cycle checks nodes.

Candidates, by the preemptor queue's policy (Kueue ``classical/hierarchical_preemption.go``):
- its own queue's jobs by ``withinClusterQueue`` (``InClusterQueue``);
- jobs of other queues of the cohort tree that borrow in the contested flavor, by
  ``reclaimWithinCohort``. Over those the preemptor has *hierarchical advantage* when its job
  fits in its queue's nominal quota (or, in a nested tree, in the subtree quota of the cohort
  below their lowest common ancestor): ``InCohortReclamation``, usable whether or not the
  preemptor then borrows. Without that advantage a candidate is usable only if the preemptor
  then does not borrow (``InCohortReclamation``), unless ``borrowWithinCohort`` is on and the
  candidate has a lower priority, at most the threshold (``InCohortReclaimWhileBorrowing``).
  dlsched also accepts ``borrow_within_cohort`` with ``reclaim_within_cohort: never`` (Kueue's
  validation rejects the pair): then only the borrow-while-reclaiming candidates exist.
Jobs within their queue's minimum runtime are never candidates. Order: hierarchical candidates,
then the other queues' candidates, then the own queue's; each group lower priority first, most
recently started first (Kueue ``CandidatesOrdering``).

Classic mode (Kueue ``classicalPreemptions``): one or two passes, with borrowing allowed or
not, in Kueue's order; each removes valid candidates (another queue's only while it and its
cohorts below the common ancestor still exceed their quota) until the job fits, then gives back
every removed job not needed, latest removed first (``fillBackWorkloads``). Fair-sharing mode:
``fair_preemption.py``.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from dlsched.tenancy.config import ClusterQueue, Reclaim, TenantConfig, WithinQueue
from dlsched.tenancy.quota import EPS, FlavorResource, Usage


class Why(enum.Enum):
    IN_CLUSTER_QUEUE = "in its cluster queue"
    RECLAIM = "to reclaim quota in the cohort"
    RECLAIM_WITHOUT_BORROWING = "to reclaim quota, only if the preemptor then does not borrow"
    BORROW_WITHIN_COHORT = "while borrowing within the cohort"
    FAIR_SHARING = "for fair sharing in the cohort"

    @property
    def kueue(self) -> str:
        """The Workload's ``Preempted`` condition reason in Kueue's words."""
        return _KUEUE_REASONS[self]


_KUEUE_REASONS = {Why.IN_CLUSTER_QUEUE: "InClusterQueue", Why.RECLAIM: "InCohortReclamation",
                  Why.RECLAIM_WITHOUT_BORROWING: "InCohortReclamation",
                  Why.BORROW_WITHIN_COHORT: "InCohortReclaimWhileBorrowing",
                  Why.FAIR_SHARING: "InCohortFairSharing"}


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


@dataclass(frozen=True, slots=True)
class Victims:
    """The chosen victims and whether the preemptor may borrow once they are gone (False: the
    pass that found them forbade borrowing, so the cycle's give-back must not let it borrow)."""

    targets: list[Target]
    may_borrow: bool = True
    protected: bool = False  # a candidate was left out for its minimum runtime


NONE = Victims([])


def by_queue(running: Iterable[Admitted]) -> dict[str, list[Admitted]]:
    """Running jobs grouped by cluster queue (what ``candidates`` reads)."""
    out: dict[str, list[Admitted]] = {}
    for job in running:
        out.setdefault(job.cq, []).append(job)
    return out


def contested(usage: Usage, incoming: Admitted) -> list[FlavorResource]:
    """The (flavor, resource) pairs the job does not fit in now (Kueue
    ``frsNeedPreemption``)."""
    return [(incoming.flavor, r) for r, v in incoming.request.items()
            if v > usage.available(incoming.cq, (incoming.flavor, r)) + EPS]


def exceeds(usage: Usage, key: str, frs: Iterable[FlavorResource]) -> bool:
    """Whether node ``key`` uses more than its subtree quota in any of ``frs`` (the opposite of
    Kueue's ``IsWithinNominalInResources``)."""
    subtree = usage.tree.subtree[key]
    return any(usage.usage(key, fr) > subtree.get(fr, 0.0) + EPS for fr in frs)


def uses(victim: Admitted, frs: Sequence[FlavorResource]) -> bool:
    return any((victim.flavor, r) in frs for r in victim.request)


def candidates(config: TenantConfig, usage: Usage, incoming: Admitted,
               running: Mapping[str, Sequence[Admitted]], now: float,
               protect: bool = True, skipped: list[Admitted] | None = None) -> list[Target]:
    """The candidates in Kueue's order; ``protect=False`` ignores minimum runtimes;
    ``skipped`` collects the jobs left out for theirs."""
    cq = config.cluster_queues[incoming.cq]
    frs = contested(usage, incoming) or [(incoming.flavor, r) for r in incoming.request]
    advantage = _advantage(usage, incoming)
    fair = config.fair_sharing.enabled
    groups: tuple[list[Target], list[Target], list[Target]] = ([], [], [])
    for member in usage.tree.cohort_members(cq.name):
        jobs = running.get(member)
        if not jobs or (member != cq.name and not exceeds(usage, member, frs)):
            continue  # Kueue takes quota back only from queues that borrow
        protected = config.cluster_queues[member].preemption.min_runtime if protect else 0.0
        lca = None if member == cq.name else _lca(usage, cq.name, member)
        for other in jobs:
            if other.flavor != incoming.flavor or not uses(other, frs):
                continue
            if now - other.started < protected:
                if skipped is not None:
                    skipped.append(other)
                continue
            why = _why(cq, incoming, other, advantage.get(lca, False), fair)
            if why is not None:
                group = 2 if why is Why.IN_CLUSTER_QUEUE else 0 if why is Why.RECLAIM else 1
                groups[group].append(Target(other, why))
    out: list[Target] = []
    for group in groups:
        out += sorted(group, key=lambda t: (t.victim.priority, -t.victim.started,
                                            t.victim.job_id))
    return out


def _why(cq: ClusterQueue, incoming: Admitted, other: Admitted, advantage: bool,
         fair: bool) -> Why | None:
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
    reclaim, borrow = policy.reclaim_within_cohort, policy.borrow_within_cohort
    threshold = borrow.max_priority_threshold
    below = lower and (threshold is None or other.priority <= threshold)
    if reclaim is Reclaim.NEVER or (reclaim is Reclaim.LOWER_PRIORITY and not lower):
        if reclaim is Reclaim.NEVER and borrow.enabled and below and not fair:
            return Why.BORROW_WITHIN_COHORT  # dlsched's extension (module docstring)
        return None
    if fair:
        return Why.FAIR_SHARING
    if advantage:
        return Why.RECLAIM
    return Why.BORROW_WITHIN_COHORT if borrow.enabled and below else (
        Why.RECLAIM_WITHOUT_BORROWING)


def _advantage(usage: Usage, incoming: Admitted) -> dict[str | None, bool]:
    """Per ancestor cohort of the preemptor's queue, whether it has hierarchical advantage over
    the candidates whose lowest common ancestor with it is that cohort (Kueue
    ``collectCandidatesForHierarchicalReclaim``, ``QuantitiesFitInQuota``)."""
    tree, key = usage.tree, incoming.cq
    remaining = {(incoming.flavor, r): v for r, v in incoming.request.items()}
    advantage, out = False, {}
    while key is not None:
        subtree, guaranteed = tree.subtree[key], tree.guaranteed[key]
        fits = all(usage.usage(key, fr) + v <= subtree.get(fr, 0.0) + EPS
                   for fr, v in remaining.items())
        if key != incoming.cq:
            out[key] = advantage
        advantage = advantage or fits
        remaining = {fr: max(0.0, v - max(0.0, guaranteed.get(fr, 0.0) - usage.usage(key, fr)))
                     for fr, v in remaining.items()}
        key = tree.nodes[key].parent
    return out


def _lca(usage: Usage, a: str, b: str) -> str | None:
    nodes = usage.tree.nodes
    ancestors, key = set(), nodes[a].parent
    while key is not None:
        ancestors.add(key)
        key = nodes[key].parent
    key = nodes[b].parent
    while key is not None and key not in ancestors:
        key = nodes[key].parent
    return key


def select_targets(config: TenantConfig, usage: Usage, incoming: Admitted,
                   running: Mapping[str, Sequence[Admitted]], now: float,
                   protect: bool = True) -> Victims:
    """The victims to evict so the incoming job fits its quota (empty if none will do)."""
    skipped: list[Admitted] = []
    found = candidates(config, usage, incoming, running, now, protect, skipped)
    if not found:
        return Victims([], protected=bool(skipped))
    if config.fair_sharing.enabled:
        from dlsched.tenancy.fair_preemption import fair_targets
        chosen = Victims(fair_targets(config, usage, incoming, found))
    else:
        chosen = _classic(config, usage, incoming, found)
    return chosen if chosen.targets or not skipped else Victims([], protected=True)


def _classic(config: TenantConfig, usage: Usage, incoming: Admitted,
             found: Sequence[Target]) -> Victims:
    """Kueue's passes: only with borrowing when no other queue offers a candidate, or when
    borrowing within the cohort is off and the queue is not below its nominal quota; else
    without borrowing first when nothing has hierarchical advantage and borrowing within the
    cohort is off; else with borrowing first."""
    frs = contested(usage, incoming)
    forbidden = not config.cluster_queues[incoming.cq].preemption.borrow_within_cohort.enabled
    others = [t for t in found if t.why is not Why.IN_CLUSTER_QUEUE]
    hierarchical = any(t.why is Why.RECLAIM for t in others)
    if not others or (forbidden and not _under_nominal(usage, incoming.cq, frs)):
        passes = (True,)
    elif forbidden and not hierarchical:
        passes = (False, True)
    else:
        passes = (True, False)
    for may_borrow in passes:
        targets = minimal(usage, incoming, found, may_borrow, frs)
        if targets:
            return Victims(targets, may_borrow)
    return NONE


def _under_nominal(usage: Usage, cq: str, frs: Iterable[FlavorResource]) -> bool:
    return all(usage.usage(cq, fr) < usage.tree.nominal(cq, fr) - EPS for fr in frs)


def valid(usage: Usage, incoming: Admitted, target: Target, may_borrow: bool,
          frs: Sequence[FlavorResource]) -> bool:
    """Kueue ``candidateIsValid``: own-queue candidates always; another queue's only while it,
    and each cohort between it and the common ancestor, still exceeds its quota."""
    victim = target.victim
    if victim.cq == incoming.cq:
        return True
    if may_borrow and target.why is Why.RECLAIM_WITHOUT_BORROWING:
        return False
    lca, key = _lca(usage, incoming.cq, victim.cq), victim.cq
    while key is not None and key != lca:
        if not exceeds(usage, key, frs):
            return False
        key = usage.tree.nodes[key].parent
    return True


def minimal(usage: Usage, incoming: Admitted, pool: Sequence[Target], may_borrow: bool,
            frs: Sequence[FlavorResource]) -> list[Target]:
    """Remove valid candidates in order until it fits, then give back the ones not needed,
    latest removed first (Kueue ``fillBackWorkloads``); ``usage`` is left as it was."""
    removed: list[Target] = []
    fits = False
    for target in pool:
        if not valid(usage, incoming, target, may_borrow, frs):
            continue
        remove(usage, target.victim)
        removed.append(target)
        if usage.fits(incoming.cq, incoming.flavor, incoming.request, may_borrow):
            fits = True
            break
    if fits:
        removed = fill_back(usage, incoming, removed, may_borrow)
    for target in removed:
        restore(usage, target.victim)
    return removed if fits else []


def fill_back(usage: Usage, incoming: Admitted, removed: list[Target],
              may_borrow: bool) -> list[Target]:
    """With every job of ``removed`` out of ``usage``: put back those not needed, latest
    removed first but the last; those kept stay removed."""
    kept = list(removed)
    for target in reversed(removed[:-1]):
        restore(usage, target.victim)
        if usage.fits(incoming.cq, incoming.flavor, incoming.request, may_borrow):
            kept.remove(target)
        else:
            remove(usage, target.victim)
    return kept


def remove(usage: Usage, job: Admitted) -> None:
    usage.add(job.cq, job.flavor, job.request, -1.0)


def restore(usage: Usage, job: Admitted) -> None:
    usage.add(job.cq, job.flavor, job.request)
