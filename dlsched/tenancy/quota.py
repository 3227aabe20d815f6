"""Quota accounting over the cohort tree, after Kueue's hierarchical cohorts (KEP-79,
``pkg/cache/resource_node.go``), for every (flavor, resource) ``fr``:

- ``guaranteed(n)`` = subtree quota - lending limit (0 without a lending limit): what node n
  keeps for itself and never lends.
- ``subtree(q)`` = nominal for a cluster queue; for a cohort, its own nominal plus, per child,
  ``subtree(child) - guaranteed(child)`` (what the child puts in the pool).
- usage of a cohort = sum over children of ``max(0, usage(child) - guaranteed(child))``.
- ``available(n)`` = subtree - usage at the root; below it
  ``max(0, guaranteed - usage) + available(parent)``, the parent part capped, with a borrowing
  limit, at ``subtree - guaranteed - max(0, usage - guaranteed) + borrowing_limit``.
- ``potential(n)`` (what n could use with the cohort idle) = subtree at the root, else
  ``guaranteed + potential(parent)``, capped at ``subtree + borrowing_limit``.
A job borrows when its queue's usage would exceed the queue's nominal quota.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from dlsched.tenancy.config import RESOURCES, FlavorResource, Quota, TenantConfig
from dlsched.workload.job import JobSpec

EPS = 1e-9


def request_of(spec: JobSpec) -> dict[str, float]:
    """What a job asks for, gang-whole: GPUs (shares summed), CPUs, memory and GPU memory
    (GB)."""
    n = spec.num_gpus
    asked = {"gpu": n * spec.gpu_share, "cpu": n * spec.cpus_per_gpu,
             "memory": n * spec.memory_gb_per_gpu, "gpu_memory": n * spec.gpu_memory_gb}
    return {r: v for r, v in asked.items() if v > 0}


@dataclass(frozen=True, slots=True)
class _Node:
    name: str
    parent: str | None
    quotas: Mapping[FlavorResource, Quota]


class QuotaTree:
    """The static part: the tree, subtree and guaranteed quotas (from the config only)."""

    def __init__(self, config: TenantConfig) -> None:
        self.config = config
        self.nodes: dict[str, _Node] = {}
        for cq in config.cluster_queues.values():
            self.nodes[cq.name] = _Node(cq.name, _cohort_key(cq.cohort), cq.quotas)
        for cohort in config.cohorts.values():
            self.nodes[_cohort_key(cohort.name)] = _Node(  # type: ignore[index]
                cohort.name, _cohort_key(cohort.parent), cohort.quotas)
        self.children: dict[str, list[str]] = {}
        for key, node in self.nodes.items():
            if node.parent is not None:
                self.children.setdefault(node.parent, []).append(key)
        self.resources = sorted({fr for n in self.nodes.values() for fr in n.quotas},
                                key=lambda fr: (fr[0], RESOURCES.index(fr[1])))
        self._members: dict[str, list[str]] = {}
        self.subtree: dict[str, dict[FlavorResource, float]] = {}
        self.guaranteed: dict[str, dict[FlavorResource, float]] = {}
        for key in self.nodes:
            self._fill(key)
        # Whether every guaranteed quota is whole: then ``Usage._shift`` adds, subtracts and
        # clips whole amounts at whole numbers only, exactly (``QuotaView._held``)
        self.whole_guaranteed = all(float(v).is_integer() for g in self.guaranteed.values()
                                    for v in g.values())

    def _fill(self, key: str) -> None:
        if key in self.subtree:
            return
        node = self.nodes[key]
        total = {fr: q.nominal for fr, q in node.quotas.items()}
        for child in self.children.get(key, ()):
            self._fill(child)
            for fr, value in self.subtree[child].items():
                total[fr] = total.get(fr, 0.0) + value - self.guaranteed[child].get(fr, 0.0)
        self.subtree[key] = total
        self.guaranteed[key] = {fr: max(0.0, total[fr] - q.lending_limit)
                                for fr, q in node.quotas.items() if q.lending_limit is not None}

    def nominal(self, key: str, fr: FlavorResource) -> float:
        quota = self.nodes[key].quotas.get(fr)
        return quota.nominal if quota else 0.0

    def borrowing_limit(self, key: str, fr: FlavorResource) -> float | None:
        quota = self.nodes[key].quotas.get(fr)
        return quota.borrowing_limit if quota else None

    def height(self, key: str) -> int:
        """Distance from node ``key`` to its furthest leaf (Kueue ``getNodeHeight``: a cohort
        with only queues below it has height 1, a queue 0)."""
        children = self.children.get(key, ())
        return max([min(len(children), 1)] + [self.height(c) + 1 for c in children
                                              if c not in self.config.cluster_queues])

    def cohort_members(self, cq: str) -> list[str]:
        """Every cluster queue of the cohort tree ``cq`` is in (itself included), cached."""
        cached = self._members.get(cq)
        if cached is None:
            cached = self._members[cq] = self._members_of(cq)
        return cached

    def _members_of(self, cq: str) -> list[str]:
        root = cq
        while self.nodes[root].parent is not None:
            root = self.nodes[root].parent  # type: ignore[assignment]
        out, stack = [], [root]
        while stack:
            key = stack.pop()
            if key in self.config.cluster_queues:
                out.append(key)
            stack.extend(self.children.get(key, ()))
        return sorted(out)


def _cohort_key(name: str | None) -> str | None:
    # Cohorts and cluster queues share one key space; the prefix keeps them apart.
    return None if name is None else f"cohort:{name}"


class Usage:
    """The mutable part: usage per node and (flavor, resource), kept up the tree on every
    change so that ``available`` costs one walk to the root."""

    def __init__(self, tree: QuotaTree) -> None:
        self.tree = tree
        self.used: dict[str, dict[FlavorResource, float]] = {k: {} for k in tree.nodes}
        # ``available`` per (node, flavor resource) while no usage changes (a cohort's is
        # read by each of its queues)
        self._available: dict[tuple[str, FlavorResource], float] = {}

    def copy(self) -> Usage:
        twin = Usage.__new__(Usage)
        twin.tree, twin.used = self.tree, {k: dict(v) for k, v in self.used.items()}
        twin._available = {}
        return twin

    def add(self, cq: str, flavor: str, request: Mapping[str, float], sign: float = 1.0) -> None:
        for resource, amount in request.items():
            self._shift(cq, (flavor, resource), sign * amount)

    def _shift(self, key: str | None, fr: FlavorResource, delta: float) -> None:
        if self._available:
            self._available.clear()
        while key is not None and abs(delta) > EPS:
            used = self.used[key]
            g = self.tree.guaranteed[key].get(fr, 0.0)
            before = max(0.0, used.get(fr, 0.0) - g)
            used[fr] = used.get(fr, 0.0) + delta
            delta = max(0.0, used[fr] - g) - before
            key = self.tree.nodes[key].parent

    def usage(self, key: str, fr: FlavorResource) -> float:
        return self.used[key].get(fr, 0.0)

    def available(self, key: str, fr: FlavorResource) -> float:
        known = self._available.get((key, fr))
        if known is None:
            known = self._available[(key, fr)] = self._available_now(key, fr)
        return known

    def _available_now(self, key: str, fr: FlavorResource) -> float:
        tree, used = self.tree, self.usage(key, fr)
        subtree = tree.subtree[key].get(fr, 0.0)
        parent = tree.nodes[key].parent
        if parent is None:
            return max(0.0, subtree - used)
        g = tree.guaranteed[key].get(fr, 0.0)
        from_parent = self.available(parent, fr)
        limit = tree.borrowing_limit(key, fr)
        if limit is not None:
            from_parent = min(from_parent, subtree - g - max(0.0, used - g) + limit)
        return max(0.0, g - used) + max(0.0, from_parent)

    def potential(self, key: str, fr: FlavorResource) -> float:
        tree = self.tree
        subtree = tree.subtree[key].get(fr, 0.0)
        parent = tree.nodes[key].parent
        if parent is None:
            return subtree
        out = tree.guaranteed[key].get(fr, 0.0) + self.potential(parent, fr)
        limit = tree.borrowing_limit(key, fr)
        return out if limit is None else min(out, subtree + limit)

    def fits(self, cq: str, flavor: str, request: Mapping[str, float],
             allow_borrowing: bool = True) -> bool:
        for resource, amount in request.items():
            fr = (flavor, resource)
            if amount > self.available(cq, fr) + EPS:
                return False
            if not allow_borrowing and (
                    self.usage(cq, fr) + amount > self.tree.nominal(cq, fr) + EPS):
                return False
        return True

    def borrows(self, cq: str, flavor: str, request: Mapping[str, float]) -> bool:
        return any(self.usage(cq, (flavor, r)) + v > self.tree.nominal(cq, (flavor, r)) + EPS
                   for r, v in request.items())

    def borrow_height(self, cq: str, fr: FlavorResource, amount: float) -> tuple[int, bool]:
        """How far up the cohort tree ``amount`` more of ``fr`` must borrow: the height of the
        lowest node (the queue, then its cohorts) whose subtree quota holds it, and whether
        that node is below the root (Kueue ``FindHeightOfLowestSubtreeThatFits``)."""
        tree = self.tree
        parent = tree.nodes[cq].parent
        if parent is None or self.usage(cq, fr) + amount <= tree.subtree[cq].get(fr, 0.0) + EPS:
            return 0, parent is not None
        remaining = amount - self._local(cq, fr)
        key: str | None = parent
        root = parent
        while key is not None:
            if self.usage(key, fr) + remaining <= tree.subtree[key].get(fr, 0.0) + EPS:
                return tree.height(key), tree.nodes[key].parent is not None
            remaining -= self._local(key, fr)
            root, key = key, tree.nodes[key].parent
        return tree.height(root), False

    def _local(self, key: str, fr: FlavorResource) -> float:
        return max(0.0, self.tree.guaranteed[key].get(fr, 0.0) - self.usage(key, fr))

    def is_borrowing(self, cq: str, flavors: Iterable[FlavorResource] | None = None) -> bool:
        frs = self.used[cq] if flavors is None else flavors
        return any(self.usage(cq, fr) > self.tree.nominal(cq, fr) + EPS for fr in frs)
