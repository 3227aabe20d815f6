"""The elastic allocators (Optimus, AFS, ElasticFlow) bound a job's workers by the GPUs it may
be placed on: its pinned GPU types less the types the throughput model rates 0 for it
(``speed.usable_gpus``). Gavel's physical table rates ResNet-50 at batch 128 0 on a K80 and
ResNet-18 above 0 on both types; every job here is pinned to K80 and V100, so the pins alone
do not tell the two apart (the round's cache was keyed by them)."""

from __future__ import annotations

from dataclasses import replace

import pytest
from builders import cluster_of, cycle_state, make_job, records_of

from dlsched.cluster.cluster import Node
from dlsched.perf.gavel_table import GavelThroughputs
from dlsched.policies.afs import AfsAllocator
from dlsched.policies.elastic.speed import node_capacity, usable_gpus
from dlsched.policies.elasticflow import ElasticFlowAllocator
from dlsched.policies.optimus import OptimusAllocator
from dlsched.scheduling.registry import build_policy
from dlsched.scheduling.state import CycleState
from dlsched.sim.simulator import SimConfig, Simulator
from dlsched.workload.job import Job, JobSpec, WorkUnit
from dlsched.workload.trace import Trace

K80_THEN_V100 = cluster_of(Node("k80", "K80", 4), Node("v100", "V100", 4))
PINS = ("K80", "V100")


def pinned_state(rigid_model: str, elastic_model: str) -> tuple[CycleState, list[Job]]:
    """A rigid 1-GPU job, then an elastic 1..8 one, both batch 128 and pinned to K80 + V100."""
    rigid = make_job("j0").gpus(1).work(1e6).types(*PINS).build()
    grows = make_job("j1").gpus(1).elastic(1, 8).work(1e6).types(*PINS).build()
    jobs = [Job(replace(rigid, model=rigid_model, batch_size=128)),
            Job(replace(grows, model=elastic_model, batch_size=128))]
    state = cycle_state(K80_THEN_V100, waiting=jobs)
    snapshot = replace(state.snapshot, throughput=GavelThroughputs(source="physical_cluster"))
    return CycleState.begin(snapshot), jobs


@pytest.mark.parametrize(("models", "expected"), [
    # was [8, 8]: the ResNet-50 job read the ResNet-18 job's count (both pinned alike)
    pytest.param(("ResNet-18", "ResNet-50"), [8, 4], id="rated-0-after-rated-both"),
    # was [4, 4]: the ResNet-18 job read the ResNet-50 job's V100-only count
    pytest.param(("ResNet-50", "ResNet-18"), [4, 8], id="rated-both-after-rated-0"),
])
def test_usable_gpus_of_jobs_pinned_alike(models: tuple[str, str], expected: list[int]) -> None:
    state, jobs = pinned_state(*models)
    capacity, cache = node_capacity(state), {}
    assert [usable_gpus(state, job, capacity, cache) for job in jobs] == expected


@pytest.mark.parametrize("allocator", [
    pytest.param(OptimusAllocator, id="optimus"),
    pytest.param(AfsAllocator, id="afs"),
    pytest.param(ElasticFlowAllocator, id="elasticflow"),
])
def test_the_v100_only_job_is_placed(allocator: type) -> None:
    """Optimus and AFS planned the ResNet-50 job 7 GPUs; placement found 4 V100s for it and
    gave it none, so it waited beside 3 idle V100s while the ResNet-18 job ran."""
    state, _ = pinned_state("ResNet-18", "ResNet-50")
    plan = allocator("declared").allocate(state)
    assert dict(plan["j1"].per_node()) == {1: 4}


@pytest.mark.parametrize("allocator", [
    pytest.param(OptimusAllocator, id="optimus"),
    pytest.param(AfsAllocator, id="afs"),
])
def test_the_job_rated_on_both_grows_past_the_v100s(allocator: type) -> None:
    """The ResNet-18 job may use all 7 free GPUs (it was capped at the 4 V100s)."""
    state, _ = pinned_state("ResNet-50", "ResNet-18")
    plan = allocator("declared").allocate(state)
    assert sum(plan["j1"].per_node().values()) == 7


@pytest.mark.parametrize("policy", ["optimus", "afs"])
def test_the_v100_only_job_starts_at_once(policy: str) -> None:
    """Simulated: the ResNet-50 job started only when the ResNet-18 job finished (105,025 s)."""
    jobs = (JobSpec("j0", 0.0, 1, 200_000, WorkUnit.ITERATIONS, model="ResNet-18",
                    batch_size=128, gpu_types=PINS),
            JobSpec("j1", 1.0, 1, 200_000, WorkUnit.ITERATIONS, model="ResNet-50",
                    batch_size=128, gpu_types=PINS, min_gpus=1, max_gpus=8))
    sim = Simulator(K80_THEN_V100, Trace("t", jobs, throughput="gavel-physical"),
                    build_policy(policy, {"elastic": "declared"}),
                    SimConfig(restart_overhead=0.0))
    records = records_of(sim, cycles=5_000)
    assert records["j1"].first_start == 1.0
    assert all(r.finish_time is not None for r in records.values())
