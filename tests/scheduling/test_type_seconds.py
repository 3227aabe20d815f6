"""The core keeps GPU-seconds per GPU type: settled runs, shares, and running jobs up to now."""

from __future__ import annotations

import pytest
from builders import NullExecutor, cluster_of, make_job

from dlsched.cluster.cluster import Node
from dlsched.perf.model import LinearScaling
from dlsched.policies.fifo import fifo
from dlsched.scheduling.scheduler import Scheduler
from dlsched.sim.clock import SimClock


def test_per_type_seconds_count_shares_finished_and_running_jobs() -> None:
    # K80 node (2 GPUs) and V100 node (2 GPUs). A: 2 GPUs on K80 from 0, finishes at 10.
    # B: half of one V100 from 0, still running at 30. C: the other V100 from 0, requeued at 20.
    cluster = cluster_of(Node("k", "K80", 2), Node("v", "V100", 2))
    clock = SimClock()
    core = Scheduler(cluster, fifo(), LinearScaling(), clock, NullExecutor())
    core.submit(make_job("A").gpus(2).types("K80").work(1e6).build())
    core.submit(make_job("B").gpus(1).types("V100").share(0.5).work(1e6).build())
    core.submit(make_job("C").gpus(1).types("V100").work(1e6).build())
    core.cycle()
    assert set(core.running) == {"A", "B", "C"}
    clock.time = 10.0
    core.finish("A")
    clock.time = 20.0
    core.requeue("C", "node drained")
    clock.time = 30.0
    spent = core.gpu_seconds_by_type(30.0)
    assert spent == pytest.approx({"K80": 2 * 10.0, "V100": 0.5 * 30.0 + 20.0})
    assert core.type_seconds == pytest.approx({"K80": 20.0, "V100": 20.0})  # settled only
