"""A waiting job's reason writes its GPU count as English: "needs 1 GPU", "needs 2 GPUs" (it
read "needs 1 GPUs"). One 4-GPU node (or pool ``a`` of two one-node pools) is held by a
long 4-GPU job; a job asking 1 or 2 GPUs arrives. Each row takes one of the paths that write
the count: the cycle's free-count check (a policy that does not preempt), ``place`` (the
job's pool is full, the other is free), ``count_miss`` (a preemptive policy, told from the
counts) and the single-GPU shortcut of the consolidated score; with nothing free, all read
alike. The walks that skip jobs without trying them (backfill's index, the tenant layer's
groups) write what a try would."""

from __future__ import annotations

import pytest
from builders import NullExecutor, cycle_state, make_cluster, make_job

from dlsched.perf.model import LinearScaling
from dlsched.policies.backfill import _skipped_text
from dlsched.scheduling.registry import build_policy
from dlsched.scheduling.scheduler import Scheduler
from dlsched.sim.clock import SimClock
from dlsched.tenancy.groups import Group, _no_room
from dlsched.workload.job import Job


def _reason(policy: str, placement: str | None, pools: bool, gpus: int) -> str:
    cluster = make_cluster(nodes=2 if pools else 1, gpus=4, pools=["a", "b"] if pools else None)
    core = Scheduler(cluster, build_policy(policy, None, placement), LinearScaling(),
                     SimClock(), NullExecutor())
    big, late = make_job("big").gpus(4).work(1e6), make_job("late").gpus(gpus).work(1e7)
    core.submit((big.pool("a") if pools else big).build())
    core.cycle()
    core.clock.time = 1.0
    core.submit((late.pool("a") if pools else late).build())
    core.cycle()
    return core.reason_for(core.jobs["late"])


ONE = "[placement] needs 1 GPU, none free on fitting nodes"
TWO = "[placement] needs 2 GPUs, none free on fitting nodes"


# Every path writes nothing free one way: the cycle's free-count check read "needs 1 GPU, 0
# free", place and count_miss "0 free on fitting nodes", the single-GPU shortcut "none free on
# fitting nodes", for the same full node.
@pytest.mark.parametrize(("policy", "placement", "pools", "gpus", "reason"), [
    pytest.param("fifo", None, False, 1, ONE, id="count-check-1"),
    pytest.param("fifo", None, False, 2, TWO, id="count-check-2"),
    pytest.param("backfill", None, False, 1, ONE, id="backfill-1"),
    pytest.param("fifo", "most-free", True, 1, ONE, id="place-1"),
    pytest.param("fifo", "most-free", True, 2, TWO, id="place-2"),
    pytest.param("srtf", "most-free", False, 1, ONE, id="count-miss-1"),
    pytest.param("srtf", "most-free", False, 2, TWO, id="count-miss-2"),
    pytest.param("tiresias", None, False, 1, ONE, id="single-shortcut"),
    pytest.param("tiresias", None, False, 2, TWO, id="lane-2"),
])
def test_a_reason_counts_gpus_in_english(policy: str, placement: str | None, pools: bool,
                                         gpus: int, reason: str) -> None:
    # (Tiresias and SRTF then say which running jobs they may not preempt: read with the
    # reason)
    said = _reason(policy, placement, pools, gpus)
    assert said.split("; [tiresias]")[0].split("; [srtf]")[0] == reason


@pytest.mark.parametrize("gpus", [1, 2], ids=["1-gpu", "2-gpus"])
def test_skipping_walks_write_what_a_try_would(gpus: int) -> None:
    full = cycle_state(make_cluster(nodes=1, gpus=4), {g: 1.0 for g in range(4)})
    job = Job(make_job("late").gpus(gpus).build())
    tried = _reason("fifo", None, False, gpus)
    assert _skipped_text(full, job, None, "free") == tried  # type: ignore[arg-type]
    group = Group("q", gpus, None, (), {})
    assert _no_room(group, 0) == _reason("fifo", "most-free", True, gpus)
