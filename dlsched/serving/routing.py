"""Request-level simulation of one service: requests from a trace routed across its replicas.

Routing is join-the-shortest-queue on outstanding requests (least outstanding requests, as
vLLM's production router and Llumnix's dispatcher do; Winston, J. Appl. Prob. 1977, shows it
optimal for identical servers): a request goes to the replica with the fewest requests queued
or running among those started by its arrival (the earliest to start if none has), ties to the
lowest index. Before routing a request, every replica runs the iterations that start before its
arrival, so the counts are those the router would see. The replicas are indexed by when they
next change and by load (``serving/replica_index.py``), so a request costs O(log replicas)
(cache-aware routing compares the replicas that cache the request's first prefix block).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from dlsched.serving.autoscale import Autoscaler
from dlsched.serving.llm_replica import RequestLog
from dlsched.serving.replica_index import ReplicaIndex
from dlsched.serving.requests import RequestTrace


class Replica(Protocol):
    time: float
    busy_seconds: float
    iterations: int
    peak_batch: int
    rejected: list[int]
    lost: list[int]

    @property
    def outstanding(self) -> int: ...

    @property
    def wakes_at(self) -> float: ...  # ``advance(until)`` changes nothing for until < it

    def enqueue(self, request: int, now: float) -> None: ...

    def advance(self, until: float) -> None: ...

    def stop(self, at: float) -> None: ...


ReplicaFactory = Callable[[RequestLog, float], Replica]


@dataclass
class Slot:
    """A replica's life: GPUs held from ``requested``, serving from ``ready``, taking no new
    requests after ``retired`` (None: never retired), gone at ``stopped`` (the scheduler
    preempted it or its node failed, or, when ``ended``, its job ended: what it still held
    is lost; None: never stopped)."""

    replica: Replica
    requested: float
    ready: float
    retired: float | None = None
    stopped: float | None = None
    ended: bool = False  # ``stopped`` is its job's end (``JobSpec.ends_at``), not a stop
    gone: bool = False  # stopped already (``ReplicaIndex.stop_due``)

    @property
    def stopped_early(self) -> bool:
        """The scheduler stopped it before its job's end (``replica_stops``)."""
        return self.stopped is not None and not self.ended

    def held_until(self, end: float) -> float:
        """When its GPUs go back: the end of the run, or once retired and drained; at the
        latest when it was stopped."""
        drained = self._drained(end)
        return drained if self.stopped is None else min(self.stopped, drained)

    def _drained(self, end: float) -> float:
        if self.retired is None:
            return end
        if self.replica.iterations == 0:  # retired before it served: freed at once
            return self.retired
        return max(self.retired, min(self.replica.time, end))


def held_end(slots: Sequence[Slot], end: float) -> float:
    """Until when a run's replicas held GPUs: ``end`` (its last request done), or a later job
    end (``Slot.ended``): a replica placed late held its GPUs to its job's end though it
    served nothing more, or had lost what it held."""
    return max([end, *(s.stopped for s in slots if s.ended and s.stopped is not None)])


def simulate_requests(trace: RequestTrace, make: ReplicaFactory,
                      starts: Sequence[float]) -> tuple[RequestLog, list[Replica]]:
    """Serve ``trace`` on one replica per entry of ``starts`` (when each became available)."""
    log, slots = simulate_slots(trace, make, starts)
    return log, [s.replica for s in slots]


# requested, ready, retired, stopped, ended (``stopped`` is its job's end: ``Slot.ended``)
PlanEntry = tuple[float, float, float | None, float | None, bool]
Run = tuple[float, float | None]  # a replica job's run: start, when the scheduler stopped it


@dataclass(frozen=True)
class Schedule:
    """When a pool's replicas serve: the ``k``-th from ``starts[k]`` (stopped at ``stops[k]``
    when given and not None, at its job's end where ``ended[k]``), and ``plan``'s replicas
    (requested, ready, retired, stopped, ended)."""

    starts: tuple[float, ...]
    stops: tuple[float | None, ...] = ()
    plan: tuple[PlanEntry, ...] = ()
    ended: tuple[bool, ...] = ()

    @classmethod
    def of_runs(cls, runs: Sequence[Sequence[Run]], restart: float,
                ends: Sequence[float | None] = ()) -> Schedule:
        """Replica jobs' runs as the scheduler core ran them: each serves from its first
        start; one the core stopped loses what it held then and serves again ``restart``
        seconds (the run's restart overhead) after each later start. A run that ran on to
        its end (stop None) ends at its replica's ``ends[k]`` when given (its job's end,
        ``JobSpec.ends_at``): what it still holds then is lost too, though it was not
        stopped. A replica never placed (no runs) serves nothing."""
        ends = list(ends) + [None] * (len(runs) - len(ends))
        first = [(r[0][0], _gone(r[0][1], end)) for r, end in zip(runs, ends, strict=True) if r]
        return cls(tuple(at for at, _ in first), tuple(stop for _, (stop, _) in first),
                   tuple((at, at + restart, None, *_gone(stop, end))
                         for r, end in zip(runs, ends, strict=True) for at, stop in r[1:]),
                   tuple(ended for _, (_, ended) in first))

    def serve(self, trace: RequestTrace, make: ReplicaFactory,
              scaler: Autoscaler | None = None) -> tuple[RequestLog, list[Slot]]:
        return simulate_slots(trace, make, self.starts, scaler, self.plan, self.stops,
                              self.ended)


def _gone(stop: float | None, end: float | None) -> tuple[float | None, bool]:
    """When a run's replica went away, and whether at its job's end: a run the scheduler
    did not stop (``stop`` None) ends with its job at ``end`` (None: not in the run)."""
    return (stop, False) if stop is not None or end is None else (end, True)


def simulate_slots(trace: RequestTrace, make: ReplicaFactory, starts: Sequence[float],
                   scaler: Autoscaler | None = None, plan: Sequence[PlanEntry] = (),
                   stops: Sequence[float | None] = (), ended: Sequence[bool] = ()
                   ) -> tuple[RequestLog, list[Slot]]:
    """Serve ``trace``: replicas start at ``starts`` (the ``k``-th stopped at ``stops[k]``
    when given and not None, where ``ended[k]`` at its job's end); ``scaler`` adds and
    retires replicas; ``plan`` gives more as (requested, ready, retired or None, stopped or
    None, ended): a schedule replayed as is. A stopped replica's requests still queued or
    running are lost (``Replica.stop``), whether the scheduler stopped it or its job ended."""
    log = RequestLog.empty(trace.arrival, trace.prompt, trace.output, trace.prefix)
    index = ReplicaIndex(frozenset(p[0] for p in log.prefix if p) if log.prefix else frozenset())
    for k, s in enumerate(starts):
        index.add(Slot(make(log, s), s, s, None, stops[k] if k < len(stops) else None,
                       k < len(ended) and ended[k]))
    planned = sorted(plan, key=lambda p: (p[0], p[1]))  # retired may be None
    next_plan = 0
    for request, t in enumerate(trace.arrival.tolist()):
        if scaler is not None:
            while scaler.next_tick <= t:
                _tick(scaler, index, make, log)
        while next_plan < len(planned) and planned[next_plan][0] <= t:  # asked for by now
            requested, ready, retired, stopped, at_end = planned[next_plan]
            next_plan += 1
            index.add(Slot(make(log, ready), requested, ready, retired, stopped, at_end))
        index.stop_due(t)
        index.retire_due(t)
        index.advance_due(t)
        _route(index, log, request, t)
    index.stop_due(math.inf)  # those stopped after the last arrival
    for slot in index.slots:
        slot.replica.advance(math.inf)
    return log, index.slots


def _route(index: ReplicaIndex, log: RequestLog, request: int, now: float) -> None:
    """Join the shortest queue among the ready replicas (cache-aware with prefix hashes),
    else the replica that starts first; every live one has run to ``now``."""
    best, least = index.least_loaded(now)
    if log.prefix is not None and best is not None:
        cached = _prefix_aware(index, now, log.prefix[request], least)
        best = best if cached is None else cached
    if best is None:
        best = index.earliest_warming()
    if best is not None:
        index.enqueue(best, request, now)


PREFIX_SLACK = 4  # extra outstanding requests a prefix hit may justify


def _prefix_aware(index: ReplicaIndex, now: float, hashes: tuple[int, ...],
                  least: float) -> int | None:
    """Mooncake's cache-aware choice (Qin et al., FAST'25, §6: the conductor weighs prefix
    reuse against load), simplified: among replicas within ``PREFIX_SLACK`` outstanding
    requests of the least loaded, the one caching the longest prefix of the request, ties to
    the less loaded, then the earliest live (its slot's order); None when none caches its
    first block. Only the replicas caching that block are looked at."""
    best, best_key = None, (0, 0, 0)
    for order in index.holders(hashes[0]) if hashes else ():
        slot = index.live.get(order)
        if slot is None or slot.ready > now or slot.replica.outstanding > least + PREFIX_SLACK:
            continue
        cache = getattr(slot.replica, "cache", None)
        hits = 0
        for h in hashes:
            if h not in cache.blocks:
                break
            hits += 1
        key = (hits, -slot.replica.outstanding, -order)
        if best is None or key > best_key:
            best, best_key = order, key
    return best


def _tick(scaler: Autoscaler, index: ReplicaIndex, make: ReplicaFactory,
          log: RequestLog) -> None:
    now = scaler.next_tick
    scaler.next_tick += scaler.policy.interval
    index.advance_due(now)
    live = list(index.live.items())
    outstanding = sum(s.replica.outstanding for _, s in live)
    desired = scaler.desired(now, len(live), outstanding)
    for _ in range(desired - len(live)):
        ready = now + scaler.policy.cold_start
        index.add(Slot(make(log, ready), now, ready))
    if desired < len(live):  # retire the least loaded, the still-warming first
        order = sorted(live, key=lambda kv: (kv[1].replica.outstanding, -kv[1].ready))
        for k, slot in order[:len(live) - desired]:
            slot.retired = now
            index.retire(k)
