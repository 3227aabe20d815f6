"""A cycle reads the clock once: its snapshot, its decisions and the timeline's record are at
that time (the clock does not move during a cycle; ~10^6 cycles on a contended run, issue 14)."""

from __future__ import annotations

from builders import NullExecutor, make_cluster, make_job

from dlsched.perf.model import LinearScaling
from dlsched.policies.tiresias import tiresias
from dlsched.scheduling.scheduler import Scheduler


class _CountingClock:
    def __init__(self) -> None:
        self.time, self.reads = 0.0, 0

    def now(self) -> float:
        self.reads += 1
        return self.time


def test_a_cycle_reads_the_clock_once() -> None:
    clock = _CountingClock()
    core = Scheduler(make_cluster(nodes=1, gpus=4), tiresias(), LinearScaling(), clock,
                     NullExecutor())
    for n in range(3):
        core.submit(make_job(f"j{n}").gpus(2).work(1e4).build())
    clock.time, clock.reads = 5.0, 0
    result = core.cycle()
    assert len(result.starts) == 2 and clock.reads == 1
    assert core.timeline.times[-1] == 5.0
    assert {core.running[s.job_id].run_started for s in result.starts} == {5.0}
    assert core.snapshot().now == 5.0
