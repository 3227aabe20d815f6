"""Dynamic batching with a timeout (Clockwork / Triton's rule), by hand."""

from __future__ import annotations

import math

import pytest
from serving_helpers import trace

from dlsched.perf.inference.batch_latency import BatchLatency
from dlsched.serving.dnn_replica import DnnReplica
from dlsched.serving.metrics import Slo, service_metrics
from dlsched.serving.routing import simulate_requests, simulate_slots


def test_batch_leaves_when_full_or_when_the_oldest_times_out() -> None:
    latency = BatchLatency.from_table({1: 0.1, 2: 0.15})
    tr = trace([0.0, 0.001, 0.5, 0.505], [1] * 4, [1] * 4)
    log, replicas = simulate_requests(
        tr, lambda log, s: DnnReplica(latency, log, 2, 0.01, s), [0.0])
    # r0 and r1 fill a batch at 0.001; r2 and r3 fill one at 0.505
    assert log.finish.tolist() == pytest.approx([0.151, 0.151, 0.655, 0.655])
    tr = trace([0.0, 0.5], [1, 1], [1, 1])
    log, _ = simulate_requests(tr, lambda log, s: DnnReplica(latency, log, 2, 0.01, s), [0.0])
    assert log.finish.tolist() == pytest.approx([0.11, 0.61])  # timeouts, alone


def test_a_busy_replica_batches_what_waited() -> None:
    latency = BatchLatency.from_table({1: 1.0, 4: 1.6})
    tr = trace([0.0, 0.1, 0.2, 0.3], [1] * 4, [1] * 4)
    log, replicas = simulate_requests(
        tr, lambda log, s: DnnReplica(latency, log, 4, 0.0, s), [0.0])
    # r0 alone at 0 (timeout 0) until 1.0; then r1..r3 as one batch of 3: 1.0 + 1.4
    assert log.finish.tolist() == pytest.approx([1.0, 2.4, 2.4, 2.4])
    assert replicas[0].peak_batch == 3


def test_a_stopped_replica_loses_its_batch_and_queue_and_serves_nothing_more() -> None:
    # Two replicas of 1 s batches of 1 (no timeout). Replica 0 takes r0 at 0 and r2 waits
    # behind it; replica 1 takes r1. Replica 0 is stopped at 0.5 s (preempted, or its node
    # failed): r0 in flight and r2 queued are lost; r3 at 0.6 s goes to replica 1, the only
    # one left, after r1. Its GPUs go back at the stop.
    latency = BatchLatency.from_table({1: 1.0})
    tr = trace([0.0, 0.0, 0.1, 0.6], [1] * 4, [1] * 4)
    log, slots = simulate_slots(tr, lambda log, s: DnnReplica(latency, log, 1, 0.0, s),
                                [0.0, 0.0], stops=[0.5, None])
    finish = log.finish.tolist()
    assert math.isnan(finish[0]) and math.isnan(finish[2])
    assert finish[1] == pytest.approx(1.0) and finish[3] == pytest.approx(2.0)
    assert sorted(slots[0].replica.lost) == [0, 2] and slots[1].replica.lost == []
    assert slots[0].held_until(10.0) == 0.5 and slots[0].replica.busy_seconds == 0.5
    assert service_metrics(log, Slo(latency=5.0), 1.0)["completed"] == 2


def test_a_replica_stopped_after_the_last_arrival_still_loses_what_it_held() -> None:
    latency = BatchLatency.from_table({1: 1.0})
    log, slots = simulate_slots(trace([0.0], [1], [1]),
                                lambda log, s: DnnReplica(latency, log, 1, 0.0, s), [0.0],
                                stops=[0.5])
    assert math.isnan(log.finish[0]) and slots[0].replica.lost == [0]
