"""Reactive autoscaling: the HPA rule, its downscale window, cold starts, GPU time held."""

from __future__ import annotations

import pytest
from serving_helpers import trace

from dlsched.perf.inference.batch_latency import BatchLatency
from dlsched.serving.autoscale import AutoscalePolicy, Autoscaler
from dlsched.serving.dnn_replica import DnnReplica
from dlsched.serving.routing import simulate_slots


def test_hpa_rule_scales_up_at_once_and_down_after_the_window() -> None:
    scaler = Autoscaler(AutoscalePolicy(1, 10, target_outstanding=8, stabilization=30))
    assert scaler.desired(10, current=2, outstanding=40) == 5  # ceil(2 x 20 / 8)
    assert scaler.desired(20, current=5, outstanding=0) == 5  # 5 was wanted 10 s ago
    assert scaler.desired(45, current=5, outstanding=0) == 1  # the window has passed
    assert scaler.desired(50, current=1, outstanding=10_000) == 10  # capped at max


def test_a_burst_adds_a_replica_that_serves_after_its_cold_start() -> None:
    latency = BatchLatency.from_table({1: 1.0})
    policy = AutoscalePolicy(1, 2, target_outstanding=2, interval=1.0, cold_start=5.0,
                             stabilization=0.0)
    tr = trace([0.0] * 6 + [20.0], [1] * 7, [1] * 7)
    log, slots = simulate_slots(tr, lambda log, s: DnnReplica(latency, log, 1, 0.0, s), [0.0],
                                Autoscaler(policy))
    # tick 1 s: 5 queued on the only replica -> ceil(5 / 2) = 3, capped at 2: one more,
    # serving from 6 s; tick 4 s: 2 queued -> 1 wanted, so the idle, still warming one goes
    assert [(s.requested, s.ready, s.retired) for s in slots] == [(0, 0, None), (1, 6, 4)]
    assert slots[1].held_until(30.0) == 4.0  # it never served: its GPUs went back at once
    # queued requests stay where they were routed: 1, 2, ..., 6 on the first replica
    assert log.finish.tolist() == pytest.approx([1, 2, 3, 4, 5, 6, 21])


def test_a_replayed_plan_serves_from_each_replicas_ready_time_until_retired() -> None:
    """The core placed the second replica at 2 s (ready at 4 s) and retired it at 10 s: the
    request at 3 s is routed only among serving replicas (the busy first one: 5 -> 10), and
    the one at 4.5 s takes the second, ready and idle; the one at 11 s cannot use it, retired."""
    latency = BatchLatency.from_table({1: 5.0})
    tr = trace([0.0, 3.0, 4.5, 11.0], [1] * 4, [1] * 4)
    log, slots = simulate_slots(tr, lambda log, s: DnnReplica(latency, log, 1, 0.0, s), [0.0],
                                plan=[(2.0, 4.0, 10.0, None, False)])
    assert [(s.requested, s.ready, s.retired) for s in slots] == [(0, 0, None), (2, 4, 10)]
    assert log.finish.tolist() == pytest.approx([5.0, 10.0, 9.5, 16.0])
