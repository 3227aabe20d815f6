"""Policies that place jobs by their own rule keep to the core's ``runnable`` filter: a job is
never put on a GPU type where the throughput model rates it 0 (Gavel's physical table: ResNet-50
at batch 128 does not run on a K80). Node 0 is the K80 node, so first fit would take it.
"""

from __future__ import annotations

import pytest
from builders import cluster_of, records_of

from dlsched.cluster.cluster import Node
from dlsched.scheduling.registry import build_policy
from dlsched.sim.simulator import SimConfig, Simulator
from dlsched.workload.job import JobSpec, WorkUnit
from dlsched.workload.trace import Trace


def k80_stalls(policy: str, options: dict[str, str] | None = None) -> tuple[list[str], int]:
    """(jobs that ever ran on the K80 node, jobs finished) of six 1-GPU ResNet-50 b128 jobs."""
    cluster = cluster_of(Node("k80", "K80", 4), Node("v100", "V100", 4))
    jobs = tuple(JobSpec(f"j{i}", 10.0 * i, 1, 20_000, WorkUnit.ITERATIONS, model="ResNet-50",
                         batch_size=128) for i in range(6))
    sim = Simulator(cluster, Trace("t", jobs, throughput="gavel-physical"),
                    build_policy(policy, options), SimConfig(restart_overhead=0.0))
    records = records_of(sim, cycles=2_000)
    on_k80 = sorted({s.job_id for s in sim.core.segments.all() if min(s.gpus) < 4})
    return on_k80, sum(r.finish_time is not None for r in records.values())


@pytest.mark.parametrize("policy", [
    pytest.param("pack-aware", id="colocate-aware"),
    pytest.param("pack-naive", id="colocate-naive"),
    pytest.param("llm-size", id="fewest-nodes-placement"),
    # elastic allocators: the speed curve was taken on K80 (most GPUs, ties by name), all 0
    pytest.param("afs", id="elastic-afs"),
    pytest.param("optimus", id="elastic-optimus"),
    pytest.param("elasticflow", id="elastic-elasticflow"),
    pytest.param("chronus", id="elastic-chronus"),
    # goodput policies value jobs by their own goodput model, which rates every type
    pytest.param("pollux", id="goodput-pollux-one-type"),
    pytest.param("sia", id="goodput-sia-per-type"),
])
def test_a_job_rated_0_on_a_gpu_type_never_runs_there(policy: str) -> None:
    options = {"profiles": "bundled"} if policy == "sia" else None
    assert k80_stalls(policy, options) == ([], 6)
