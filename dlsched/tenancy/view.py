"""Quota usage across cycles (``Ledger``) and per cycle (``QuotaView``).

The ledger keeps the running jobs' quota usage from one cycle to the next and applies only what
changed (jobs started and jobs that ended or were evicted since the last cycle), instead of
rebuilding it from every running job each cycle. The per-cycle view starts from a copy of it and
follows the cycle's reservations (``reserve``) and evictions (``CycleState.evicted``, read lazily
because the cycle evicts and restores victims while it searches)."""

from __future__ import annotations

import bisect
from collections.abc import Collection, Iterable, Mapping

import numpy as np

from dlsched.cluster.cluster import Cluster
from dlsched.scheduling.state import CycleState
from dlsched.tenancy.assignment import flavor_mask
from dlsched.tenancy.config import ClusterQueue, TenantConfig
from dlsched.tenancy.preemption import Admitted, by_queue
from dlsched.tenancy.quota import QuotaTree, Usage, request_of
from dlsched.workload.job import Job


class FlavorNodes:
    """Node masks per flavor, per cluster (cached: clusters are immutable)."""

    def __init__(self, config: TenantConfig) -> None:
        self.config = config
        self._masks: dict[int, tuple[Cluster, dict[str, np.ndarray], frozenset[str]]] = {}

    def masks(self, cluster: Cluster) -> Mapping[str, np.ndarray]:
        return self._entry(cluster)[1]

    def everywhere(self, cluster: Cluster) -> frozenset[str]:
        """The flavors whose nodes are all of the cluster's (their mask narrows nothing)."""
        return self._entry(cluster)[2]

    def _entry(self, cluster: Cluster
               ) -> tuple[Cluster, dict[str, np.ndarray], frozenset[str]]:
        entry = self._masks.get(id(cluster))
        if entry is None or entry[0] is not cluster:
            masks = {name: flavor_mask(cluster, f) for name, f in self.config.flavors.items()}
            entry = (cluster, masks, frozenset(n for n, m in masks.items() if m.all()))
            self._masks[id(cluster)] = entry
        return entry


class Ledger:
    """The running jobs' quota usage, kept across cycles: ``update`` diffs the snapshot's
    running jobs against the last cycle's (a set difference) and adds or removes only those."""

    def __init__(self, config: TenantConfig, tree: QuotaTree, flavors: FlavorNodes) -> None:
        self.config, self.flavors = config, flavors
        self.usage = Usage(tree)
        self.admitted: dict[str, Admitted] = {}
        self.assigned: dict[str, str] = {}  # job id -> the flavor the tenant layer assigned
        self._allocations: dict[str, tuple[int, ...]] = {}
        # The running jobs' start times, sorted (``protection_ends``), and per cluster queue
        # the GPUs its admitted jobs hold (``rates``; kept while every request is whole: sums
        # of whole numbers do not depend on their order, so they equal a fresh sum).
        self.starts: list[float] = []
        self._started_at: dict[str, float] = {}
        self.rates: dict[str, float] = {}
        self._counts: dict[str, int] = {}
        self.integral = True
        # ``told``: every start goes through the tenant layer's Reserve, which tells it here
        # (set by the tenant layer when no other path starts or moves jobs): the update then
        # reads the core's running table by set differences instead of every running job.
        self.told = False
        self._started: list[str] = []
        # The core's ``running_changes`` at the last update: one more per launch, stop or
        # re-rate, so a count that grew by exactly the told starts now running says that no
        # job left the table (``_update_told`` then skips its set difference); otherwise the
        # core's journal names the jobs of those changes, among them every job that left.
        self._changes: int | None = None
        # Changes of the running table as of the last ``update``: every job gone (finished,
        # evicted, moved; also one started and gone between two updates), and per cluster
        # queue (by ``JobSpec.queue``) every job started. A failed victim search is carried
        # to later cycles while both stay as they were (``TenantAdmission.carried_miss``).
        self.stops = 0
        self._down: frozenset[int] = frozenset()  # the down nodes as of the last update
        self.starts_in: dict[str | None, int] = {}
        self.version = 0  # bumped whenever ``usage`` changes (memos across cycles)

    def started(self, job_id: str) -> None:
        self._started.append(job_id)

    def update(self, state: CycleState) -> None:
        masks, gpu_node = self.flavors.masks(state.cluster), state.cluster.gpu_node
        started, self._started = self._started, []
        down = state.snapshot.down_nodes
        if down is not self._down and self._down - down:  # repaired nodes: GPUs freed, as
            self.stops += 1  # by a stop (a carried miss may fit now)
        self._down = down
        if self.told and self.integral and self._update_told(state, started, masks, gpu_node):
            return
        running = {job.job_id: job for job in state.snapshot.running}
        self.stops += sum(1 for job_id in dict.fromkeys(started) if job_id not in running)
        for job_id in [j for j in self._allocations if j not in running]:
            self._remove(job_id)
            self.assigned.pop(job_id, None)
        for job_id, job in running.items():
            known = self._allocations.get(job_id)
            if known is not None and known == job.allocation:
                continue
            if job_id in self.admitted:  # moved or resized: account it afresh
                self._remove(job_id)
            self._add(job, masks, gpu_node)

    def _update_told(self, state: CycleState, started: list[str],
                     masks: Mapping[str, np.ndarray], gpu_node: np.ndarray) -> bool:
        """The update from the starts told and the jobs gone from the core's running table;
        False (nothing changed) when they do not account for the running jobs."""
        table = getattr(state.snapshot.running, "mapping", None)  # the core's dict, read-only
        if table is None:
            return False
        known, told = self._allocations, list(dict.fromkeys(started))
        new = [job_id for job_id in told if job_id in table]
        changes, last = state.snapshot.running_changes, self._changes
        self._changes = changes
        gone: Collection[str] = ()
        if changes is None or last is None or changes - last != len(new):
            # jobs left the table: those the core's journal names, or a set difference
            moved = None if last is None or state.snapshot.journal is None else (
                state.snapshot.journal.since(last))
            if moved is None:
                gone = known.keys() - table.keys()
            else:
                gone = {job.job_id: None for job in moved
                        if job.job_id in known and job.job_id not in table}
        if any(job_id in known for job_id in new) or (
                len(known) - len(gone) + len(new) != len(table)):
            return False
        # jobs started since and gone already (finished or evicted before this update)
        self.stops += len(told) - len(new)
        for job_id in gone:  # whole requests: the order of removals changes no sum
            self._remove(job_id)
            self.assigned.pop(job_id, None)
        for job_id in new:
            self._add(table[job_id], masks, gpu_node)
        return True

    def _add(self, job: Job, masks: Mapping[str, np.ndarray], gpu_node: np.ndarray) -> None:
        self.version += 1
        job_id = job.job_id
        cq = self.config.cluster_queue_of(job.spec.queue)
        name = cq.name if cq is not None else None
        self.starts_in[name] = self.starts_in.get(name, 0) + 1
        self._allocations[job_id] = job.allocation
        self._forget_start(job_id)
        if job.run_started is not None:
            self._started_at[job_id] = job.run_started
            bisect.insort(self.starts, job.run_started)
        admitted = self._admitted(job, cq, masks, gpu_node)
        if admitted is not None:
            self.admitted[job_id] = admitted
            self.usage.add(admitted.cq, admitted.flavor, admitted.request)
            if self.integral and not all(float(v).is_integer()
                                         for v in admitted.request.values()):
                self.integral = False
            self._counts[admitted.cq] = self._counts.get(admitted.cq, 0) + 1
            self.rates[admitted.cq] = (self.rates.get(admitted.cq, 0.0)
                                       + admitted.request.get("gpu", 0.0))

    def _forget_start(self, job_id: str) -> None:
        start = self._started_at.pop(job_id, None)
        if start is not None:
            del self.starts[bisect.bisect_left(self.starts, start)]

    def _remove(self, job_id: str) -> None:
        self.version += 1
        self.stops += 1
        a = self.admitted.pop(job_id, None)
        self._allocations.pop(job_id, None)
        self._forget_start(job_id)
        if a is not None:
            self.usage.add(a.cq, a.flavor, a.request, -1.0)
            count = self._counts[a.cq] = self._counts[a.cq] - 1
            if count:
                self.rates[a.cq] -= a.request.get("gpu", 0.0)
            else:
                del self._counts[a.cq], self.rates[a.cq]

    def usage_of(self, running: Iterable[Job], cluster: Cluster) -> Usage:
        """A fresh usage of ``running`` (the core's running jobs now), each charged to the
        flavor this ledger gave it, without changing the ledger: ``usage`` is as of the last
        cycle's start, before that cycle's starts, which a service that stays idle after them
        would show until the next cycle (the API's ``/v1/tenants``)."""
        usage = Usage(self.usage.tree)
        masks, gpu_node = self.flavors.masks(cluster), cluster.gpu_node
        for job in running:
            admitted = self._admitted(job, self.config.cluster_queue_of(job.spec.queue),
                                      masks, gpu_node)
            if admitted is not None:
                usage.add(admitted.cq, admitted.flavor, admitted.request)
        return usage

    def protection_ends(self, now: float, min_runtime: float) -> float | None:
        """The earliest ``run_started + min_runtime`` after ``now`` among the running jobs
        (``scheduling.plugins.preemption.protection_ends`` without its pass over them)."""
        starts = self.starts
        at = bisect.bisect_right(starts, now, key=lambda s: s + min_runtime)
        return starts[at] + min_runtime if at < len(starts) else None

    def _admitted(self, job: Job, cq: ClusterQueue | None, masks: Mapping[str, np.ndarray],
                  gpu_node: np.ndarray) -> Admitted | None:
        """``job`` as its cluster queue ``cq`` admitted it (None: no queue with flavors)."""
        if cq is None or not cq.flavors:
            return None
        flavor = self.assigned.get(job.job_id)
        if flavor is None:  # started outside the tenant layer: the first flavor holding it
            node = int(gpu_node[job.allocation[0]]) if job.allocation else -1
            flavor = next((f for f in cq.flavors if node >= 0 and masks[f][node]),
                          cq.flavors[0])
        return admitted_of(job, cq.name, flavor)


class QuotaView:
    """One cycle's quota usage. It keeps the cycle's eviction table and time, not the
    ``CycleState``: the state's scratchpad holds this view, and a reference back would make a
    cycle per scheduling cycle that only the garbage collector frees (the simulator turns it
    off while it runs)."""

    def __init__(self, config: TenantConfig, ledger: Ledger, state: CycleState) -> None:
        self.config, self.now, self.evicted = config, state.now, state.evicted
        ledger.update(state)
        self.usage = ledger.usage.copy()
        self.admitted: Mapping[str, Admitted] = ledger.admitted
        self._evicted: set[str] = set()
        self.version = 0  # bumped whenever usage changes within the cycle (for memos)
        self._grouped_cache: dict[str, list[Admitted]] | None = None
        self._without: tuple[frozenset[str], dict[str, list[Admitted]]] = (frozenset(), {})
        self._protected: bool | None = None
        self.holds: dict[str, list[tuple[str, Mapping[str, float]]]] = {}
        # Versions are ids: a change takes a new one, but holds and releases that bring the
        # usage back to values it had since the last reservation or eviction take that
        # state's id again (``_held``), where every sum is exact (``exact_sums``).
        self._last = 0  # the last version given
        self._exact = ledger.integral  # and no start or hold of the cycle has a fraction
        self._held_sig: dict[str, tuple] = {}  # queue -> what it holds, as a hashable
        # holds -> version, since the last reservation or eviction (None: no hold yet)
        self._states: dict[frozenset, int] | None = None

    @property
    def _grouped(self) -> dict[str, list[Admitted]]:
        if self._grouped_cache is None:
            self._grouped_cache = by_queue(self.admitted.values())
        return self._grouped_cache

    @property
    def any_protected(self) -> bool:
        """Whether any running job is within its queue's minimum runtime (read lazily)."""
        if self._protected is None:
            now, queues = self.now, self.config.cluster_queues
            self._protected = any(now - a.started < queues[a.cq].preemption.min_runtime
                                  for a in self.admitted.values())
        return self._protected

    def sync(self) -> Usage:
        """Usage with the cycle's current evictions applied."""
        if self.evicted.keys() == self._evicted:  # as last applied (mostly: none)
            return self.usage
        now = set(self.evicted)
        self._rebase()
        for job_id in now - self._evicted:
            if job_id in self.admitted:
                a = self.admitted[job_id]
                self.usage.add(a.cq, a.flavor, a.request, -1.0)
        for job_id in self._evicted - now:
            if job_id in self.admitted:
                a = self.admitted[job_id]
                self.usage.add(a.cq, a.flavor, a.request)
        self._evicted = now
        return self.usage

    def reserve(self, admitted: Admitted) -> None:
        if self._exact:
            for amount in admitted.request.values():  # (inline: once a start)
                if not float(amount).is_integer() or abs(amount) >= _EXACT:
                    self._exact = False
        self._last += 1  # ``_rebase``, inline
        self.version = self._last
        self._states = {frozenset(self._held_sig.items()): self.version} if self.holds else None
        self.usage.add(admitted.cq, admitted.flavor, admitted.request)

    def hold(self, cq: str, flavor: str, amounts: Mapping[str, float]) -> None:
        """Keep quota of queue ``cq`` for a job that waits for it, until ``release``."""
        if self._exact and not _whole(amounts):
            self._exact = False
        self.usage.add(cq, flavor, amounts)
        held = self.holds.setdefault(cq, [])
        held.append((flavor, amounts))
        self._held_sig[cq] = tuple([(f, tuple(a.items())) for f, a in held])
        self._held()

    def release(self, cq: str) -> None:
        """Give back what ``hold`` kept for queue ``cq``."""
        for flavor, amounts in self.holds.pop(cq, ()):
            self.usage.add(cq, flavor, amounts, -1.0)
        self._held_sig.pop(cq, None)
        self._held()

    def _rebase(self) -> None:
        """A reservation or an eviction changed the usage: a new version, and the states
        that holds reach from here on are new ones too."""
        self._last += 1
        self.version = self._last
        self._states = {frozenset(self._held_sig.items()): self.version} if self.holds else None

    def _held(self) -> None:
        """A hold or a release changed the usage: the version of the state these holds give
        over the last reservation or eviction. With exact sums (whole amounts over a tree of
        whole guaranteed quotas: ``Usage._shift`` adds, subtracts and clips at whole
        numbers), every value of the usage is the same sum whatever order the holds were
        made and released in, so a state seen before has the same usage to the last bit
        (Kueue's holds of a cycle: one per queue, made and released job by job)."""
        if not (self._exact and exact_sums(self.usage.tree)):
            self._last += 1
            self.version = self._last
            return
        states = self._states
        if states is None:  # the first hold since the last change: the state before it
            states = self._states = {frozenset(): self.version}
        key = frozenset(self._held_sig.items())
        version = states.get(key)
        if version is None:
            self._last += 1
            version = states[key] = self._last
        self.version = version

    def running(self) -> Mapping[str, list[Admitted]]:
        """Running jobs by cluster queue, less those evicted so far in this cycle."""
        evicted = self.evicted
        if not evicted:
            return self._grouped
        key = frozenset(evicted)
        if self._without[0] != key:
            self._without = (key, {cq: [a for a in jobs if a.job_id not in evicted]
                                   for cq, jobs in self._grouped.items()})
        return self._without[1]


def exact_sums(tree: QuotaTree) -> bool:
    """Whether whole amounts stay whole through ``Usage._shift`` over ``tree``: every
    guaranteed quota is whole (then every sum and clip is of whole numbers, exact in floats
    below 2**53)."""
    return tree.whole_guaranteed


def _whole(amounts: Mapping[str, float] | Mapping[tuple, float]) -> bool:
    return all(float(v).is_integer() and abs(v) < _EXACT for v in amounts.values())


_EXACT = float(2 ** 50)  # whole floats below this add and subtract exactly, with room


def admitted_of(job: Job, cq: str, flavor: str) -> Admitted:
    start = job.run_started if job.run_started is not None else job.spec.submit_time
    return Admitted(job.job_id, cq, flavor, request_of(job.spec), job.spec.priority, start,
                    job.spec.submit_time)
