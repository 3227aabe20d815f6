"""Routing by index (``serving/replica_index.py``): a request advances only the replicas whose
next iteration has come, not every replica, and routes exactly as a pass over all of them."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from serving_helpers import flat_profile, trace

from dlsched.perf.inference.batch_latency import BatchLatency
from dlsched.serving.dnn_replica import DnnReplica
from dlsched.serving.llm_replica import LlmEngineConfig, LlmReplica, RequestLog
from dlsched.serving.requests import RequestTrace
from dlsched.serving.routing import PlanEntry, Replica, ReplicaFactory, simulate_slots


class CountingReplica(LlmReplica):
    advances = 0
    reads = 0  # of ``outstanding``

    def advance(self, until: float) -> None:
        CountingReplica.advances += 1
        super().advance(until)

    @property
    def outstanding(self) -> int:
        CountingReplica.reads += 1
        return super().outstanding


@pytest.mark.parametrize("prefixed", [False, True], ids=["plain", "prefix-hashes"])
def test_a_request_looks_at_the_replicas_due_not_all_of_them(prefixed: bool) -> None:
    """2,000 idle replicas, 400 requests of 1.1 s each (a 1 s prefill, a 0.1 s decode), one
    every 0.5 s: replicas 0-2 serve them all (the least loaded, ties to the lowest; with
    prefix hashes, 8 prompts that repeat, the one caching it among those). A pass over every
    replica made 800,000 ``advance`` calls and read 800,000 loads."""
    config = LlmEngineConfig()
    tr = trace([0.5 * k for k in range(400)], [10] * 400, [2] * 400)
    if prefixed:
        tr = RequestTrace(tr.name, tr.arrival, tr.prompt, tr.output,
                          tuple((k % 8,) for k in range(400)))
    CountingReplica.advances = CountingReplica.reads = 0
    log, slots = simulate_slots(
        tr, lambda lg, s: CountingReplica(flat_profile(), 1000, lg, config, s), [0.0] * 2000)
    assert not np.isnan(log.finish).any()
    assert CountingReplica.advances <= 4 * 400 + 2000  # its own iterations, then the end
    assert CountingReplica.reads <= 20 * 400 + 2000
    assert [k for k, s in enumerate(slots) if s.replica.iterations] == [0, 1, 2]


def _scan(tr: RequestTrace, make: ReplicaFactory, starts: list[float],
          stops: list[float | None], plan: list[PlanEntry]) -> RequestLog:
    """The rule as a pass over every replica: advance all, the least loaded ready one (the
    first on ties), else the first to start; stops and planned replicas as ``simulate_slots``."""
    log = RequestLog.empty(tr.arrival, tr.prompt, tr.output, tr.prefix)
    slots: list[list] = [[make(log, s), s, None, stop]
                         for s, stop in zip(starts, stops, strict=True)]
    live = list(slots)
    planned = sorted(plan, key=lambda p: (p[0], p[1]))
    for request, t in enumerate(tr.arrival.tolist()):
        while planned and planned[0][0] <= t:
            _, ready, retired, stopped, _ = planned.pop(0)
            slots.append([make(log, ready), ready, retired, stopped])
            live.append(slots[-1])
        _stop_all(slots, live, t)
        live = [s for s in live if s[2] is None or s[2] > t]
        for s in live:
            s[0].advance(t)
        ready = [s for s in live if s[1] <= t]
        if ready:
            best = min(ready, key=lambda s: s[0].outstanding)[0]
            if tr.prefix is not None:
                best = _cached(ready, tr.prefix[request], best.outstanding) or best
            best.enqueue(request, t)
        elif live:
            min(live, key=lambda s: s[1])[0].enqueue(request, t)
    _stop_all(slots, live, math.inf)
    for s in slots:
        s[0].advance(math.inf)
    return log


def _cached(ready: list[list], hashes: tuple[int, ...], least: int) -> Replica | None:
    """Mooncake's rule as a scan: the most leading blocks cached, then the least loaded,
    then the first; within ``PREFIX_SLACK`` (4) of the least loaded."""
    best, best_key = None, (0, 0)
    for s in ready:
        if s[0].outstanding > least + 4:
            continue
        hits = 0
        while hits < len(hashes) and hashes[hits] in s[0].cache.blocks:
            hits += 1
        if (hits, -s[0].outstanding) > best_key:
            best, best_key = s[0], (hits, -s[0].outstanding)
    return best


def _stop_all(slots: list[list], live: list[list], now: float) -> None:
    for s in slots:
        if s[3] is not None and s[3] <= now:
            s[0].stop(s[3])
            s[3] = None
            if s in live:
                live.remove(s)


def _llm(log: RequestLog, start: float) -> Replica:
    """A replica of 40 KV blocks: 640 tokens, one 512-token prefix block cached."""
    return LlmReplica(flat_profile(0.7, 0.1), 40, log, LlmEngineConfig(max_batch=3), start)


def _llm_big(log: RequestLog, start: float) -> Replica:
    """A replica of 100 KV blocks: three 512-token prefix blocks cached."""
    return LlmReplica(flat_profile(0.7, 0.1), 100, log, LlmEngineConfig(max_batch=3), start)


def _dnn(log: RequestLog, start: float) -> Replica:
    return DnnReplica(BatchLatency.from_table({1: 0.4, 4: 1.0}), log, 4, 0.3, start)


times = st.floats(0.0, 30.0, allow_nan=False).map(lambda x: round(x, 1))


@settings(max_examples=150, deadline=None)
@given(kind=st.sampled_from(["llm", "dnn", "llm-prefix", "llm-prefix-big"]),
       arrival=st.lists(times, min_size=1, max_size=60).map(sorted),
       starts=st.lists(st.tuples(times, st.none() | times), min_size=1, max_size=6),
       plan=st.lists(st.tuples(times, times, st.none() | times, st.none() | times),
                     max_size=3),
       seed=st.integers(0, 2**16))
def test_the_index_routes_as_a_pass_over_every_replica(kind, arrival, starts, plan,
                                                       seed) -> None:
    rng = np.random.default_rng(seed)
    n = len(arrival)
    prefix = None
    if kind.startswith("llm-prefix"):  # few distinct blocks, so replicas share and evict them
        prefix = tuple(tuple(int(h) for h in rng.integers(0, 4, rng.integers(0, 4)))
                       for _ in range(n))
    tr = RequestTrace("toy", np.array(arrival), rng.integers(1, 1500, n) if prefix else
                      rng.integers(1, 300, n), rng.integers(1, 40, n), prefix)
    make = {"llm": _llm, "dnn": _dnn, "llm-prefix": _llm, "llm-prefix-big": _llm_big}[kind]
    entries = [(r, r + w, None if ret is None else r + ret, None if stop is None else r + stop,
                False) for r, w, ret, stop in plan]
    log, _ = simulate_slots(tr, make, [s for s, _ in starts], None, entries,
                            [None if stop is None else s + stop for s, stop in starts])
    want = _scan(tr, make, [s for s, _ in starts],
                 [None if stop is None else s + stop for s, stop in starts], entries)
    for got, expected in ((log.first_token, want.first_token), (log.finish, want.finish),
                          (log.started, want.started), (log.preemptions, want.preemptions)):
        np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("make", [_llm, _dnn], ids=["llm", "dnn"])
def test_a_replica_stopped_during_its_restart_loses_its_queue_and_was_never_busy(make) -> None:
    """The core placed a replica again at 0 s (ready at 10 s: its restart) and stopped it at
    5 s: the request at 1 s, queued on it (no replica is ready), is lost. Before, the LLM
    replica counted -5 busy seconds (its start taken for an iteration's end) and the DNN one
    raised IndexError (no batch to cut short)."""
    log, slots = simulate_slots(trace([1.0], [10], [2]), make, [], None,
                                [(0.0, 10.0, None, 5.0, False)])
    assert slots[0].replica.lost == [0] and slots[0].replica.busy_seconds == 0.0
    assert math.isnan(log.finish[0])


@pytest.mark.parametrize("make", [_llm, _llm_big], ids=["one-block-cache", "three-block-cache"])
def test_cache_aware_routing_picks_as_a_scan_of_every_replica(make) -> None:
    """Mooncake prefix hashes over 4 distinct blocks, 40 requests on 4 replicas, 100 seeds:
    the index looks only at the replicas caching a request's first block, and must pick as
    the scan does (most blocks, then least loaded, then the earliest live)."""
    for seed in range(100):
        rng = np.random.default_rng(seed)
        arrival = np.sort(np.round(rng.uniform(0, 30, 40), 1))
        prefix = tuple(tuple(int(h) for h in rng.integers(0, 4, rng.integers(0, 4)))
                       for _ in range(40))
        tr = RequestTrace("toy", arrival, rng.integers(1, 1500, 40), rng.integers(1, 40, 40),
                          prefix)
        starts = np.round(rng.uniform(0, 10, 4), 1).tolist()
        log, _ = simulate_slots(tr, make, starts)
        want = _scan(tr, make, starts, [None] * 4, [])
        np.testing.assert_array_equal(log.finish, want.finish, err_msg=f"seed {seed}")
        np.testing.assert_array_equal(log.first_token, want.first_token, err_msg=f"seed {seed}")
