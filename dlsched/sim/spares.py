"""Hot-spare nodes, held per node pool (``--hot-spares N``).

Large trainings keep spare nodes powered and out of scheduling, so that a failed node is
replaced at once (Llama 3, Dubey et al. 2024, §3.3.4; ``Scheduler.fail_node``). On a cluster
partitioned into pools (Philly's virtual clusters, a Slurm partition: ``Node.pool``) a job
may only run on its pool's nodes (``filters.NodePoolFilter``), so a spare serves its own pool:

- ``N`` spares are held in **each** pool: the last ``N`` nodes with GPUs of the pool, in the
  cluster's order (a CPU-only node never fails and cannot hold a GPU job's workers: as a
  spare it was taken for a failed GPU node and its job went back to the queue). Nodes
  without a pool form one group of their own (on a cluster without pools, the
  whole cluster: its last ``N`` nodes with GPUs, as before pools had spares).
- A failed node is replaced by a spare of its own group, never another pool's (the last held
  of its GPU type with at least its GPUs, else the last held): its jobs'
  workers move onto the spare, which joins the cycle. No spare is shared across pools: a
  pool-a job on a pool-b spare would run outside its pool, and once its node was repaired
  pool a would be a node short for good.
- The repaired node goes first to a job that a failure of its group stopped when no spare was
  left and that still waits in the queue (``owe``): it rejoins the cycle, as the spare that job
  lacked. Otherwise it becomes a spare of its own group again when that group is short of
  ``N``, else it rejoins the cycle. Spares exist so that a job hit by a failure restarts at
  once; keeping the repaired node idle as a spare while the job it was owed to waits would
  turn the spare against its purpose (before: the spare was refilled first, and such a job
  waited for a second repair). A job that restarted elsewhere meanwhile is owed nothing.
- A failure that finds its group without a spare left goes the way of a run without spares
  (``--resilience``: back to the queue, or a reshape) and is counted per group
  (``shortfalls``: the run's ``failures_without_spare``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from dlsched.cluster.cluster import Cluster
from dlsched.errors import ConfigError
from dlsched.wording import count_of


class HotSpares:
    """The spare nodes held now, per pool (None: nodes without a pool)."""

    def __init__(self, cluster: Cluster, per_pool: int) -> None:
        self.cluster = cluster
        self.per_pool = per_pool
        groups: dict[str | None, list[int]] = {}
        for index, node in enumerate(cluster.nodes):
            if node.num_gpus > 0:  # a CPU-only node never fails (failures go by GPUs) and
                groups.setdefault(node.pool, []).append(index)  # holds no GPU job's workers
        self.held: dict[str | None, list[int]] = {}
        self.shortfalls: dict[str | None, int] = {}
        # per group, the jobs failures without a spare sent back to the queue (``owe``): one
        # entry per node they lost, in the order they lost it
        self.owed: dict[str | None, list[str]] = {}
        if per_pool == 0:
            return
        for pool, nodes in groups.items():
            if len(nodes) <= per_pool:
                raise ConfigError(f"--hot-spares {per_pool}: spares are held in each pool, and "
                                  f"{_label(pool)} of cluster {cluster.name} has "
                                  f"{count_of(len(nodes), 'node')} with GPUs")
            self.held[pool] = nodes[len(nodes) - per_pool:]

    def nodes(self) -> frozenset[int]:
        """Every spare held now (down: no cycle places there)."""
        return frozenset(node for held in self.held.values() for node in held)

    def take(self, failed: int) -> int | None:
        """A spare of the failed node's pool, no longer held (None: none left, counted, or
        the run holds no spares)."""
        if self.per_pool == 0:
            return None
        node = self.cluster.nodes[failed]
        held = self.held[node.pool]
        if held:
            return held.pop(self._like(held, failed))
        self.shortfalls[node.pool] = self.shortfalls.get(node.pool, 0) + 1
        return None

    def _like(self, held: list[int], failed: int) -> int:
        """Index in ``held`` of the last spare like the failed node (its GPU type, at least
        its GPUs): its jobs' workers fit there (``Scheduler._spare_gpus``); else the last."""
        nodes = self.cluster.nodes
        want = nodes[failed]
        for index in range(len(held) - 1, -1, -1):
            spare = nodes[held[index]]
            if spare.gpu_type == want.gpu_type and spare.num_gpus >= want.num_gpus:
                return index
        return len(held) - 1

    def owe(self, failed: int, jobs: Iterable[str]) -> None:
        """``jobs`` lost a node to a failure of ``failed`` that found no spare of its pool: the
        pool's next repaired node is theirs while they wait (``keep``)."""
        if self.per_pool:
            self.owed.setdefault(self.cluster.nodes[failed].pool, []).extend(jobs)

    def keep(self, repaired: int, waiting: Callable[[str], bool] = lambda job: False) -> bool:
        """Whether the repaired node is held as a spare of its pool: its pool is short of
        spares and owes no node to a job still ``waiting`` (``owe``: that job gets it)."""
        pool = self.cluster.nodes[repaired].pool
        held = self.held.get(pool)
        if held is None or len(held) >= self.per_pool:
            return False
        owed = [job for job in self.owed.pop(pool, ()) if waiting(job)]
        if owed:
            self.owed[pool] = owed[1:]  # this node replaces the one the first of them lost
            return False
        held.append(repaired)
        return True

    def shortfall_counts(self) -> tuple[tuple[str, int], ...]:
        """(pool, failures that found no spare of it), by pool name ('' for no pool)."""
        if self.per_pool == 0:
            return ()
        return tuple(sorted((pool or "", n) for pool, n in self.shortfalls.items()))


def _label(pool: str | None) -> str:
    return "the group of nodes without a pool" if pool is None else f"pool {pool}"
