"""Flavor assignment with fungibility (Kueue ``pkg/scheduler/flavorassigner``,
concepts/cluster_queue#flavorfungibility).

A gang gets one flavor for all its workers. Flavors are tried in the queue's order; per flavor
the mode is FIT (fits in what is available now), PREEMPT (fits in what the queue could use if
jobs were evicted: ``potential``) or NO_FIT. ``whenCanBorrow: Borrow`` takes the first flavor
that fits by borrowing, ``TryNextFlavor`` looks on for one that fits without; ``whenCanPreempt:
Preempt`` stops at the first flavor that needs preemption and has victims (without borrowing,
or borrowing under ``whenCanBorrow: Borrow``), ``TryNextFlavor`` looks on for one that fits.
Otherwise the best seen wins: FIT over PREEMPT, and among PREEMPT flavors one whose victims
include other queues' jobs over one with only the queue's own, over one with none; then not
borrowing over borrowing. Whether a flavor has victims is Kueue's preemption oracle
(``SimulatePreemption``, modes ``noPreemptionCandidates`` < ``preempt`` < ``reclaim``): the
caller's ``oracle`` runs the victim search; without one every PREEMPT flavor counts as having
victims (one flavor: its outcome cannot change the choice).
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace

import numpy as np

from dlsched.cluster.cluster import Cluster
from dlsched.tenancy.config import (
    ClusterQueue,
    Reclaim,
    ResourceFlavor,
    TenantConfig,
    WhenCanBorrow,
    WhenCanPreempt,
)
from dlsched.tenancy.quota import EPS, Usage
from dlsched.tenancy.reasons import Reason
from dlsched.workload.job import JobSpec


class Mode(enum.IntEnum):
    """Ordered like Kueue's: a larger mode is a better one."""

    NO_FIT = 0
    PREEMPT = 1
    FIT = 2


class Victims(enum.IntEnum):
    """What a PREEMPT flavor's victim search found (Kueue ``PreemptionPossibility``), ordered
    like Kueue's modes: a larger one is better."""

    NONE = 0  # noPreemptionCandidates
    OWN_QUEUE = 1  # preempt: victims of the job's own cluster queue only
    RECLAIM = 2  # reclaim: victims in other cluster queues too


Oracle = Callable[["Assignment"], Victims]
"""The victim search of a PREEMPT option, in its flavor (Kueue ``preemptionOracle``)."""


@dataclass(frozen=True, slots=True)
class Assignment:
    flavor: str | None
    mode: Mode
    borrows: bool
    reason: Reason | None = None  # why not FIT (for NO_FIT: why nothing fits)
    victims: Victims | None = None  # PREEMPT: what the oracle found (None: not asked)

    def _rank(self) -> tuple[Mode, int, bool]:
        found = Victims.OWN_QUEUE if self.victims is None else self.victims
        return self.mode, found if self.mode is Mode.PREEMPT else 0, not self.borrows

    def better_than(self, other: Assignment | None) -> bool:
        if other is None:
            return True
        return self._rank() > other._rank()


def flavor_mask(cluster: Cluster, flavor: ResourceFlavor) -> np.ndarray:
    """The nodes of a flavor: GPU type and pool selectors (empty selector: any)."""
    ok = np.ones(cluster.num_nodes, dtype=bool)
    if flavor.gpu_types:
        ok &= np.array([n.gpu_type in flavor.gpu_types for n in cluster.nodes], dtype=bool)
    if flavor.pools:
        ok &= np.array([n.pool in flavor.pools for n in cluster.nodes], dtype=bool)
    return ok


def flavor_serves(flavor: ResourceFlavor, spec: JobSpec) -> bool:
    """Whether a job's own GPU-type constraint leaves it any node of this flavor."""
    return not (spec.gpu_types and flavor.gpu_types
                and not set(spec.gpu_types) & set(flavor.gpu_types))


def assign(cq: ClusterQueue, flavors: Mapping[str, ResourceFlavor], spec: JobSpec,
           request: Mapping[str, float], usage: Usage,
           seen: list[Assignment] | None = None, oracle: Oracle | None = None) -> Assignment:
    """The flavor for a job; ``seen`` (if given) collects the option of every flavor looked
    at, in order (for the per-flavor pending reasons); ``oracle`` (if given) tells whether a
    PREEMPT option has victims (module docstring), asked only where the choice depends on it."""
    best: Assignment | None = None
    preempting: list[int] = []  # indexes in ``options`` of the PREEMPT ones
    options: list[Assignment] = []
    borrow_ok = cq.fungibility.when_can_borrow is WhenCanBorrow.BORROW
    for name in cq.flavors:
        if not flavor_serves(flavors[name], spec):
            if seen is not None:
                seen.append(Assignment(name, Mode.NO_FIT, False, Reason.NO_FLAVOR))
            continue
        option = _mode(cq, name, request, usage)
        if option.mode is Mode.PREEMPT and oracle is not None and (
                cq.fungibility.when_can_preempt is WhenCanPreempt.PREEMPT):
            option = replace(option, victims=oracle(option))
        if seen is not None:
            seen.append(option)
        if option.mode is Mode.FIT and (not option.borrows or borrow_ok):
            return option
        if option.mode is Mode.PREEMPT and (
                cq.fungibility.when_can_preempt is WhenCanPreempt.PREEMPT
                and option.victims is not Victims.NONE and (not option.borrows or borrow_ok)):
            return option
        if option.mode is Mode.PREEMPT:
            preempting.append(len(options))
        options.append(option)
        if option.better_than(best):
            best = option
    if best is not None and best.mode is Mode.PREEMPT and len(preempting) > 1 and (
            oracle is not None):
        best = _best_preempting(options, preempting, oracle, seen)
    return best or Assignment(None, Mode.NO_FIT, False, Reason.NO_FLAVOR)


def _best_preempting(options: list[Assignment], preempting: list[int], oracle: Oracle,
                     seen: list[Assignment] | None) -> Assignment:
    """Among several PREEMPT flavors (none fits), the best once the oracle has told each one's
    victims: Kueue ranks ``reclaim`` over ``preempt`` over ``noPreemptionCandidates``. A
    flavor with victims in other queues and no borrowing ranks above any later one (ties go to
    the earlier flavor): the later ones are not searched."""
    best: Assignment | None = None
    for i in preempting:
        option = options[i]
        if option.victims is None:
            option = replace(option, victims=oracle(option))
            if seen is not None:
                seen[seen.index(options[i])] = option
        if option.better_than(best):
            best = option
            if option.victims is Victims.RECLAIM and not option.borrows:
                break
    assert best is not None
    return best


def _mode(cq: ClusterQueue, flavor: str, request: Mapping[str, float],
          usage: Usage) -> Assignment:
    mode, reason = Mode.FIT, None
    tree = usage.tree
    for resource, amount in request.items():
        fr = (flavor, resource)
        if amount <= usage.available(cq.name, fr) + EPS:
            continue
        limit = tree.borrowing_limit(cq.name, fr)
        if amount <= usage.potential(cq.name, fr) + EPS:
            if not _may_preempt(cq, fr, amount, usage):  # Kueue: "insufficient unused quota"
                return Assignment(flavor, Mode.NO_FIT, False, Reason.NEEDS_PREEMPTION)
            over = limit is not None and (
                usage.usage(cq.name, fr) + amount > tree.nominal(cq.name, fr) + limit + EPS)
            mode = min(mode, Mode.PREEMPT)
            reason = reason or (Reason.BORROWING_LIMIT if over else Reason.NEEDS_PREEMPTION)
            continue
        beyond = limit is not None and amount > tree.nominal(cq.name, fr) + limit + EPS
        return Assignment(flavor, Mode.NO_FIT, False,
                          Reason.BORROWING_LIMIT if beyond else Reason.NO_QUOTA)
    return Assignment(flavor, mode, usage.borrows(cq.name, flavor, request), reason)


def _may_preempt(cq: ClusterQueue, fr: tuple[str, str], amount: float, usage: Usage) -> bool:
    """Kueue ``fitsResourceQuota``: a job may look for victims only if its request fits its
    queue's nominal quota, or a cohort below the root could hold it, or its queue may preempt
    while borrowing (``borrowWithinCohort``, or fair sharing with ``reclaimWithinCohort``)."""
    if (amount <= usage.tree.nominal(cq.name, fr) + EPS
            or cq.preemption.borrow_within_cohort.enabled):
        return True
    if usage.tree.config.fair_sharing.enabled and (
            cq.preemption.reclaim_within_cohort is not Reclaim.NEVER):
        return True
    return usage.borrow_height(cq.name, fr, amount)[1]


def empty_flavors(tenants: TenantConfig, cluster: Cluster, cluster_name: str) -> list[str]:
    """One warning per flavor of ``tenants`` that no GPU node of ``cluster`` belongs to: the
    quota of such a flavor admits jobs that no node can then run (a flavor written for
    another cluster, or a GPU type spelled otherwise)."""
    gpu_nodes = np.array([n.num_gpus > 0 for n in cluster.nodes], dtype=bool)
    warnings = []
    for flavor in tenants.flavors.values():
        if (flavor_mask(cluster, flavor) & gpu_nodes).any():
            continue
        wants = "; ".join(f"{key} {', '.join(values)}" for key, values in (
            ("gpu_types", flavor.gpu_types), ("pools", flavor.pools)) if values)
        users = [cq.name for cq in tenants.cluster_queues.values() if flavor.name in cq.flavors]
        warnings.append(f"{tenants.source}: flavor {flavor.name!r} ({wants or 'any node'}) "
                        f"matches no GPU "
                        f"node of cluster {cluster_name}: jobs its quota admits can never run"
                        + (f" (cluster queues {', '.join(users)})" if users else ""))
    return warnings
