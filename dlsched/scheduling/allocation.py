"""Allocation policies: the extension point of elastic, round-based policies.

Policies such as Pollux (Qiao et al., OSDI'21 §4), Sia (Jayaram Subramanya et al., SOSP'23),
Optimus (Peng et al., EuroSys'18), AFS (Hwang et al., NSDI'21) and ElasticFlow (Gu et al.,
ASPLOS'23) do not place one job at a time: every round they decide how many GPUs, of which type
and on which nodes, every active job should hold. An ``AllocatePlugin`` returns that target as
data; the core turns the difference from the current state into decisions:

- a running job whose target lists the same nodes (as a multiset) keeps its GPUs untouched;
- a running job with another target is **resized**: it checkpoints and restarts on the new
  workers (the core charges the restart overhead, as a preemption would, but it is counted as a
  resize and the job never waits);
- a running job without a target (or with an empty one) is preempted back to the queue;
- a waiting job with a target starts on it.

Targets name nodes, not GPUs: ``Assignment.nodes`` holds one node index per worker, so an
elastic job's worker count is ``len(nodes)``; a rigid job (not ``spec.is_elastic``) must get
exactly ``spec.num_gpus`` workers or none. The core picks free GPU indices on those nodes. A
target that does not fit (more workers on a node than it has GPUs once every shrink and
preemption is applied) is an error of the policy, reported as such.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from dlsched.workload.job import HostShare

if TYPE_CHECKING:
    from dlsched.cluster.cluster import Cluster
    from dlsched.scheduling.state import CycleState
    from dlsched.workload.job import Job


@dataclass(frozen=True, slots=True)
class Assignment:
    """Where a job's workers should run: one node index per worker, sorted.

    ``share``: the fraction of each GPU the job takes (None: its spec's ``gpu_share``); below 1
    two jobs may share a GPU (Gavel's packed pairs, Gandiva's packing). ``gpus``: the exact GPU
    per worker when the policy must choose them (to put a job beside its partner); None lets
    the core pick free GPUs on ``nodes``. ``host``: host CPUs and memory per worker when the
    policy decides them (Synergy); None leaves the job with its spec's."""

    nodes: tuple[int, ...]
    share: float | None = None
    gpus: tuple[int, ...] | None = None
    host: HostShare | None = None

    def __post_init__(self) -> None:
        if tuple(sorted(self.nodes)) != self.nodes:
            object.__setattr__(self, "nodes", tuple(sorted(self.nodes)))
        if self.gpus is not None:
            object.__setattr__(self, "gpus", tuple(sorted(self.gpus)))
            if len(self.gpus) != len(self.nodes):
                raise ValueError("an assignment names one GPU per worker")
        if self.share is not None and not 0 < self.share <= 1:
            raise ValueError(f"share must be in (0, 1], got {self.share}")

    def keeps(self, job: Job, cluster: Cluster) -> bool:
        """Whether a running job already runs exactly like this (no resize needed)."""
        gpu_node, held = cluster.gpu_node_list, job.allocation  # Assignment.of(job).nodes
        if len(held) == 1:  # most jobs: no list to sort
            if len(self.nodes) != 1 or gpu_node[held[0]] != self.nodes[0]:
                return False
        elif tuple(sorted([gpu_node[g] for g in held])) != self.nodes:
            return False
        if self.gpus is not None and self.gpus != tuple(sorted(held)):
            return False
        if self.host != job.host:
            return False
        share = self.share if self.share is not None else job.spec.gpu_share
        shares = job.shares
        if len(shares) == 1:  # most jobs: no generator
            return abs(shares[0] - share) < 1e-9
        return all(abs(s - share) < 1e-9 for s in shares)

    @property
    def num_workers(self) -> int:
        return len(self.nodes)

    def per_node(self) -> Counter[int]:
        return Counter(self.nodes)

    @classmethod
    def of(cls, job: Job, cluster: Cluster) -> Assignment:
        """A running job's current assignment (empty when it holds no GPUs)."""
        gpu_node = cluster.gpu_node
        return cls(tuple(sorted(int(gpu_node[g]) for g in job.allocation)))


class Targets(dict[str, Assignment]):
    """A plugin's targets given as a change: ``kept`` names running jobs that keep exactly
    what they hold (the same GPUs, share and host: what ``Assignment.keeps`` would find), so
    that a round where most jobs stay costs nothing for them (no ``Assignment`` built or
    checked). The mapping holds the other jobs' targets, as a plain mapping does; a running
    job in neither is preempted.

    ``placed``: the plugin vouches for every target as the allocation cycle would check it
    (a rigid job's own size, an elastic one's within its bounds, nodes that exist and that
    the job's static filters allow: ``filters.allowed_nodes``), and for every running job's
    target as a change (``keeps`` would be False): the cycle then checks none of them. For
    a policy that places each job itself on nodes it picked from those filters (Gavel's
    simulator moves ~60 jobs a round in agnostic max-min); a test of the policy runs the
    checks its targets skip."""

    __slots__ = ("kept", "placed")

    def __init__(self, targets: Mapping[str, Assignment], kept: frozenset[str],
                 placed: bool = False) -> None:
        super().__init__(targets)
        self.kept = kept
        self.placed = placed


@runtime_checkable
class AllocatePlugin(Protocol):
    """Decides, once per cycle, the target assignment of every active job (waiting + running).

    Returns ``{job_id: Assignment}``; a job left out holds no GPUs after the cycle. It reads the
    ``CycleState`` (snapshot of the cluster, running and waiting jobs, the throughput model and
    the time) and never mutates jobs. A plugin may also define ``worker_bounds(job)``, the
    fewest and most workers it may give a job (default: ``worker_bounds`` below), which the
    core checks its targets against, and ``rejections(state)``, the waiting jobs it refuses for
    good (job id -> reason; the core fails them)."""

    name: str

    def allocate(self, state: CycleState) -> Mapping[str, Assignment]: ...


def worker_bounds(job: Job) -> tuple[int, int]:
    """The fewest and most workers a job may run with (its requested size when rigid)."""
    spec = job.spec
    if not spec.is_elastic:
        return spec.num_gpus, spec.num_gpus
    low = spec.min_gpus if spec.min_gpus is not None else 1
    high = spec.max_gpus if spec.max_gpus is not None else spec.num_gpus
    return low, high
