"""CPUs, host memory and GPU memory: placement books them, the core refuses to overbook them,
and a job that no node could ever host fails at submission, saying why."""

from __future__ import annotations

import numpy as np
import pytest
from builders import cluster_of, cycle_state, make_job, run

from dlsched.cluster.cluster import Node
from dlsched.scheduling.placement import place
from dlsched.scheduling.registry import build_policy
from dlsched.scheduling.resources import Overbooked, ResourceBook
from dlsched.scheduling.state import CycleState
from dlsched.workload.job import Job, JobSpec

# node 0: 2 V100 (16 GiB), 8 CPUs, 32 GiB; node 1: 2 V100 of 32 GiB, 32 CPUs, 256 GiB.
CLUSTER = cluster_of(Node("small", "V100", 2, cpus=8, memory_gb=32),
                     Node("big", "V100", 2, cpus=32, memory_gb=256, gpu_memory_gb=32))


def _state() -> CycleState:
    state = cycle_state(CLUSTER)
    state.resources = ResourceBook.of(CLUSTER)
    return state


def _place(state: CycleState, spec: JobSpec) -> tuple[int, ...]:
    profile = build_policy("fifo", placement="consolidated")
    return place(state, Job(spec), profile.filters, profile.scores, profile.take_limit)[0]


def test_cluster_capacities_default_to_the_gpu_type() -> None:
    assert CLUSTER.node_cpus.tolist() == [8, 32]
    assert CLUSTER.gpu_memory_gb.tolist() == [16, 16, 32, 32]


@pytest.mark.parametrize("spec, gpus", [
    pytest.param(make_job("a").gpus(2).build(), (0, 1), id="nothing-extra-tightest-node"),
    pytest.param(JobSpec("b", 0, 2, 1, cpus_per_gpu=6), (2, 3), id="cpus-only-fit-big"),
    pytest.param(JobSpec("c", 0, 1, 1, memory_gb_per_gpu=40), (2,), id="host-memory"),
    pytest.param(JobSpec("d", 0, 1, 1, gpu_share=0.5, gpu_memory_gb=20), (2,),
                 id="gpu-memory-share"),
    pytest.param(JobSpec("e", 0, 2, 1, cpus_per_gpu=20), (), id="gang-over-node-cpus"),
])
def test_placement_respects_every_resource(spec: JobSpec, gpus: tuple[int, ...]) -> None:
    assert _place(_state(), spec) == gpus


def test_gpu_memory_is_shared_by_fractions_until_full() -> None:
    state = _state()
    spec = JobSpec("f", 0, 1, 1, gpu_share=0.25, gpu_memory_gb=12)
    placed = [_place(state, spec) for _ in range(6)]
    # 16 GiB GPUs hold one 12 GiB worker each, 32 GiB ones two: 6 workers, then none.
    assert sorted(g for p in placed for g in p) == [0, 1, 2, 2, 3, 3]
    assert _place(state, spec) == ()
    assert state.resources is not None
    assert np.allclose(state.resources.gpu_memory_gb, [4, 4, 8, 8])


def test_core_refuses_to_overbook() -> None:
    book = ResourceBook.of(CLUSTER)
    spec = JobSpec("g", 0, 2, 1, cpus_per_gpu=5)
    with pytest.raises(Overbooked, match="node 0 has 8 free CPUs"):
        book.take((0, 1), spec, checked=True)
    book.take((2, 3), spec, checked=True)
    assert book.cpus.tolist() == [8, 22]
    book.give((2, 3), spec)
    assert book.cpus.tolist() == [8, 32]


def test_unmodelled_resources_are_unlimited() -> None:
    book = ResourceBook.of(cluster_of(Node("n", "mystery", 1)))
    assert np.isinf(book.cpus).all() and np.isinf(book.gpu_memory_gb).all()


def test_jobs_queue_for_cpus_and_never_share_them() -> None:
    jobs = [JobSpec(f"j{i}", 0, 1, 100, gpu_share=0.5, cpus_per_gpu=6) for i in range(4)]
    records = run("fifo", cluster_of(Node("n", "V100", 2, cpus=12)), jobs)
    starts = sorted(r.first_start for r in records.values())
    assert starts == [0, 0, 100, 100]  # GPU room for 4 halves, CPUs for 2 workers at a time


def test_job_bigger_than_any_node_fails_with_reason() -> None:
    records = run("fifo", CLUSTER, [JobSpec("h", 0, 1, 10, cpus_per_gpu=40)])
    assert records["h"].status == "failed"


@pytest.mark.parametrize("field", ["cpus_per_gpu", "memory_gb_per_gpu", "gpu_memory_gb"])
def test_negative_demand_is_refused(field: str) -> None:
    with pytest.raises(ValueError, match=field):
        JobSpec("x", 0, 1, 1, **{field: -1.0})
