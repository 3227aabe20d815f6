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
from bisect import bisect_right
from collections.abc import Hashable
from typing import Any

import numpy as np

from dlsched.policies.tiresias import DiscretizedLas
from dlsched.scheduling.cycle import _NO_CHANGE, _SMALLER_FAILED_TEXT
from dlsched.scheduling.decisions import CycleResult, Preempt, Start
from dlsched.scheduling.lane_books import FreeBooks
from dlsched.scheduling.placement import _NO_SINGLE
from dlsched.scheduling.plugins.gang import GangPermit
from dlsched.scheduling.plugins.scores import Consolidated
from dlsched.scheduling.profile import Profile
from dlsched.scheduling.state import ClusterSnapshot, CycleState, Layout, layout_of
from dlsched.slots import slot_builder
from dlsched.workload.job import Job

ENABLED = True  # tests compare the lane with the full cycle by turning it off
_NEVER = 1 << 62
_NO_SINGLE_TEXT = str(_NO_SINGLE)
_RESULT_DEFAULTS = CycleResult().__dict__
# ``Start(...)`` and ``Preempt(...)`` without their frozen ``__init__`` (~10^6 of each on the
# contended Philly table)
_new_start, _new_preempt = slot_builder(Start), slot_builder(Preempt)


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
        self._views: tuple | None = None  # the snapshot's books and memoryviews of them
        # The last cycle the lane decided, and its walk, for the core (``walk_of``)
        self.decided: tuple[CycleResult, LaneWalk] | None = None

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

    def views(self, snapshot: ClusterSnapshot) -> tuple[memoryview, list[int], memoryview]:
        """The snapshot's free shares and node versions as memoryviews (sliced, listed and
        summed without numpy's per-call costs), made once for the core's read-only views
        (the same arrays every cycle), and its whole-free counts as a list."""
        views = self._views
        if (views is None or views[0] is not snapshot.free or views[1] is not snapshot.node_free
                or views[2] is not snapshot.node_version):
            views = self._views = (snapshot.free, snapshot.node_free, snapshot.node_version,
                                   memoryview(snapshot.free), memoryview(snapshot.node_free),
                                   memoryview(snapshot.node_version))
        return views[3], views[4].tolist(), views[5]

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
        walk = LaneWalk(self, snapshot)
        result = walk.run(buckets)
        self.decided = (result, walk)
        return result


def walk_of(profile: Profile, result: CycleResult) -> LaneWalk | None:
    """The walk of the profile's lane that decided ``result`` (the cycle just run), once;
    None if the full cycle decided it."""
    lane = profile.__dict__.get("_tiresias_lane")
    if not lane or lane.decided is None or lane.decided[0] is not result:
        return None
    walk = lane.decided[1]
    lane.decided = None
    return walk


class LaneWalk(FreeBooks):
    """One cycle's walk (``bucket_scan.scan_buckets`` and the attempts it makes) on the books
    of ``FreeBooks``; it keeps the jobs it starts and evicts for the core (``started``,
    ``victims``: ``Scheduler._apply_lane``)."""

    def __init__(self, lane: TiresiasLane, snapshot: ClusterSnapshot) -> None:
        self.state = state = lane.scratchpad(snapshot)
        free, node_free, self.node_versions = lane.views(snapshot)
        FreeBooks.__init__(self, lane._layout, lane.largest,  # type: ignore[arg-type]
                           free, node_free, state.evicted)
        self.profile, self.sort, self.futile = lane.profile, lane.sort, lane.profile.futile
        self.snapshot = snapshot
        self.miss = _NEVER  # the fewest GPUs a job failed with since the last eviction
        self.every_node = lane.every_node  # the static mask of a whole job on any node
        self.versions: int | None = None  # starts and stops on every node, when first asked
        self.starts: list[Start] = []
        self.preemptions: list[Preempt] = []
        self.reasons: dict[str, str] = {}
        self.started: list[Job] = []  # the jobs of ``starts``, in order
        self.victims: list[Job] = []  # the jobs of ``preemptions``, in order

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
        asking at least the known miss, and comes back after an eviction clears it. A
        bucket's name starts with its jobs' GPU count (``Scheduler._bucket_of``)."""
        names, lists = [], []
        for name, entry in buckets.items():
            if entry[1]:
                names.append(name)
                lists.append(entry)
        heap = [(keys[0], n, 0) for n, (keys, _) in enumerate(lists)]
        heapq.heapify(heap)
        needs = [name[0] for name in names]
        dropped: list[int] = []
        ever_dropped: dict[int, None] = {}
        evicted, consider = self.state.evicted, self._consider
        while heap:
            key, n, index = heap[0]
            need = needs[n]
            if need >= self.miss:
                heapq.heappop(heap)
                dropped.append(n)
                ever_dropped[n] = None
                continue
            keys, jobs = lists[n]
            if not consider(jobs[index], need) and need == 1 and not evicted:
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
        """``_CycleRun.consider`` and ``_try_job`` for a whole job on any node. While jobs
        are evicted in this cycle no futility memo is kept (``_futility_key``): a job of the
        last queue (``no_victims``) is told by the free counts (``_victimless_miss``)."""
        state = self.state
        if state.evicted:
            if self.sort.no_victims(state, job):
                if need > self.whole:  # the last queue's heads after an eviction, mostly
                    self.futile[job.job_id] = None
                    return self._failed(job.job_id, need, self._miss_text(need))
                return self._start(job, need, ())
            return self._search(job, need, None) if need > self.whole else self._start(
                job, need, ())
        prior = self.futile.get(job.job_id)
        if prior is None:
            return self._search(job, need, None) if need > self.whole else self._start(
                job, need, ())
        memo = self._memo(job)
        if memo is not None and memo == prior:
            # The reason from last time, as it was (no plugin prefix, so it does not grow).
            own = self.snapshot.own_reason
            reason = (own(job) if own is not None else job.pending_reason) or _NO_CHANGE
            self.reasons[job.job_id] = reason
            return False
        return self._search(job, need, memo) if need > self.whole else self._start(
            job, need, ())

    def _search(self, job: Job, need: int, memo: tuple | None) -> bool:
        """``_attempt`` of a job asking more than is wholly free: the victim search, and the
        start on the GPUs it frees; else the job fails with the count's reason (as it read
        before the search: a failed search frees nothing)."""
        victims = self.fewest_victims(need, self.sort.post_filter(self.state, job))
        if not victims:
            job_id = job.job_id
            self.futile[job_id] = memo or self._memo(job)
            return self._failed(job_id, need, self._miss_text(need))
        return self._start(job, need, victims)

    def _start(self, job: Job, need: int, victims: tuple[Job, ...]) -> bool:
        """``_place`` (placement, the gang Permit every whole placement passes, Reserve)
        and ``consider``'s records of the start and its victims."""
        gpus = self.place(need)
        job_id, state = job.job_id, self.state
        state.started[job_id] = gpus
        self.sort.reserve(state, job, gpus)
        self.futile.pop(job_id, None)
        self.starts.append(_new_start(job_id, gpus, (job.spec.gpu_share,) * need))
        self.started.append(job)
        if victims:
            reason = f"preempted by {job_id}"
            self.preemptions.extend([_new_preempt(v.job_id, reason) for v in victims])
            self.victims.extend(victims)
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
            self.versions = sum(self.node_versions)
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
