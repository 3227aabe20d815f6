"""A run in which failures undo every attempt of a job before it keeps any work is refused
with the field to change (``ResilienceBook._check_progress``), not run until ``max_time``."""

from __future__ import annotations

import pytest
from builders import cluster_of

from dlsched.cluster.cluster import Node
from dlsched.errors import ConfigError
from dlsched.scheduling.registry import build_policy
from dlsched.sim.checkpoint import CheckpointPlan
from dlsched.sim.failures import FailureCategory, FailureModel
from dlsched.sim.simulator import SimConfig, Simulator
from dlsched.workload.job import JobSpec, JobStatus
from dlsched.workload.trace import Trace

# 10 failures per GPU-day, repaired in 36 s: a 4-GPU job fails every 2,160 s on average
MODEL = FailureModel("m", (FailureCategory("gpu", 10.0, 0.01),))


def _run(work: float, restart: float, interval: object, cost: float) -> Simulator:
    sim = Simulator(cluster_of(Node("n0", "V100", 4), Node("n1", "V100", 4)),
                    Trace("t", (JobSpec("j", 0.0, 4, work=work),)), build_policy("fifo"),
                    SimConfig(restart_overhead=restart, seed=1, failures=MODEL,
                              checkpoint=CheckpointPlan(interval, cost), max_time=1e8))
    sim.run()
    return sim


@pytest.mark.parametrize("work, restart, interval, cost, field", [
    # 1e9 s checkpoints: Young's interval is 2e6 s, a checkpoint completes after ~1e9 s
    (1e4, 5.0, "young", 1e9, "--checkpoint-cost"),
    (1e4, 5.0, "daly", 1e9, "--checkpoint-cost"),
    (1e4, 1e6, "young", 10.0, "--restart-overhead"),  # it never gets through its restart
    (1e7, 5.0, 1e7, 10.0, "--checkpoint"),  # a fixed interval ~5,000 failures long
], ids=["young-cost", "daly-cost", "restart", "fixed-interval"])
def test_a_job_that_can_never_keep_work_is_refused_naming_the_field(
        work: float, restart: float, interval: object, cost: float, field: str) -> None:
    """Before, each of these ran until ``max_time`` (1e8 s, ~46,000 failures of the job),
    and without one, for ever."""
    with pytest.raises(ConfigError, match=rf"job j \(4 GPUs\) can never keep any work: "
                                              rf"it fails every 2.16e\+03 s.*\({field}"):
        _run(work, restart, interval, cost)


@pytest.mark.parametrize("work, restart, interval, cost", [
    (1e4, 5.0, "young", 60.0),
    (1e4, 5.0, "young", 5000.0),  # costly checkpoints, a job that still gets through
    (2e3, 5.0, "young", 0.0),  # free checkpoints: nothing lost
    (3e3, 5.0, 1e7, 10.0),  # no checkpoint in time, but it can finish between failures
], ids=["default", "costly", "free", "finishes-first"])
def test_a_job_that_can_keep_work_runs_to_its_end(work: float, restart: float,
                                                  interval: object, cost: float) -> None:
    assert _run(work, restart, interval, cost).core.jobs["j"].status is JobStatus.FINISHED
