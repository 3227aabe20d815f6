"""The cycle's lane for Tiresias on one pool of whole GPUs (issue 14).

Under starvation promotion (Tiresias §3.2, PROMOTEKNOB) a contended cluster runs one cycle per
promotion, mostly of one shape: the promoted job evicts jobs of the last queue and starts on
their GPUs, then the last queue's bucket heads fail by the free counts. The full cycle
(``cycle.py``) reaches those decisions through generic steps (numpy books, ``Status`` objects,
per-job shape and mask lookups, Permit calls); the lane makes the same walk (``lane_walk.py``)
where each step is arithmetic on counts (``lane_books.py``): the profile is Tiresias alone
with its gang Permit, static filters and the consolidated placement, with no same-queue
preemption, protection, victim scope or tenant layer; every waiting job's bucket is whole GPUs
on every node; no job asks a fraction, no node is down or has an NVLink domain. Every job then
has the same static shape, so the known misses are one number. Tiresias' hooks
(``post_filter``, ``no_victims``, ``reserve``, ``rank_epoch`` through the futility memo,
``next_wakeup``) are called as the full cycle calls them, on a ``CycleState`` with the same
evictions and starts; the futility memo (``profile.futile``) is kept alike. The lane returns
the full cycle's ``CycleResult`` (``tests/policies/test_tiresias_lane.py`` compares every
cycle, and the core after applying it). For anything else it returns None and the full cycle
decides.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dlsched.policies.tiresias import DiscretizedLas
from dlsched.scheduling.decisions import CycleResult
from dlsched.scheduling.lane_walk import LaneWalk
from dlsched.scheduling.plugins.gang import GangPermit
from dlsched.scheduling.plugins.scores import Consolidated
from dlsched.scheduling.profile import Profile
from dlsched.scheduling.state import ClusterSnapshot, CycleState, Layout, layout_of

ENABLED = True  # tests compare the lane with the full cycle by turning it off


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
        self._walk: LaneWalk | None = None  # the walk, kept from cycle to cycle

    def _cluster_plain(self, snapshot: ClusterSnapshot) -> bool:
        """Whether the cluster's nodes have no NVLink domain and at most 255 GPUs each; notes
        its layout and the shape of a whole-GPU job every node allows (``static_shape``)."""
        cluster = snapshot.cluster
        if cluster is not self._cluster:
            self._cluster, layout = cluster, layout_of(cluster)
            plain = not any(layout.nvlink_domain) and max(layout.gpus, default=0) < 256
            self._layout = layout if plain else None
            self.largest = max(layout.gpus, default=0)
            self._state = self._walk = None
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
        walk = self._walk
        if walk is None:
            walk = self._walk = LaneWalk(self)
        return walk.run(snapshot, buckets)
