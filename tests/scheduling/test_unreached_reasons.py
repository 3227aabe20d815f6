"""A cycle that stops early (nothing more can start) names the buckets it did not reach and why
their jobs wait (``bucket_scan.scan_bucket_reasons``), so that a job it never looked at reads a
true, current reason instead of an empty or older one. On one 4-GPU node held by a 4-GPU job,
SJF tries the 1-GPU job, which fails, and stops: the 2-GPU job was never looked at."""

from __future__ import annotations

from builders import NullExecutor, make_cluster, make_job

from dlsched.perf.model import LinearScaling
from dlsched.policies.sjf import sjf
from dlsched.scheduling.bucket_scan import FULL_STOP, scan_bucket_reasons, scan_buckets
from dlsched.scheduling.cycle import _CycleRun
from dlsched.scheduling.scheduler import Scheduler
from dlsched.scheduling.state import CycleState
from dlsched.sim.clock import SimClock


def _full_core() -> Scheduler:
    core = Scheduler(make_cluster(nodes=1, gpus=4), sjf(), LinearScaling(), SimClock(),
                     NullExecutor())
    core.submit(make_job("big").gpus(4).work(1000).build())
    core.cycle()
    core.submit(make_job("one").gpus(1).work(50).build())
    core.submit(make_job("two").gpus(2).work(60).build())
    return core


def test_the_walk_names_the_buckets_it_did_not_reach() -> None:
    core = _full_core()
    snapshot = core.snapshot()
    dropped, unreached, why = scan_bucket_reasons(
        _CycleRun(core.profile, CycleState.begin(snapshot)), snapshot.buckets)
    assert dropped == [] and why == FULL_STOP
    # "one"'s bucket too: the walk stopped at it (its own reason is newer than the bucket's)
    assert set(unreached) == {core.waiting.bucket_named("two"), core.waiting.bucket_named("one")}
    snapshot = core.snapshot()  # what the cycle reads today: the dropped buckets, unchanged
    assert scan_buckets(_CycleRun(core.profile, CycleState.begin(snapshot)),
                        snapshot.buckets) == []


def test_a_job_the_cycle_never_reached_reads_why() -> None:
    """The cycle reports that it stopped and why (``CycleResult.stop_reason``); the core shows
    that reason for a waiting job no later reason covers."""
    core = _full_core()
    core.cycle()
    assert core.reason_for(core.jobs["one"]).startswith("[placement] needs 1 GPU")
    assert core.reason_for(core.jobs["two"]) == FULL_STOP


def test_a_job_that_came_after_the_stop_does_not_read_it() -> None:
    """The stop speaks of the jobs that waited when the cycle ran: one submitted later, not
    yet seen by any cycle, does not read it."""
    core = _full_core()
    core.cycle()
    core.clock.time = 10.0
    core.submit(make_job("late").gpus(2).work(60).build())
    assert core.reason_for(core.jobs["late"]) != FULL_STOP
    assert core.reason_for(core.jobs["two"]) == FULL_STOP
