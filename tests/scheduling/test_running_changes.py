"""The core counts changes to its running jobs (``Scheduler.running_changes``, shown in each
snapshot): a memo of the running jobs (backfill's ``RunningEnds``) looks at them again only
when the count moved. Every start, stop and requeue moves it; a cycle that starts nothing
does not."""

from __future__ import annotations

from builders import NullExecutor, cluster_of, make_job

from dlsched.cluster.cluster import Node
from dlsched.perf.model import LinearScaling
from dlsched.policies.fifo import fifo
from dlsched.scheduling.scheduler import Scheduler
from dlsched.sim.clock import SimClock


def test_starts_stops_and_requeues_move_the_count_idle_cycles_do_not() -> None:
    clock = SimClock()
    core = Scheduler(cluster_of(Node("v", "V100", 2)), fifo(), LinearScaling(), clock,
                     NullExecutor())
    seen = [core.snapshot().running_changes]
    core.submit(make_job("A").gpus(2).work(1e6).build())
    core.cycle()
    seen.append(core.snapshot().running_changes)
    core.submit(make_job("B").gpus(2).work(1e6).build())
    clock.time = 5.0
    core.cycle()  # B waits: nothing changes among the running jobs
    seen.append(core.snapshot().running_changes)
    clock.time = 10.0
    core.requeue("A", "node drained")
    seen.append(core.snapshot().running_changes)
    core.cycle()  # A, first by submission, starts again
    assert set(core.running) == {"A"}
    seen.append(core.snapshot().running_changes)
    core.finish("A")
    seen.append(core.snapshot().running_changes)
    assert seen[1] != seen[0] and seen[2] == seen[1]
    assert len(set(seen[2:])) == 4
    assert core.snapshot(running=False).running_changes is None


def test_two_cores_never_show_the_same_count() -> None:
    made = [Scheduler(cluster_of(Node("v", "V100", 2)), fifo(), LinearScaling(), SimClock(),
                      NullExecutor()) for _ in range(2)]
    assert made[0].running_changes != made[1].running_changes
