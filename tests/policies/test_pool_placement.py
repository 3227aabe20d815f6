"""Policies that place jobs themselves keep every job in its node pool (a Philly virtual
cluster), as the core's own placement does (``filters.NodePoolFilter``), and the allocation
cycle refuses a target outside it.

The probe: 2 nodes of 4 GPUs, node 0 in pool a, node 1 in pool b; jobs of pool b. Optimus,
AFS and ElasticFlow grew an elastic pool-b job onto all 8 GPUs, Sia too; Chronus and llm-size
put a 1-GPU job on node 0 (best fit, lowest index), every Gavel round mechanism too (the
tightest node of its type); and the core accepted each start."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

import numpy as np
import pytest
from builders import cycle_state, make_cluster, make_job, records_of, simulator

from dlsched.policies.elastic.speed import node_capacity, usable_gpus
from dlsched.policies.gavel.assign import place_round
from dlsched.scheduling.allocation import Assignment
from dlsched.scheduling.allocation_cycle import run_allocation_cycle
from dlsched.scheduling.registry import build_policy
from dlsched.scheduling.state import CycleState
from dlsched.sim.simulator import SimConfig, Simulator
from dlsched.workload.job import Job, JobStatus
from dlsched.workload.trace import Trace

POOLS = make_cluster(nodes=2, gpus=4, pools=["a", "b"])
POOL_B = {4, 5, 6, 7}  # node 1's GPUs


def gpus_used(sim: Simulator) -> set[int]:
    return {gpu for segment in sim.core.segments.all() for gpu in segment.gpus}


@pytest.mark.parametrize("policy", [
    "optimus", "afs", "elasticflow", "chronus", "sia", "llm-size", "gavel-las",
    "gavel-fifo", "gavel-maxmin", "gavel-maxmin-agnostic", "gavel-ftf", "gavel-makespan",
    # kept pool-aware already (regression guards)
    "pollux", "themis", "gandiva", "tiresias",
])
def test_an_elastic_pool_b_job_runs_on_pool_b_only(policy: str) -> None:
    job = make_job("j0").gpus(1).elastic(1, 8).work(10_000).pool("b").build()
    sim = simulator(policy, POOLS, [job])
    records = records_of(sim, cycles=2_000)
    assert records["j0"].finish_time is not None
    assert gpus_used(sim) <= POOL_B


@pytest.mark.parametrize(("policy", "options"), [
    pytest.param("gavel-maxmin-packed", {}, id="packed-pairs"),
    pytest.param("gavel-maxmin", {"mechanism": "artifact"}, id="artifact-rounds"),
])
def test_gavel_keeps_six_pool_b_jobs_on_pool_b(policy: str, options: Mapping) -> None:
    """Gavel's types know no pools: six 1-GPU jobs ran on GPUs 0-5 (pool a's node first)."""
    jobs = tuple(replace(make_job(f"j{i}").gpus(1).work(10_000).pool("b").build(),
                         model="ResNet-18", batch_size=64) for i in range(6))
    sim = Simulator(POOLS, Trace("t", jobs, throughput="gavel"), build_policy(policy, options),
                    SimConfig(restart_overhead=0.0))
    records = records_of(sim, cycles=5_000)
    assert all(r.finish_time is not None for r in records.values())
    assert gpus_used(sim) <= POOL_B


def pool_b_state() -> tuple[CycleState, Job]:
    job = Job(make_job("j0").gpus(1).elastic(1, 8).pool("b").build())
    return cycle_state(POOLS, waiting=[job]), job


def test_usable_gpus_count_the_pool_only() -> None:
    """Optimus, AFS and ElasticFlow bound the job's workers by 8 GPUs (both pools)."""
    state, job = pool_b_state()
    assert usable_gpus(state, job, node_capacity(state), {}) == 4


def test_sia_bounds_a_pool_job_by_its_pools_gpus() -> None:
    from dlsched.policies.sia import _usable_types

    state, job = pool_b_state()
    assert _usable_types(state, [job], node_capacity(state)).tolist() == [[4]]


def test_gavel_placement_moves_a_job_held_outside_its_pool() -> None:
    room = np.array([4, 4])
    placed = place_round({"j0": 0}, {"j0": 1}, {"j0": (0,)}, np.array([0, 0]), room,
                         {"j0": frozenset({1})})
    assert placed == {"j0": (1,)}


class FixedTargets:
    """An allocator that gives each job the nodes it is told (a policy bug, for the core)."""

    name = "fixed"

    def __init__(self, targets: Mapping[str, tuple[int, ...]]) -> None:
        self.targets = targets

    def allocate(self, state: CycleState) -> dict[str, Assignment]:
        return {job_id: Assignment(nodes) for job_id, nodes in self.targets.items()}


def test_the_core_refuses_a_start_outside_the_pool() -> None:
    state, _ = pool_b_state()
    result = run_allocation_cycle(FixedTargets({"j0": (0, 0)}), state.snapshot)
    assert result.starts == ()
    assert "outside the nodes its GPU types and pool allow" in result.reasons["j0"]


def test_the_core_preempts_a_move_outside_the_pool() -> None:
    job = Job(make_job("j0").gpus(1).elastic(1, 8).pool("b").build())
    job.set_status(JobStatus.RUNNING)
    job.allocation, job.shares = (4,), (1.0,)
    state = cycle_state(POOLS, used={4: 1.0}, running=[job])
    result = run_allocation_cycle(FixedTargets({"j0": (0, 1)}), state.snapshot)
    assert result.resizes == ()
    assert [p.job_id for p in result.preemptions] == ["j0"]


def test_the_core_starts_a_target_inside_the_pool() -> None:
    state, _ = pool_b_state()
    result = run_allocation_cycle(FixedTargets({"j0": (1, 1)}), state.snapshot)
    assert [start.gpus for start in result.starts] == [(4, 5)]
