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


def test_one_type_seconds_are_the_stop_by_stop_sum_across_batches() -> None:
    """On a cluster of one GPU type the stops are charged a batch at a time (issue 14): the
    total is the float a stop-by-stop ``charged += held * share`` gives, exactly, read before,
    at and past a batch's end, shares whole and fractional."""
    cluster = cluster_of(Node("a", "V100", 4), Node("b", "V100", 4))
    clock = SimClock()
    core = Scheduler(cluster, fifo(), LinearScaling(), clock, NullExecutor())
    shapes = [(4, 1.0), (1, 0.5), (2, 1.0), (1, 0.25), (1, 1.0), (8, 1.0), (3, 1.0)]
    expected, stops = 0.0, 0
    for round_ in range(700):  # ~2,800 stops: batches of 1,024 and a part
        clock.time = round_ * 7.3
        for n, (gpus, share) in enumerate(shapes[round_ % 3: round_ % 3 + 4]):
            core.submit(make_job(f"j{round_}-{n}").gpus(gpus).share(share).work(1e9).build())
        core.cycle()
        clock.time = round_ * 7.3 + 1.0 / (1 + round_ % 5)
        for job_id in sorted(core.running):
            job = core.running[job_id]
            held = clock.time - job.run_started
            for share in job.shares:
                expected += held * share
            stops += 1
            core.cancel(job_id)
        if round_ == 0:  # charged when read, not a stop at a time
            assert core._type_seconds == {"V100": 0.0} and expected > 0.0
        if round_ in (0, 1, 255, 256, 400):
            assert core.type_seconds == {"V100": expected}
    assert stops > 2048
    assert core.type_seconds == {"V100": expected}
    assert core.gpu_seconds_by_type(clock.time) == {"V100": expected}
