"""The live replicas of a request-level run, indexed so that routing one request costs
O(log replicas), not a pass over every replica.

Routing (``serving/routing.py``) sends a request to the ready replica with the fewest
outstanding requests once every replica has run the iterations that start before its arrival.
A replica's ``advance(until)`` changes nothing while ``until < wakes_at`` and composes
(``advance(a)`` then ``advance(b)`` is ``advance(b)``), so only the replicas whose ``wakes_at``
has come need advancing: every other one is already as ``advance`` would leave it. Four heaps,
each entry checked against the replica's current value when it surfaces (stale ones are
dropped, and the heaps rebuilt when mostly stale):

- ``wakes``: (wakes_at, order) of live replicas, the ones to advance;
- ``loads``: (outstanding, order) of live ready replicas: the least loaded, ties to the
  earliest to go live (the order the old scan used);
- ``warming``: (ready, order) of live replicas not ready yet: the earliest to start;
- ``stops`` and ``retires``: (time, order) of replicas with a planned stop or retirement;

and, for cache-aware routing, the slots whose replica caches each prefix block.
"""

from __future__ import annotations

import heapq
import math
from functools import partial
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from dlsched.serving.routing import Slot

COMPACT_SLACK = 64  # stale heap entries tolerated beyond 3 per live replica


class ReplicaIndex:
    """A run's slots by the order they went live (their index here); the live ones indexed
    for routing."""

    def __init__(self, first_blocks: frozenset[int] = frozenset()) -> None:
        """``first_blocks``: the first prefix block of every request (cache-aware routing
        asks which replicas cache those)."""
        self.first_blocks = first_blocks
        self.slots: list[Slot] = []
        self.live: dict[int, Slot] = {}  # order -> slot, taking requests
        self._wake: dict[int, float] = {}  # order -> the wakes_at its heap entry holds
        self._load: dict[int, int] = {}  # order -> outstanding, for ready live slots
        self._wakes: list[tuple[float, int]] = []
        self._loads: list[tuple[int, int]] = []
        self._warming: list[tuple[float, int]] = []
        self._stops: list[tuple[float, int]] = []
        self._retires: list[tuple[float, int]] = []
        self._holders: dict[int, set[int]] = {}  # prefix block hash -> slots caching it

    def add(self, slot: Slot) -> None:
        """A new slot, live from now (its stop and retirement, if planned, are filed)."""
        order = len(self.slots)
        self.slots.append(slot)
        self.live[order] = slot
        heapq.heappush(self._warming, (slot.ready, order))
        if slot.stopped is not None:
            heapq.heappush(self._stops, (slot.stopped, order))
        if slot.retired is not None:
            heapq.heappush(self._retires, (slot.retired, order))
        cache = getattr(slot.replica, "cache", None)
        if cache is not None and self.first_blocks:
            cache.watch(self.first_blocks, partial(self._cached, order))
        self._file_wake(order)

    def holders(self, block: int) -> set[int]:
        """The slots whose replica caches prefix block ``block``, one of ``first_blocks``
        (live or not)."""
        return self._holders.get(block, set())

    def _cached(self, order: int, block: int, present: bool) -> None:
        holders = self._holders.setdefault(block, set())
        if present:
            holders.add(order)
        else:
            holders.discard(order)

    def retire(self, order: int) -> None:
        """The slot takes no more requests."""
        if self.live.pop(order, None) is not None:
            self._wake.pop(order, None)
            self._load.pop(order, None)

    def stop_due(self, now: float) -> None:
        """Slots stopped by ``now`` go away, live or retired (``Replica.stop``)."""
        while self._stops and self._stops[0][0] <= now:
            order = heapq.heappop(self._stops)[1]
            slot = self.slots[order]
            if slot.gone or slot.stopped is None:
                continue
            slot.replica.stop(slot.stopped)
            slot.gone = True
            self.retire(order)

    def retire_due(self, now: float) -> None:
        """Planned slots retired by ``now`` take no more requests."""
        while self._retires and self._retires[0][0] <= now:
            self.retire(heapq.heappop(self._retires)[1])

    def advance_due(self, now: float) -> None:
        """Every live replica runs the iterations that start before ``now``."""
        due = []
        while self._wakes and self._wakes[0][0] <= now:
            wake, order = heapq.heappop(self._wakes)
            if self._wake.get(order) == wake:
                del self._wake[order]
                due.append(order)
        for order in due:  # filed again after the pops: one still due waits for ``now``
            self.slots[order].replica.advance(now)
            self._refresh(order)

    def least_loaded(self, now: float) -> tuple[int | None, float]:
        """The ready slot whose replica has the fewest outstanding requests, ties to the
        earliest live, and that count ((None, inf) when none is ready)."""
        while self._warming and self._warming[0][0] <= now:
            order = heapq.heappop(self._warming)[1]
            if order in self.live:
                self._file_load(order)
        while self._loads:
            load, order = self._loads[0]
            if self._load.get(order) == load:
                return order, load
            heapq.heappop(self._loads)
        return None, math.inf

    def earliest_warming(self) -> int | None:
        """The live slot whose replica starts first (ties to the earliest live); asked when
        none is ready."""
        while self._warming and self._warming[0][1] not in self.live:
            heapq.heappop(self._warming)
        return self._warming[0][1] if self._warming else None

    def enqueue(self, order: int, request: int, now: float) -> None:
        self.slots[order].replica.enqueue(request, now)
        self._refresh(order)

    def _refresh(self, order: int) -> None:
        """File the slot's current wake-up and, when it is ready, its load."""
        self._file_wake(order)
        if order in self._load:
            self._file_load(order)

    def _file_wake(self, order: int) -> None:
        wake = self.slots[order].replica.wakes_at
        if self._wake.get(order) != wake:
            self._wake[order] = wake
            if wake < math.inf:
                heapq.heappush(self._wakes, (wake, order))
                if len(self._wakes) > self._bound():
                    self._wakes = [(w, o) for o, w in self._wake.items() if w < math.inf]
                    heapq.heapify(self._wakes)

    def _file_load(self, order: int) -> None:
        load = self.slots[order].replica.outstanding
        if self._load.get(order) != load:
            self._load[order] = load
            heapq.heappush(self._loads, (load, order))
            if len(self._loads) > self._bound():
                self._loads = [(n, o) for o, n in self._load.items()]
                heapq.heapify(self._loads)

    def _bound(self) -> int:
        """Entries a heap may hold before it is rebuilt from the current values."""
        return 3 * len(self.live) + COMPACT_SLACK
