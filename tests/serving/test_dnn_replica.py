"""Dynamic batching with a timeout (Clockwork / Triton's rule), by hand."""

from __future__ import annotations

import pytest
from serving_helpers import trace

from dlsched.perf.inference.batch_latency import BatchLatency
from dlsched.serving.dnn_replica import DnnReplica
from dlsched.serving.routing import simulate_requests


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
