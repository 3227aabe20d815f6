"""A job reshaped after a node failure (``--resilience elastic``/``oobleck``,
scheduling/reconfigure.py) stays in its node pool: the scheduler's free-GPU list for the
reshape (``Scheduler._free_gpus_for``) ignored pools, so llama2-70b of pool a, its node 0
failed, moved onto the free node of pool b at once, where the policy's own placement never
puts it."""

from __future__ import annotations

import pytest
from builders import cluster_of

from dlsched.cluster.cluster import Node
from dlsched.perf.llm.throughput import LlmThroughput
from dlsched.scheduling.registry import build_policy
from dlsched.sim.checkpoint import CheckpointPlan
from dlsched.sim.failures import Failure, FailureCategory, FailureModel
from dlsched.sim.simulator import SimConfig, Simulator
from dlsched.workload.job import JobSpec, WorkUnit
from dlsched.workload.trace import Trace

QUIET = FailureModel("none", (FailureCategory("gpu", 0.0, 0.0),))
FAIL_AT, REPAIR = 3000.0, 7200.0
POOL_B = set(range(64, 72))  # the ninth node's GPUs


@pytest.mark.parametrize("resilience", ["elastic", "oobleck"])
def test_a_reshaped_job_stays_in_its_pool(resilience: str) -> None:
    nodes = [*(Node(f"a{i}", "A100-80G", 8, pool="a") for i in range(8)),
             Node("b0", "A100-80G", 8, pool="b")]
    job = JobSpec("llm", 0.0, 64, work=100.0, work_unit=WorkUnit.ITERATIONS,
                  gpu_types=("A100-80G",), model="llama2-70b", pool="a")
    sim = Simulator(cluster_of(*nodes), Trace("t", (job,), throughput="llm"),
                    build_policy("fifo"),
                    SimConfig(restart_overhead=60.0, failures=QUIET, resilience=resilience,
                              checkpoint=CheckpointPlan(1000.0), reconfigure_seconds=20.0),
                    throughput=LlmThroughput())
    assert sim.failures is not None
    sim.failures.inject(Failure(FAIL_AT, 0, "gpu", REPAIR))
    sim.run()
    segments = [s for s in sim.core.segments.all() if s.job_id == "llm"]
    # was [(0, 64), (3000, 64)]: the 8 GPUs of node a0 replaced by pool b's
    assert [(s.start, len(s.gpus)) for s in segments] == [
        (0.0, 64), (FAIL_AT, 56), (FAIL_AT + REPAIR, 64)]
    assert not any(set(s.gpus) & POOL_B for s in segments)
