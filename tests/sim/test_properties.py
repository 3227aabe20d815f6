"""Invariants on random small traces and clusters, for every core policy (hypothesis).

(a) no GPU is ever given beyond its capacity, and the core's free table matches its jobs;
(b) a gang runs all of its workers or none;
(c) every finished job received exactly its work, and its GPU time matches (exactly with no
    restart overhead; within one overhead per preemption otherwise);
(d) runs are deterministic and do not depend on the input order of jobs;
(e) with space sharing that slows shared workers, (a) and (c) still hold: a job re-rated when a
    partner starts or leaves its GPU finishes exactly when its work is done.
Every generated job fits the cluster (num_gpus <= total GPUs), so every job must finish.
"""

from __future__ import annotations

import random

import numpy as np
import pytest
from builders import cluster_of, records_of, simulator
from hypothesis import given
from hypothesis import strategies as st

from dlsched.cluster.cluster import Cluster, Node
from dlsched.perf.model import LinearScaling, Placement
from dlsched.scheduling.registry import build_policy
from dlsched.scheduling.scheduler import Scheduler
from dlsched.scheduling.state import whole_free_per_node
from dlsched.sim.result import JobRecord
from dlsched.sim.simulator import SimConfig, Simulator
from dlsched.workload.job import JobSpec, JobStatus
from dlsched.workload.trace import Trace

POLICIES = {
    "fifo": {},
    "sjf": {},
    "srtf": {},
    "backfill": {},
    "tiresias": {"thresholds": "100:1000", "promote_knob": "2"},
}
TOL = 1e-6
MAX_TIME = 1e6  # far beyond any generated trace: reaching it means a job never finished


@st.composite
def scenarios(draw: st.DrawFn) -> tuple[Cluster, list[JobSpec], float]:
    sizes = draw(st.lists(st.sampled_from([1, 2, 4, 8]), min_size=1, max_size=3))
    cluster = cluster_of(*(Node(f"n{i}", "V100", g, nvlink_domain=4 if g == 8 else 0)
                           for i, g in enumerate(sizes)))
    total = cluster.num_gpus
    count = draw(st.integers(1, 30))
    jobs = [JobSpec(f"j{i:02d}",
                    submit_time=float(draw(st.integers(0, 200))),
                    num_gpus=draw(st.integers(1, min(8, total))),
                    work=draw(st.sampled_from([1.0, 2.5])) * draw(st.integers(1, 400)),
                    gpu_share=draw(st.sampled_from([1.0, 1.0, 1.0, 0.5])))
            for i in range(count)]
    overhead = draw(st.sampled_from([0.0, 0.0, 7.0]))
    return cluster, jobs, overhead


def _check_core(core: Scheduler) -> None:
    used = np.zeros(core.cluster.num_gpus)
    for job in core.running.values():
        assert job.status is JobStatus.RUNNING
        assert len(job.allocation) == len(job.shares) == job.spec.num_gpus  # (b) whole gang
        assert set(job.shares) == {job.spec.gpu_share}
        if job.spec.gpu_types:  # only GPUs of an allowed type
            assert {core.cluster.gpu_type_of(g).name for g in job.allocation} <= set(
                job.spec.gpu_types)
        np.add.at(used, list(job.allocation), list(job.shares))
    assert (used <= 1.0 + TOL).all(), "a GPU is given beyond its capacity"  # (a)
    assert np.allclose(core.free, 1.0 - used, atol=TOL)
    assert ((core.free >= -TOL) & (core.free <= 1.0 + TOL)).all()
    node_free = getattr(core, "node_free", None)
    if node_free is not None:
        assert np.array_equal(node_free, whole_free_per_node(core.cluster, core.free))
    waiting = set(core.waiting)
    assert not waiting & set(core.running)
    for job_id, job in core.jobs.items():
        assert job.status.is_terminal or (job_id in waiting) != (job_id in core.running)
        assert (job_id in waiting) == job.status.is_waiting


def _instrument(sim: Simulator) -> None:
    """Check the core after every cycle, and each job's progress when it finishes."""
    core = sim.core
    cycle, finish = core.cycle, core.finish

    def checked_cycle():  # noqa: ANN202
        result = cycle()
        _check_core(core)
        return result

    def checked_finish(job_id: str) -> None:
        job, now = core.running[job_id], sim.clock.now()
        since = max(job.progress_time, job.productive_from)
        progress = job.done_work + job.rate * max(0.0, now - since)  # not capped at the work
        assert progress == pytest.approx(job.spec.work, rel=1e-9, abs=TOL)
        finish(job_id)

    core.cycle, core.finish = checked_cycle, checked_finish


class SharedSlowdown(LinearScaling):
    """Linear scaling, but a job with a worker sharing its GPU runs at 0.6 of that speed."""

    name = "shared-slowdown"

    def rate(self, spec: JobSpec, placement: Placement) -> float:
        return super().rate(spec, placement) * (0.6 if placement.is_shared else 1.0)


def _run(policy: str, cluster: Cluster, jobs: list[JobSpec], overhead: float,
         check: bool = False, sharing: bool = False) -> dict[str, JobRecord]:
    if sharing:
        sim = Simulator(cluster, Trace("test", tuple(jobs)),
                        build_policy(policy, POLICIES[policy]),
                        SimConfig(restart_overhead=overhead, max_time=MAX_TIME),
                        throughput=SharedSlowdown())
    else:
        sim = simulator(policy, cluster, jobs, options=POLICIES[policy],
                        restart_overhead=overhead, max_time=MAX_TIME)
    if check:
        _instrument(sim)
    return records_of(sim)


@pytest.mark.parametrize("policy", list(POLICIES))
@given(scenario=scenarios())
def test_invariants(policy: str, scenario: tuple[Cluster, list[JobSpec], float]) -> None:
    cluster, jobs, overhead = scenario
    records = _run(policy, cluster, jobs, overhead, check=True)
    for spec in jobs:
        record = records[spec.job_id]
        assert record.status == "finished", (spec, record)
        assert record.work_done == record.work == spec.work  # (c)
        assert record.first_start >= spec.submit_time
        assert record.finish_time - record.first_start >= spec.work - TOL
        ideal = spec.work * spec.num_gpus * spec.gpu_share
        slack = record.preemptions * overhead * spec.num_gpus * spec.gpu_share
        assert ideal - TOL <= record.gpu_seconds <= ideal + slack + TOL
        if policy in ("fifo", "sjf", "backfill"):
            assert record.preemptions == 0


@pytest.mark.parametrize("policy", list(POLICIES))
@given(scenario=scenarios(), seed=st.integers(0, 2**16))
def test_deterministic_and_input_order_free(policy: str,
                                            scenario: tuple[Cluster, list[JobSpec], float],
                                            seed: int) -> None:
    # A shuffle may leave the order as it was: then this checks plain determinism.
    cluster, jobs, overhead = scenario
    shuffled = list(jobs)
    random.Random(seed).shuffle(shuffled)
    assert _run(policy, cluster, shuffled, overhead) == _run(policy, cluster, jobs, overhead)


@st.composite
def typed_scenarios(draw: st.DrawFn) -> tuple[Cluster, list[JobSpec], float]:
    """Two GPU types, two tenant queues, jobs pinned to a type now and then: exercises the
    per-queue heads of strict FIFO and the per-kind miss cache (kinds = allowed nodes)."""
    nodes = [Node(f"k{i}", "K80", draw(st.sampled_from([2, 4]))) for i in range(2)]
    nodes += [Node(f"v{i}", "V100", draw(st.sampled_from([2, 4]))) for i in range(2)]
    cluster = cluster_of(*nodes)
    per_type = cluster.gpus_by_type()
    jobs = []
    for i in range(draw(st.integers(1, 30))):
        pinned = draw(st.sampled_from([(), (), ("K80",), ("V100",)]))
        cap = min(per_type[pinned[0]], 8) if pinned else min(cluster.num_gpus, 8)
        jobs.append(JobSpec(f"j{i:02d}", submit_time=float(draw(st.integers(0, 200))),
                            num_gpus=draw(st.integers(1, cap)),
                            work=float(draw(st.integers(1, 400))),
                            queue=draw(st.sampled_from(["a", "b"])), gpu_types=pinned,
                            gpu_share=draw(st.sampled_from([1.0, 1.0, 1.0, 0.5]))))
    return cluster, jobs, draw(st.sampled_from([0.0, 7.0]))


@pytest.mark.parametrize("policy", list(POLICIES))
@given(scenario=typed_scenarios())
def test_every_job_finishes_on_typed_nodes_and_queues(
        policy: str, scenario: tuple[Cluster, list[JobSpec], float]) -> None:
    cluster, jobs, overhead = scenario
    records = _run(policy, cluster, jobs, overhead, check=True)
    for spec in jobs:
        record = records[spec.job_id]
        assert record.status == "finished", (spec, record)
        assert record.work_done == record.work == spec.work


@pytest.mark.parametrize("policy", ["fifo", "srtf"])
@given(scenario=scenarios())
def test_invariants_with_space_sharing(policy: str,
                                       scenario: tuple[Cluster, list[JobSpec], float]) -> None:
    cluster, jobs, overhead = scenario
    records = _run(policy, cluster, jobs, overhead, check=True, sharing=True)  # (e)
    for spec in jobs:
        record = records[spec.job_id]
        assert record.status == "finished", (spec, record)
        assert record.work_done == record.work == spec.work


def test_partner_start_and_finish_rerate_golden() -> None:
    # One GPU, two half-GPU jobs of 100 s of work; alone rate 1, shared 0.6 (SharedSlowdown).
    # A: 0-10 alone (10 done), then shares with B from 10: 90 left at 0.6 -> A ends at 160.
    # B: 10-160 at 0.6 (90 done), then alone: 10 left at 1 -> B ends at 170.
    # Without re-rating A would keep rate 1 and end at 100.
    cluster = cluster_of(Node("n0", "V100", 1))
    jobs = [JobSpec("A", 0.0, 1, 100.0, gpu_share=0.5),
            JobSpec("B", 10.0, 1, 100.0, gpu_share=0.5)]
    records = _run("fifo", cluster, jobs, 0.0, check=True, sharing=True)
    assert records["A"].finish_time == pytest.approx(160.0)
    assert records["B"].finish_time == pytest.approx(170.0)


@st.composite
def resource_scenarios(draw: st.DrawFn) -> tuple[Cluster, list[JobSpec], float]:
    """Nodes with CPUs, host memory and GPU memory; jobs asking for some of each per worker,
    now and then more than any node or GPU has (the core must fail those at submission)."""
    nodes = [Node(f"n{i}", "V100", draw(st.sampled_from([1, 2, 4])),
                  cpus=draw(st.sampled_from([0, 8, 16])),
                  memory_gb=draw(st.sampled_from([0, 32, 64])),
                  gpu_memory_gb=draw(st.sampled_from([16, 32])))
             for i in range(draw(st.integers(1, 3)))]
    cluster = cluster_of(*nodes)
    # A fraction of a GPU for one-worker jobs, as in the Alibaba trace (the core places a
    # gang's workers on distinct GPUs).
    jobs = [JobSpec(f"j{i:02d}", submit_time=float(draw(st.integers(0, 200))),
                    num_gpus=(gpus := draw(st.integers(1, min(4, cluster.num_gpus)))),
                    work=float(draw(st.integers(1, 400))),
                    gpu_share=draw(st.sampled_from([1.0, 0.5, 0.25])) if gpus == 1 else 1.0,
                    cpus_per_gpu=draw(st.sampled_from([0, 2, 6, 20])),
                    memory_gb_per_gpu=draw(st.sampled_from([0, 8, 24])),
                    gpu_memory_gb=draw(st.sampled_from([0, 4, 12, 40])),
                    **_cap(draw))
            for i in range(draw(st.integers(1, 20)))]
    return cluster, jobs, draw(st.sampled_from([0.0, 7.0]))


GROUP_CAPS = {"a": 1, "b": 2}  # max_per_node of each group's jobs


def _cap(draw: st.DrawFn) -> dict:
    """A job's per-node cap: of a group (its fixed cap), of its own workers, or none."""
    group = draw(st.sampled_from(["a", "b", None, None]))
    if group is not None:
        return {"group": group, "max_per_node": GROUP_CAPS[group]}
    return {"max_per_node": draw(st.sampled_from([0, 0, 1, 2]))}


def _check_resources(core: Scheduler) -> None:
    """(a) for CPUs, host memory and GPU memory: the running jobs never hold more than a node
    or GPU has, and the core's books are capacity minus what they hold."""
    cluster = core.cluster
    cpus, memory = np.zeros(cluster.num_nodes), np.zeros(cluster.num_nodes)
    gpu_memory = np.zeros(cluster.num_gpus)
    for job in core.running.values():
        for gpu in job.allocation:
            node = int(cluster.gpu_node[gpu])
            cpus[node] += job.spec.cpus_per_gpu
            memory[node] += job.spec.memory_gb_per_gpu
            gpu_memory[gpu] += job.spec.gpu_memory_gb
    per_group: dict[str, np.ndarray] = {}
    for job in core.running.values():
        spec = job.spec
        if spec.max_per_node:
            held = per_group.setdefault(spec.density_group, np.zeros(cluster.num_nodes, int))
            np.add.at(held, cluster.gpu_node[list(job.allocation)], 1)
            assert held.max() <= spec.max_per_node, f"{spec.density_group} over its cap"
    assert {k: v.tolist() for k, v in per_group.items() if v.any()} == {
        k: v.tolist() for k, v in core.resources.groups.items()}
    for held, capacity, free in ((cpus, cluster.node_cpus, core.resources.cpus),
                                 (memory, cluster.node_memory_gb, core.resources.memory_gb),
                                 (gpu_memory, cluster.gpu_memory_gb,
                                  core.resources.gpu_memory_gb)):
        modelled = capacity > 0
        assert (held[modelled] <= capacity[modelled] + TOL).all(), "a resource is double-booked"
        assert np.allclose(free[modelled], capacity[modelled] - held[modelled], atol=TOL)
        assert np.isinf(free[~modelled]).all()


def _fits_alone(cluster: Cluster, spec: JobSpec) -> bool:
    """Whether the empty cluster could host the job, counted by hand node by node."""
    total = 0
    for node in cluster.nodes:
        per_gpu = int(1 / spec.gpu_share + 1e-9)
        if spec.gpu_memory_gb:
            per_gpu = min(per_gpu, int(node.memory_per_gpu // spec.gpu_memory_gb))
        room = node.num_gpus * per_gpu
        for have, need in ((node.cpus, spec.cpus_per_gpu),
                           (node.memory_gb, spec.memory_gb_per_gpu)):
            if have and need:
                room = min(room, int(have // need))
        if spec.max_per_node:
            room = min(room, spec.max_per_node)
        total += room
    return total >= spec.num_gpus


@pytest.mark.parametrize("policy", ["fifo", "backfill", "tiresias"])
@given(scenario=resource_scenarios())
def test_no_resource_is_double_booked(policy: str,
                                      scenario: tuple[Cluster, list[JobSpec], float]) -> None:
    cluster, jobs, overhead = scenario
    sim = simulator(policy, cluster, jobs, options=POLICIES[policy], restart_overhead=overhead,
                    max_time=MAX_TIME)
    _instrument(sim)
    core, cycle = sim.core, sim.core.cycle

    def checked_cycle():  # noqa: ANN202
        result = cycle()
        _check_resources(core)
        return result

    core.cycle = checked_cycle
    records = records_of(sim)
    for spec in jobs:
        expected = "finished" if _fits_alone(cluster, spec) else "failed"
        assert records[spec.job_id].status == expected, (spec, records[spec.job_id])
