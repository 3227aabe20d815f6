"""A cycle's snapshot tells the kinds of jobs submitted so far (a part of a GPU, more than GPUs)
and the nodes down, as the core has them when the snapshot is taken. The core sets those fields
where they change, at a submission or a node's change (not every cycle: issue 14)."""

from __future__ import annotations

from dataclasses import replace

from builders import NullExecutor, make_cluster, make_job

from dlsched.perf.model import LinearScaling
from dlsched.policies.fifo import fifo
from dlsched.scheduling.scheduler import Scheduler
from dlsched.sim.clock import SimClock


def test_snapshots_follow_submissions_and_nodes_down() -> None:
    core = Scheduler(make_cluster(nodes=2, gpus=4), fifo(), LinearScaling(), SimClock(),
                     NullExecutor())
    core.submit(make_job("whole").gpus(2).build())
    first = core.snapshot()
    assert (first.has_fractional, first.resources, first.mig, first.down_nodes) == (
        False, None, None, frozenset())
    core.submit(make_job("half").share(0.5).build())
    assert core._snapshot_fields["has_fractional"]  # set at the submission, before a cycle
    assert core.snapshot().has_fractional and core.snapshot().resources is None
    core.submit(replace(make_job("cpus").build(), cpus_per_gpu=2.0))
    with_cpus = core.snapshot()
    assert with_cpus.resources is not None and with_cpus.has_fractional
    core.set_down_nodes(frozenset({1}))
    assert core.snapshot().down_nodes == frozenset({1})
    core.set_down_nodes(frozenset())
    assert core.snapshot().down_nodes == frozenset()
    assert first.has_fractional is False and first.down_nodes == frozenset()  # as taken
