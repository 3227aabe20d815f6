"""The tenant model as typed, frozen data, in Kueue's vocabulary (kueue.sigs.k8s.io/docs/concepts).

- ``ResourceFlavor``: a kind of node (a GPU type and/or node pools), Kueue's ResourceFlavor.
- ``ClusterQueue``: a quota pool: a nominal quota per (flavor, resource), with optional
  ``borrowing_limit`` (most it may take from its cohort above nominal) and ``lending_limit`` (most
  of its unused nominal quota it lends), a queueing strategy, a preemption policy, flavor
  fungibility and a fair-sharing weight (Kueue concepts/cluster_queue).
- ``Cohort``: queues (and nested cohorts) that borrow each other's unused quota; a cohort may
  have a parent and its own quota (Kueue KEP-79, hierarchical cohorts).
- ``LocalQueue``: the name a job's ``JobSpec.queue`` gives; it points at a cluster queue.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field

# GPUs (shares summed), CPUs, host memory (GiB) and GPU memory (GiB, per worker's GPU: HAMi's
# ``nvidia.com/gpumem`` in Kueue resource groups, counted in GiB here).
RESOURCES = ("gpu", "cpu", "memory", "gpu_memory")
FlavorResource = tuple[str, str]
"""A (flavor name, resource name) pair: the unit quota is counted in."""


class QueueingStrategy(enum.Enum):
    """Kueue concepts/cluster_queue#queueing-strategy: StrictFIFO blocks a queue behind its
    head; BestEffortFIFO sets an inadmissible head aside and tries the next."""

    STRICT_FIFO = "StrictFIFO"
    BEST_EFFORT_FIFO = "BestEffortFIFO"


class WithinQueue(enum.Enum):
    """``preemption.withinClusterQueue`` (Kueue concepts/preemption)."""

    NEVER = "never"
    LOWER_PRIORITY = "lower-priority"
    LOWER_OR_NEWER_EQUAL_PRIORITY = "lower-or-newer-equal-priority"


class Reclaim(enum.Enum):
    """``preemption.reclaimWithinCohort``: evict jobs of borrowing queues to get one's nominal
    quota back (Kueue concepts/preemption)."""

    NEVER = "never"
    LOWER_PRIORITY = "lower-priority"
    ANY = "any"


class WhenCanBorrow(enum.Enum):
    """``flavorFungibility.whenCanBorrow`` (Kueue concepts/cluster_queue#flavorfungibility)."""

    BORROW = "Borrow"
    TRY_NEXT_FLAVOR = "TryNextFlavor"


class WhenCanPreempt(enum.Enum):
    """``flavorFungibility.whenCanPreempt`` (Kueue's default is TryNextFlavor)."""

    PREEMPT = "Preempt"
    TRY_NEXT_FLAVOR = "TryNextFlavor"


class ShareStrategy(enum.Enum):
    """Fair-sharing preemption strategies (Kueue concepts/fair_sharing)."""

    LESS_THAN_OR_EQUAL_TO_FINAL_SHARE = "LessThanOrEqualToFinalShare"
    LESS_THAN_INITIAL_SHARE = "LessThanInitialShare"


class AdmissionOrder(enum.Enum):
    """How jobs of different cluster queues are ordered for admission.

    - ``kueue`` (default): Kueue's heads of queues, one position at a time; among equal
      positions non-borrowing (or, with fair sharing, lower share) first, then decayed usage;
    - ``slurm-classic`` / ``slurm-fair-tree``: queues by Slurm's fair-share factor, highest
      first, each queue's jobs in its own order (``slurm_fairshare.py``; accounts are the
      cohorts, users the cluster queues, shares their weights);
    - ``drf``: DRF progressive filling (Ghodsi et al., NSDI'11 §4): the next job is taken from
      the queue with the lowest weighted dominant share of the quota, recomputed after every
      admission of the cycle."""

    KUEUE = "kueue"
    SLURM_CLASSIC = "slurm-classic"
    SLURM_FAIR_TREE = "slurm-fair-tree"
    DRF = "drf"


@dataclass(frozen=True, slots=True)
class ResourceFlavor:
    """Nodes of this flavor: GPU type in ``gpu_types`` and pool in ``pools`` (empty: any)."""

    name: str
    gpu_types: tuple[str, ...] = ()
    pools: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Quota:
    """``None`` limits mean unlimited borrowing / lending everything unused."""

    nominal: float
    borrowing_limit: float | None = None
    lending_limit: float | None = None


@dataclass(frozen=True, slots=True)
class BorrowWithinCohort:
    """``preemption.borrowWithinCohort``: while borrowing, a job may evict jobs of other queues
    of lower priority whose priority is at most ``max_priority_threshold`` (None: any)."""

    enabled: bool = False
    max_priority_threshold: int | None = None


@dataclass(frozen=True, slots=True)
class Preemption:
    """A queue's preemption policy; ``min_runtime`` (seconds) protects a job after each start."""

    within_cluster_queue: WithinQueue = WithinQueue.NEVER
    reclaim_within_cohort: Reclaim = Reclaim.NEVER
    borrow_within_cohort: BorrowWithinCohort = BorrowWithinCohort()
    min_runtime: float = 0.0


@dataclass(frozen=True, slots=True)
class FlavorFungibility:
    when_can_borrow: WhenCanBorrow = WhenCanBorrow.BORROW
    when_can_preempt: WhenCanPreempt = WhenCanPreempt.TRY_NEXT_FLAVOR


@dataclass(frozen=True, slots=True)
class ClusterQueue:
    """``quotas`` maps (flavor, resource) to a quota; ``flavors`` is the order flavors are
    tried in (Kueue: the order of the resource group's flavors)."""

    name: str
    flavors: tuple[str, ...]
    quotas: Mapping[FlavorResource, Quota]
    cohort: str | None = None
    queueing_strategy: QueueingStrategy = QueueingStrategy.BEST_EFFORT_FIFO
    preemption: Preemption = Preemption()
    fungibility: FlavorFungibility = FlavorFungibility()
    weight: float = 1.0


@dataclass(frozen=True, slots=True)
class Cohort:
    name: str
    parent: str | None = None
    quotas: Mapping[FlavorResource, Quota] = field(default_factory=dict)
    weight: float = 1.0


@dataclass(frozen=True, slots=True)
class LocalQueue:
    name: str
    cluster_queue: str


@dataclass(frozen=True, slots=True)
class FairSharing:
    """Kueue's fair sharing (concepts/fair_sharing) and, with ``usage_half_life`` > 0, usage
    that decays (Kueue's admission fair sharing, KEP-4136; Slurm's PriorityDecayHalfLife)."""

    enabled: bool = False
    strategies: tuple[ShareStrategy, ...] = (ShareStrategy.LESS_THAN_OR_EQUAL_TO_FINAL_SHARE,
                                             ShareStrategy.LESS_THAN_INITIAL_SHARE)
    usage_half_life: float = 0.0
    admission_order: AdmissionOrder = AdmissionOrder.KUEUE


@dataclass(frozen=True, slots=True)
class Requeue:
    """Backoff after an eviction: base * 2^(n-1) seconds after the n-th, at most ``max_seconds``
    (the formula of Kueue's requeuingStrategy, backoffBaseSeconds / backoffMaxSeconds, which
    Kueue applies to waitForPodsReady evictions only; here to every eviction). 0 (the
    default) disables it."""

    base_seconds: float = 0.0
    max_seconds: float = 3600.0

    def ready_at(self, evicted_at: float, evictions: int) -> float:
        if not self.base_seconds or evictions <= 0:
            return evicted_at
        return evicted_at + min(self.max_seconds, self.base_seconds * 2 ** (evictions - 1))


@dataclass(frozen=True)
class TenantConfig:
    flavors: Mapping[str, ResourceFlavor]
    cluster_queues: Mapping[str, ClusterQueue]
    cohorts: Mapping[str, Cohort] = field(default_factory=dict)
    local_queues: Mapping[str, LocalQueue] = field(default_factory=dict)
    fair_sharing: FairSharing = FairSharing()
    requeue: Requeue = Requeue()
    source: str = "<config>"

    def cluster_queue_of(self, local_queue: str) -> ClusterQueue | None:
        """The cluster queue a job's queue name leads to: a local queue, or (for convenience,
        and as Philly's VCs do) a cluster queue of that name."""
        lq = self.local_queues.get(local_queue)
        if lq is not None:
            return self.cluster_queues[lq.cluster_queue]
        return self.cluster_queues.get(local_queue)
