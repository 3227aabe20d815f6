"""A core snapshot's waiting jobs while the queue keeps no whole order (issue 14): a bucketed
static order (Tiresias) keeps its buckets only until something reads the whole order, so a
snapshot holds the queue and sorts it at its first read (``WaitingQueue.order_at``)."""

from __future__ import annotations

import pytest
from builders import NullExecutor, make_cluster, make_job

from dlsched.perf.model import LinearScaling
from dlsched.policies.tiresias import tiresias
from dlsched.scheduling.scheduler import Scheduler
from dlsched.sim.clock import SimClock


def _core_with_waiting() -> Scheduler:
    """Four jobs waiting, no cycle run yet (two buckets: 8 and 16 GPUs)."""
    clock = SimClock()
    core = Scheduler(make_cluster(nodes=2, gpus=8), tiresias(), LinearScaling(), clock,
                     NullExecutor())
    for n, (gpus, at) in enumerate(((16, 3.0), (8, 1.0), (16, 0.0), (8, 2.0))):
        core.submit(make_job(f"j{n}").gpus(gpus).at(at).build())
    return core


def test_a_snapshot_sorts_the_waiting_jobs_at_its_first_read() -> None:
    core = _core_with_waiting()
    snapshot = core.snapshot()
    assert not core.waiting.order_kept  # nothing read it yet
    assert [job.job_id for job in snapshot.waiting] == ["j2", "j1", "j3", "j0"]
    assert snapshot.waiting is snapshot.waiting  # kept once sorted
    assert core.waiting.order_kept  # read once: kept from now on
    assert core.snapshot().waiting == snapshot.waiting


def test_a_snapshot_read_first_after_its_queue_changed_says_so() -> None:
    core = _core_with_waiting()
    snapshot = core.snapshot()
    core.submit(make_job("late").gpus(8).at(4.0).build())
    with pytest.raises(RuntimeError, match="during the snapshot's cycle"):
        snapshot.waiting  # noqa: B018
