"""The admission orders other than Kueue's (``config.AdmissionOrder``): Slurm's fair-share
factor per queue (classic or Fair Tree, ``slurm_fairshare.py``) and DRF progressive filling
(Ghodsi et al., NSDI'11 §4). Each yields the cycle's waiting jobs lazily, skipping queues the
cycle has closed (``skip_queue``)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING

from dlsched.scheduling.cycle import BLOCKED_QUEUES
from dlsched.scheduling.state import CycleState
from dlsched.tenancy.config import AdmissionOrder, TenantConfig
from dlsched.tenancy.fairshare import dominant_share
from dlsched.tenancy.quota import QuotaTree, Usage
from dlsched.tenancy.slurm_fairshare import Hierarchy, classic, fair_tree
from dlsched.workload.job import Job

if TYPE_CHECKING:
    from dlsched.tenancy.plugins import TenantAdmission


def hierarchy(config: TenantConfig) -> Hierarchy:
    """Slurm's association tree: cohorts are accounts, cluster queues users, weights shares."""
    parent: dict[str, str | None] = {q.name: q.cohort for q in config.cluster_queues.values()}
    shares = {q.name: q.weight for q in config.cluster_queues.values()}
    for cohort in config.cohorts.values():
        parent[cohort.name], shares[cohort.name] = cohort.parent, cohort.weight
    for q in config.cluster_queues.values():  # cohorts named only by a queue
        if q.cohort is not None and q.cohort not in parent:
            parent[q.cohort], shares[q.cohort] = None, 1.0
    return Hierarchy(parent, shares, frozenset(config.cluster_queues))


def slurm_factors(config: TenantConfig, tree: Hierarchy, usage: Mapping[str, float]
                  ) -> dict[str, float]:
    if config.fair_sharing.admission_order is AdmissionOrder.SLURM_CLASSIC:
        return classic(tree, usage)
    return fair_tree(tree, usage)


def quota_totals(tree: QuotaTree) -> dict[str, float]:
    """The quota of every cohort tree (and queue in no cohort), summed over flavors, per
    resource: DRF's cluster capacity."""
    totals: dict[str, float] = {}
    for key, node in tree.nodes.items():
        if node.parent is None:
            for (_, resource), value in tree.subtree[key].items():
                totals[resource] = totals.get(resource, 0.0) + value
    return totals


def drf_share(usage: Usage, cq: str, totals: Mapping[str, float], weight: float) -> float:
    used: dict[str, float] = {}
    for (_, resource), value in usage.used[cq].items():
        used[resource] = used.get(resource, 0.0) + value
    return dominant_share(used, totals, weight)


def by_queue_factor(plugin: TenantAdmission, state: CycleState,
                    factors: Mapping[str, float]) -> Iterator[Job]:
    """Queues by factor (highest first), each queue's line in its order."""
    lines = plugin.lines.lines
    blocked = state.scratch.setdefault(BLOCKED_QUEUES, {})
    for cq in sorted(lines, key=lambda q: (-factors.get(q, 0.0), q)):
        for job in lines[cq]:
            if blocked and plugin.closed(cq, blocked):
                break
            yield job


def progressive_filling(plugin: TenantAdmission, state: CycleState,
                        share_of: Callable[[str], float]) -> Iterator[Job]:
    """DRF: the next job of the queue with the lowest dominant share now (this cycle's
    admissions and evictions counted), ties by the tenant key."""
    lines = plugin.lines.lines
    blocked = state.scratch.setdefault(BLOCKED_QUEUES, {})
    index = dict.fromkeys(lines, 0)
    while True:
        best, best_key = None, None
        for cq, line in lines.items():
            at = index[cq]
            if at >= len(line) or (blocked and plugin.closed(cq, blocked)):
                continue
            key = (share_of(cq), plugin.sort_key(state, line[at]))
            if best_key is None or key < best_key:
                best, best_key = cq, key
        if best is None:
            return
        index[best] += 1
        yield lines[best][index[best] - 1]
