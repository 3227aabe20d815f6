"""Philly jobs mapped to Gavel job types (Gavel's generate_job rule), seeded."""

from __future__ import annotations

import pytest

from dlsched.cluster.cluster import Cluster, Node
from dlsched.perf.gavel_table import GavelThroughputs
from dlsched.scheduling.registry import build_policy
from dlsched.sim.simulator import SimConfig, Simulator
from dlsched.workload.bundled import resolve_trace
from dlsched.workload.job import JobSpec, WorkUnit
from dlsched.workload.readers.gavel_mapping import eligible_types, to_gavel_types
from dlsched.workload.trace import Trace

SINGLE_GPU_ONLY = {"A3C", "CycleGAN", "Recommendation"}


def _trace(*jobs: JobSpec) -> Trace:
    return Trace("t", jobs)


def test_same_seed_same_types_other_seed_differs() -> None:
    philly = resolve_trace("philly-sample").head(200)
    first, again = to_gavel_types(philly, 3), to_gavel_types(philly, 3)
    other = to_gavel_types(philly, 4)
    kinds = [(j.model, j.batch_size) for j in first.jobs]
    assert kinds == [(j.model, j.batch_size) for j in again.jobs]
    assert kinds != [(j.model, j.batch_size) for j in other.jobs]
    assert first.throughput == "gavel" and len(set(kinds)) > 10
    assert [(j.job_id, j.submit_time, j.num_gpus, j.queue) for j in first.jobs] == [
        (j.job_id, j.submit_time, j.num_gpus, j.queue) for j in philly.jobs]


@pytest.mark.parametrize(("gpus", "count"), [(1, 26), (2, 19), (8, 19)])
def test_multi_gpu_jobs_get_only_distributed_types(gpus: int, count: int) -> None:
    # 26 measured types; the 7 single-GPU ones (A3C, CycleGAN, 5 Recommendation) drop out
    kinds = eligible_types(GavelThroughputs(), gpus)
    assert len(kinds) == count
    assert (gpus == 1) == bool({name for name, _ in kinds} & SINGLE_GPU_ONLY)


@pytest.mark.parametrize("gpus", [1, 2, 4])
def test_mapped_job_takes_its_philly_duration_on_v100(gpus: int) -> None:
    # work = 500 s x steps/s on V100 at that size: alone on V100s it finishes at 500 s
    trace = to_gavel_types(_trace(JobSpec("p", 0, gpus, 500.0)), seed=1)
    assert trace.jobs[0].work_unit is WorkUnit.ITERATIONS
    cluster = Cluster("v", (Node("v", "V100", 4),))
    sim = Simulator(cluster, trace, build_policy("fifo"), SimConfig(restart_overhead=0))
    assert sim.run().jobs[0].finish_time == pytest.approx(500.0)


def test_iteration_jobs_are_refused() -> None:
    steps = JobSpec("s", 0, 1, 10.0, WorkUnit.ITERATIONS, model="A3C")
    with pytest.raises(ValueError, match="job s has work in iterations"):
        to_gavel_types(_trace(steps), seed=0)
