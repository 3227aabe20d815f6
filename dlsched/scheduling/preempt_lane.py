"""The cycle's lane for Tiresias on one pool of whole GPUs (issue 14).

Under starvation promotion (Tiresias §3.2, PROMOTEKNOB) a contended cluster runs one cycle per
promotion, and nearly every one has one shape: the promoted job evicts jobs of the last queue
and starts on their GPUs, then the last queue's bucket heads fail by the free counts. The full
cycle (``cycle.py``: ``scan_buckets``, ``consider``, ``_try_job``, ``_attempt``,
``_fewest_victims``, ``place``) reaches those decisions through generic steps: numpy books,
``Status`` objects, per-job shape and mask lookups, Permit calls. Here the same walk is made
for the one case where each of those steps reduces to arithmetic on Python lists:

- the profile is Tiresias alone (``DiscretizedLas``: QueueSort, PostFilter, Reserve, wake-up)
  with its gang Permit, static filters and the consolidated placement; no same-queue
  preemption, protection, victim scope or tenant layer (``_plugin_plain``);
- every waiting job's bucket is whole GPUs on every node (one pool, no MIG, no demands beyond
  GPUs, no tensor-parallel groups), no job asks a fraction, no node is down and no node has an
  NVLink domain (``pick_gpus``' plain branch).

Then, as the full cycle finds: a whole job fits exactly when it asks no more than the GPUs
wholly free (``count_fits``; every node usable); ``place`` takes the tightest node holding it
all, else the consolidated score's node-by-node spread; every job has the same static shape,
so the known misses are one number. Tiresias' own hooks (``post_filter``, ``no_victims``,
``reserve``, ``rank_epoch`` through the futility memo, ``next_wakeup``) are called as the full
cycle calls them, in the same order, on a ``CycleState`` with the same evictions and starts;
the futility memo (``profile.futile``) is kept alike. The lane returns the ``CycleResult`` the
full cycle returns (``tests/policies/test_tiresias_lane.py`` compares every cycle of random
runs); for anything else it returns None and the full cycle decides.
"""

from __future__ import annotations

import heapq
import itertools
from bisect import bisect_right
from collections.abc import Hashable, Iterable, Sequence
from typing import Any

import numpy as np

from dlsched.policies.tiresias import DiscretizedLas
from dlsched.scheduling.cycle import _NO_CHANGE, _SMALLER_FAILED_TEXT
from dlsched.scheduling.decisions import CycleResult, Preempt, Start
from dlsched.scheduling.placement import _NO_SINGLE
from dlsched.scheduling.plugins.gang import GangPermit
from dlsched.scheduling.plugins.scores import Consolidated
from dlsched.scheduling.profile import Profile
from dlsched.scheduling.state import EPS, ClusterSnapshot, CycleState, Layout, layout_of
from dlsched.workload.job import Job

ENABLED = True  # tests compare the lane with the full cycle by turning it off
_NEVER = 1 << 62
_WHOLE = 1.0 - EPS  # a free share at least this is a whole free GPU
_NO_SINGLE_TEXT = str(_NO_SINGLE)
_RESULT_DEFAULTS = CycleResult().__dict__


def lane_of(profile: Profile) -> TiresiasLane | None:
    """The profile's lane, made when first asked (None: the profile is not the plain
    Tiresias one, and every cycle is the full one)."""
    lane = profile.__dict__.get("_tiresias_lane", False)
    if lane is False:
        lane = TiresiasLane(profile) if _profile_plain(profile) else None
        profile.__dict__["_tiresias_lane"] = lane
    return lane


def _profile_plain(profile: Profile) -> bool:
    """Tiresias alone, bucketed walk, gang Permit, static filters, consolidated placement."""
    sort = profile.queue_sort
    return (type(sort) is DiscretizedLas and not profile.strict_fifo
            and profile.static_order and not profile.allocators and not profile.pre_filters
            and not profile.dynamic_filters and not profile.blocked
            and profile.lazy_order is None and profile.victim_miss is None
            and profile.post_filters == (sort,) and profile.reserves == (sort,)
            and profile.wakeups == (sort,) and profile.no_victims == (sort,)
            and all(type(p) is GangPermit for p in profile.permits)
            and len(profile.scores) == 1 and type(profile.scores[0][0]) is Consolidated
            and profile.take_limit is None)


def _plugin_plain(sort: DiscretizedLas) -> bool:
    """Options the lane leaves to the full cycle (read each cycle: the tenant layer sets
    some of them on the plugin after the profile is built)."""
    return (not sort.same_queue_preemption and not sort.min_runtime
            and sort.victim_scope is None and sort.quiet is None and sort.own_preemption_only)


class TiresiasLane:
    """One profile's lane: the checks made once per cluster, and ``decide`` per cycle."""

    def __init__(self, profile: Profile) -> None:
        self.profile = profile
        self.sort: DiscretizedLas = profile.queue_sort  # type: ignore[assignment]
        self._cluster: Any = None
        self._layout: Layout | None = None
        self.largest = 0  # the most GPUs a node has
        self.every_node = np.ones(0, dtype=bool)  # the cluster's nodes, all (a mask)
        self._state: CycleState | None = None  # the scratchpad, kept from cycle to cycle
        self._plain_shape: tuple | None = None  # the static shape of a whole job, any node

    def _cluster_plain(self, snapshot: ClusterSnapshot) -> bool:
        """Whether the cluster's nodes have no NVLink domain and at most 255 GPUs each; notes
        its layout and the shape of a whole-GPU job every node allows (``static_shape``)."""
        cluster = snapshot.cluster
        if cluster is not self._cluster:
            self._cluster, layout = cluster, layout_of(cluster)
            plain = not any(layout.nvlink_domain) and max(layout.gpus, default=0) < 256
            self._layout = layout if plain else None
            self.largest = max(layout.gpus, default=0)
            self._state = None
            every_node = np.ones(cluster.num_nodes, dtype=bool)
            every_node.flags.writeable = False
            self.every_node = every_node
            signature = np.packbits(every_node).tobytes()
            self._plain_shape = (1.0, signature)
        return self._layout is not None

    def __deepcopy__(self, memo: dict) -> bool:
        """``Profile.instantiate`` copies a profile's fields: a run's copy makes its own lane
        (``lane_of``'s "not made yet")."""
        return False

    def scratchpad(self, snapshot: ClusterSnapshot) -> CycleState:
        """The scratchpad Tiresias' hooks read (time, evictions, starts), as a new cycle's:
        its arrays are the snapshot's read-only ones (the lane books in its lists); one
        object for the run, its fields set afresh each cycle."""
        state = self._state
        if state is None:
            state = self._state = CycleState(snapshot, snapshot.free, snapshot.node_free)
            return state
        state.snapshot, state.free, state.node_free = (snapshot, snapshot.free,
                                                      snapshot.node_free)
        state.evicted, state.started, state.scratch = {}, {}, {}
        return state

    def decide(self, snapshot: ClusterSnapshot) -> CycleResult | None:
        """The cycle's result, or None where the full cycle must decide."""
        buckets = snapshot.buckets
        if (not buckets or snapshot.has_fractional or snapshot.resources is not None
                or snapshot.mig is not None or snapshot.down_nodes
                or not _plugin_plain(self.sort) or not self._cluster_plain(snapshot)):
            return None
        plain = self._plain_shape
        for name in buckets:
            if name[1] != plain:  # (GPU count, static shape): ``Scheduler._bucket_of``
                return None
        return _Walk(self, snapshot).run(buckets)


class _Walk:
    """One cycle's walk (``bucket_scan.scan_buckets`` and the attempts it makes) on books kept
    in Python: each touched node's free shares, ``node_free`` (wholly free GPUs) per node,
    ``whole``."""

    def __init__(self, lane: TiresiasLane, snapshot: ClusterSnapshot) -> None:
        self.profile, self.sort = lane.profile, lane.sort
        self.largest = lane.largest
        self.snapshot = snapshot
        self.state = lane.scratchpad(snapshot)
        self.layout: Layout = lane._layout  # type: ignore[assignment]
        self.snapshot_free = snapshot.free
        # Each node's GPUs' free shares, read from the snapshot when the walk first touches
        # the node (a cycle touches a few of its nodes).
        self.node_gpus: dict[int, list[float]] = {}
        # Wholly free GPUs per node as bytes (a node has at most 255 GPUs: ``_cluster_plain``),
        # so that the lowest node with a given count is found by ``find`` in C.
        self.node_free = bytearray(snapshot.node_free.tolist())
        self.whole = sum(self.node_free)
        self.miss = _NEVER  # the fewest GPUs a job failed with since the last eviction
        self.every_node = lane.every_node  # the static mask of a whole job on any node
        self.versions: int | None = None  # starts and stops on every node, when first asked
        self.starts: list[Start] = []
        self.preemptions: list[Preempt] = []
        self.reasons: dict[str, str] = {}

    def run(self, buckets: Any) -> CycleResult:
        dropped = self._scan(buckets)
        wakeup = self.sort.next_wakeup(self.state)
        result = object.__new__(CycleResult)  # the frozen ``__init__`` sets field by field
        result.__dict__.update(_RESULT_DEFAULTS, starts=tuple(self.starts),
                               preemptions=tuple(self.preemptions), reasons=self.reasons,
                               next_wakeup=wakeup, blocked={}, bulk_reasons=tuple(
                                   (name, _SMALLER_FAILED_TEXT) for name in dropped))
        return result

    def _scan(self, buckets: Any) -> list[Hashable]:
        """``scan_buckets`` for jobs of one shape: a bucket is dropped at its first job
        asking at least the known miss, and comes back after an eviction clears it."""
        names, lists = [], []
        for name, entry in buckets.items():
            if entry[1]:
                names.append(name)
                lists.append(entry)
        heap = [(keys[0], n, 0) for n, (keys, _) in enumerate(lists)]
        heapq.heapify(heap)
        dropped: list[int] = []
        ever_dropped: dict[int, None] = {}
        evicted = self.state.evicted
        while heap:
            key, n, index = heap[0]
            keys, jobs = lists[n]
            job = jobs[index]
            need = job.spec.num_gpus
            if need >= self.miss:
                heapq.heappop(heap)
                dropped.append(n)
                ever_dropped[n] = None
                continue
            if not self._consider(job, need) and need == 1 and not evicted:
                break  # ``_nothing_else_fits``: one GPU on any node failed, nothing evicted
            if dropped and self.miss == _NEVER:
                for m in dropped:
                    m_keys = lists[m][0]
                    at = bisect_right(m_keys, key)
                    if at < len(m_keys):
                        heapq.heappush(heap, (m_keys[at], m, at))
                dropped.clear()
            if index + 1 < len(keys):
                heapq.heapreplace(heap, (keys[index + 1], n, index + 1))
            else:
                heapq.heappop(heap)
        return [names[n] for n in ever_dropped]

    def _consider(self, job: Job, need: int) -> bool:
        """``_CycleRun.consider`` and ``_try_job`` for a whole job on any node."""
        state, futile, job_id, sort = self.state, self.profile.futile, job.job_id, self.sort
        counted = False
        if state.evicted and sort.no_victims(state, job):  # ``_victimless_miss``
            if need > self.whole:  # the last queue's heads after an eviction, mostly
                futile[job_id] = None
                if need < self.miss:
                    self.miss = need
                self.reasons[job_id] = (_NO_SINGLE_TEXT if need == 1 else
                                        f"[placement] needs {need} GPUs, {self.whole} free "
                                        "on fitting nodes")
                return False
            counted = True
        memo = None
        if futile.get(job_id) is not None and not state.evicted:
            memo = self._memo(job)
            if memo is not None and memo == futile[job_id]:
                own = self.snapshot.own_reason
                reason = (own(job) if own is not None else job.pending_reason) or _NO_CHANGE
                self.reasons[job_id] = reason
                return False
        victims: tuple[Job, ...] = ()
        if not counted and need > self.whole:
            text = self._miss_text(need)
            victims = self._fewest_victims(need, sort.post_filter(state, job))
            if not victims:
                futile[job_id] = memo or self._memo(job)
                return self._failed(job_id, need, text)
        gpus = self._place(need)
        state.started[job_id] = gpus
        sort.reserve(state, job, gpus)
        futile.pop(job_id, None)
        self.starts.append(Start(job_id, gpus, (job.spec.gpu_share,) * need))
        if victims:
            reason = f"preempted by {job_id}"
            self.preemptions.extend(Preempt(v.job_id, reason) for v in victims)
            self.miss = _NEVER  # evictions may leave spare GPUs a failed job could use
        return True

    def _memo(self, job: Job) -> tuple | None:
        """``cycle._futility_key`` for a whole job on any node: the starts and stops on every
        node (``_version_sum`` over all of them) and Tiresias' ``rank_epoch`` there; None
        while jobs are evicted in this cycle, or when the epoch is None."""
        state = self.state
        if state.evicted:
            return None
        epoch = self.sort.rank_epoch(state, job, self.every_node)
        if epoch is None:
            return None
        if self.versions is None:
            self.versions = int(self.snapshot.node_version.sum())
        return (self.versions, epoch)

    def _failed(self, job_id: str, need: int, reason: str) -> bool:
        if need < self.miss:
            self.miss = need
        self.reasons[job_id] = reason
        return False

    def _miss_text(self, need: int) -> str:
        """``count_miss``'s reason for a whole job on any node asking more than is free."""
        if need == 1:
            return _NO_SINGLE_TEXT
        return f"[placement] needs {need} GPUs, {self.whole} free on fitting nodes"

    # -- the victim search (``_fewest_victims`` with ``_enough_room``, every node usable) --
    def _fewest_victims(self, need: int, candidates: Iterable[Job]) -> tuple[Job, ...]:
        """Evict candidates in order until the job fits, then give back each victim it does
        not need, the most important first. Told by counts: no job asks a fraction, so a
        running job's GPUs are wholly taken and evicting it frees exactly its GPU count
        (giving it back takes them again). ``state.evicted`` follows each step, as the
        candidates are read lazily against it; only the victims kept free their GPUs."""
        if isinstance(candidates, tuple | list) and not candidates:
            return ()
        pool = _enough_room(need - self.whole, iter(candidates))
        if pool is None:
            return ()
        evicted: list[Job] = []
        marked, whole = self.state.evicted, self.whole
        for victim in pool:
            marked[victim.job_id] = victim
            evicted.append(victim)
            whole += len(victim.allocation)
            if whole >= need:
                break
        else:
            for victim in evicted:
                del marked[victim.job_id]
            return ()
        for victim in list(reversed(evicted[:-1])):
            del marked[victim.job_id]
            whole -= len(victim.allocation)
            if whole < need:
                marked[victim.job_id] = victim
                whole += len(victim.allocation)
            else:
                evicted.remove(victim)
        for victim in evicted:  # ``CycleState.evict``: the GPUs given back
            self._shift(victim.allocation, victim.shares)
        return tuple(evicted)

    def _gpus_of(self, node: int) -> list[float]:
        """The node's GPUs' free shares as the walk has left them."""
        gpus = self.node_gpus.get(node)
        if gpus is None:
            first = self.layout.first_gpu[node]
            gpus = self.node_gpus[node] = self.snapshot_free[
                first:first + self.layout.gpus[node]].tolist()
        return gpus

    def _shift(self, gpus: Sequence[int], deltas: Sequence[float]) -> None:
        """``shift_free`` for each GPU: its delta added to its free share, clamped to 0..1,
        its node's whole count kept in step."""
        layout, node_free, node_gpus = self.layout, self.node_free, self.node_gpus
        gpu_node, first_gpu = layout.gpu_node, layout.first_gpu
        node, shares, first = -1, [], 0
        for gpu, delta in zip(gpus, deltas, strict=True):
            if gpu_node[gpu] != node:
                node = gpu_node[gpu]
                shares, first = node_gpus.get(node) or self._gpus_of(node), first_gpu[node]
            old = shares[gpu - first]
            new = old + delta
            new = 1.0 if new > 1.0 else (0.0 if new < 0.0 else new)
            shares[gpu - first] = new
            if old < _WHOLE <= new:
                node_free[node] += 1
                self.whole += 1
            elif new < _WHOLE <= old:
                node_free[node] -= 1
                self.whole -= 1

    # -- placement (``place`` with the consolidated score, every node usable) ------------
    def _place(self, need: int) -> tuple[int, ...]:
        """The GPUs ``place`` gives a whole job that fits (``need`` <= ``whole``): the
        tightest node holding it all (``_tightest``, lowest index on ties), else the
        consolidated score's ``spread``: the roomiest node (lowest index on ties) gives all
        it has while none holds the rest, then the tightest node holding the rest takes it
        (a node given all it had has no room left, so it is not met again)."""
        node_free, chosen, remaining = self.node_free, (), need
        find, largest = node_free.find, self.largest
        while True:
            for room in range(remaining, largest + 1):  # the least room holding the rest
                node = find(room)  # the lowest such node
                if node >= 0:
                    return chosen + self._pick(node, remaining)
            for room in range(min(remaining - 1, largest), 0, -1):  # the most room
                node = find(room)
                if node >= 0:
                    chosen += self._pick(node, room)
                    remaining -= room
                    break

    def _pick(self, node: int, count: int) -> tuple[int, ...]:
        """``pick_gpus`` for whole GPUs on a node without NVLink domains (its lowest wholly
        free GPUs), taken: their free share 0 (``take`` of a whole share clamps there)."""
        gpus = self.node_gpus.get(node) or self._gpus_of(node)
        first = self.layout.first_gpu[node]
        chosen = []
        for at, free in enumerate(gpus):
            if free >= _WHOLE:
                gpus[at] = 0.0
                chosen.append(first + at)
                if len(chosen) == count:
                    break
        self.node_free[node] -= count
        self.whole -= count
        return tuple(chosen)


def _enough_room(short: int, candidates: Any) -> Iterable[Job] | None:
    """``cycle._enough_room`` for whole GPUs on every node: the candidates to try, or None
    when all of them hold fewer than the ``short`` GPUs missing."""
    pulled: list[Job] = []
    need = short
    for victim in candidates:
        if need <= 0:
            return itertools.chain(pulled, [victim], candidates)
        pulled.append(victim)
        need -= len(victim.allocation)
    return pulled if need <= 0 else None

