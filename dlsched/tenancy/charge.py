"""An allocation target charged to its cluster queue's quota, worker by worker (used by
``allocation.QuotaGate``).

A worker is charged to the first flavor of its queue (in the queue's order) whose nodes hold the
worker's node and that serves the job's GPU types; its request is one worker's share of the
job's (``quota.request_of``: GPU share, CPUs and memory per GPU). A target that spans nodes of
two flavors is charged to each for its workers there: the policy chose the nodes, so Kueue's
flavor assignment of a whole podset to one flavor does not apply.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np

from dlsched.scheduling.allocation import Assignment
from dlsched.tenancy.assignment import assign, flavor_serves
from dlsched.tenancy.config import ClusterQueue, TenantConfig
from dlsched.tenancy.quota import Usage
from dlsched.tenancy.reasons import Reason
from dlsched.wording import count_of
from dlsched.workload.job import Job


@dataclass(frozen=True, slots=True)
class Worker:
    node: int
    gpu: int | None  # the GPU the policy named (None: the core picks one on ``node``)
    flavors: tuple[str, ...]  # the queue's flavors that hold the node and serve the job


def per_worker(job: Job, share: float | None) -> dict[str, float]:
    """One worker's request: its GPU share, CPUs and memory (``quota.request_of`` per GPU)."""
    spec = job.spec
    asked = {"gpu": spec.gpu_share if share is None else share, "cpu": spec.cpus_per_gpu,
             "memory": spec.memory_gb_per_gpu, "gpu_memory": spec.gpu_memory_gb}
    return {r: v for r, v in asked.items() if v > 0}


def workers_of(job: Job, target: Assignment, cq: ClusterQueue, config: TenantConfig,
               masks: Mapping[str, np.ndarray], gpu_node: np.ndarray) -> list[Worker]:
    """The target's workers, those on nodes the job holds now first (they are kept when the
    target has to be cut: no restart for nothing), then in the target's order."""
    usable = [f for f in cq.flavors if flavor_serves(config.flavors[f], job.spec)]
    gpus: Sequence[int | None] = target.gpus if target.gpus is not None else [None] * len(
        target.nodes)
    held = Counter(int(gpu_node[g]) for g in job.allocation)
    mine = set(job.allocation)
    first, rest = [], []
    for node, gpu in zip(target.nodes, gpus, strict=True):
        worker = Worker(node, gpu, tuple(f for f in usable if masks[f][node]))
        keep = gpu in mine if gpu is not None else held[node] > 0
        if keep and gpu is None:
            held[node] -= 1
        (first if keep else rest).append(worker)
    return first + rest


class Plan:
    """One job's target as its queue's quota sees it: which workers are granted so far, and
    the flavor each one is charged to."""

    def __init__(self, job: Job, cq: ClusterQueue, target: Assignment, workers: list[Worker],
                 low: int) -> None:
        self.job, self.cq, self.target, self.workers = job, cq, target, workers
        self.request = per_worker(job, target.share)
        self.low = min(low, len(workers))  # the fewest workers it may run with
        self.granted: dict[int, str] = {}  # worker index -> flavor charged

    @property
    def complete(self) -> bool:
        return len(self.granted) == len(self.workers)

    def grant(self, usage: Usage, borrow: bool) -> None:
        """Charge each worker not granted yet that fits (``borrow``: beyond the queue's
        nominal quota too); if the job would then have fewer than its minimum, take them all
        back (a gang is all-or-nothing)."""
        added = []
        for index, worker in enumerate(self.workers):
            if index in self.granted:
                continue
            for flavor in worker.flavors:
                if usage.fits(self.cq.name, flavor, self.request, allow_borrowing=borrow):
                    usage.add(self.cq.name, flavor, self.request)
                    self.granted[index] = flavor
                    added.append(index)
                    break
        if len(self.granted) < self.low:
            for index in added:
                usage.add(self.cq.name, self.granted.pop(index), self.request, -1.0)

    def assignment(self) -> Assignment | None:
        """The target, cut to the granted workers (None: none granted)."""
        if self.complete:
            return self.target
        if not self.granted:
            return None
        kept = [self.workers[i] for i in sorted(self.granted)]
        gpus = tuple(w.gpu for w in kept) if self.target.gpus is not None else None
        return Assignment(tuple(w.node for w in kept), self.target.share,
                          gpus)  # type: ignore[arg-type]

    def shortfall(self, usage: Usage, config: TenantConfig) -> tuple[Reason, str]:
        """Why its fewest workers do not fit, in Kueue's terms (``assignment.assign`` on the
        flavor of its first worker)."""
        if not self.workers or any(not w.flavors for w in self.workers):
            return Reason.NO_FLAVOR, f"the nodes it was given are in no flavor of {self.cq.name}"
        flavor = self.workers[0].flavors[0]
        need = {r: v * self.low for r, v in self.request.items()}
        only = replace(self.cq, flavors=(flavor,))
        found = assign(only, config.flavors, self.job.spec, need, usage)
        detail = f"{count_of(self.low, 'worker')} in {flavor}"
        return found.reason or Reason.NEEDS_PREEMPTION, detail
