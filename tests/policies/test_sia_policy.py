"""Sia (SOSP'23 §4) as an allocation policy: configurations, values, ILP, placement."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import replace

import numpy as np
import pytest
from builders import cluster_of, make_cluster
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_pollux_policy import apply, running, sizes, spec, state_of

from dlsched.cluster.cluster import Cluster, Node
from dlsched.perf.goodput.throughput_model import goodput_function
from dlsched.policies.elastic.sia_configs import Columns, type_configs
from dlsched.policies.elastic.sia_ilp import solve_allocation
from dlsched.policies.sia import SiaAllocator
from dlsched.scheduling.allocation import Assignment
from dlsched.scheduling.registry import build_policy
from dlsched.workload.bundled import resolve_trace
from dlsched.workload.job import Job


def two_types(t4_nodes: int = 1, a100_nodes: int = 1, a100_size: int = 4) -> Cluster:
    return cluster_of(*(Node(f"t{i}", "T4", 4) for i in range(t4_nodes)),
                      *(Node(f"a{i}", "A100", a100_size) for i in range(a100_nodes)))


def fast_for(app: str, speed: float = 4.0) -> dict:
    """Parameters under which only ``app`` computes ``speed`` times faster on A100."""
    t4 = goodput_function(app).params
    return {(app, "A100"): replace(t4, alpha_c=t4.alpha_c / speed, beta_c=t4.beta_c / speed)}


def types_of(cluster: Cluster, result: Mapping[str, Assignment]) -> dict[str, set[str]]:
    return {j: {cluster.nodes[n].gpu_type for n in a.nodes} for j, a in result.items()}


@pytest.mark.parametrize(("size", "nodes", "cap", "counts"), [
    (4, 3, 64, [1, 2, 4, 8, 12]),
    (8, 2, 64, [1, 2, 4, 8, 16]),
    (4, 4, 8, [1, 2, 4, 8]),
    (4, 1, 2, [1, 2]),
])
def test_type_configs(size: int, nodes: int, cap: int, counts: list[int]) -> None:
    configs = type_configs("T4", 0, size, nodes, cap)
    assert configs.counts.tolist() == counts
    assert configs.multi.tolist() == [k > size for k in counts]


@pytest.mark.parametrize(("p", "smallest_value"), [(-1.0, 100 - 1), (-0.5, 10 - 1)])
def test_smallest_configuration_has_speedup_one(p: float, smallest_value: float) -> None:
    # Normalized by its smallest configuration (speedup 1), a job's 1-GPU column is worth
    # 1^p less than a job left out (0.01^p): 100 - 1 at p = -1, 10 - 1 at p = -0.5.
    cluster = make_cluster(nodes=1, gpus=4, gpu_type="T4")
    policy = SiaAllocator(p=p, perf_params={})
    state = state_of(cluster, [Job(spec("img", "imagenet"))])
    columns = policy.columns(state, [Job(spec("img", "imagenet"))], [Counter()],
                             policy._type_configs(state, np.array([4])))
    assert columns.count.tolist()[0] == 1
    assert columns.value[0] == pytest.approx(smallest_value)
    assert np.all(np.diff(columns.value) > 0)  # larger configurations kept only if worth more


def test_ilp_one_configuration_per_job_within_capacity() -> None:
    # Two jobs, one type of 4 GPUs: (job, count, value). Best: job 0 at 1 + job 1 at 2 = 9.
    columns = Columns(np.array([0, 0, 1, 1]), np.zeros(4, dtype=np.int64),
                      np.array([1, 4, 2, 4]), np.zeros(4, dtype=bool),
                      np.array([5.0, 7.0, 4.0, 6.0]))
    for exact in (False, True):
        assert solve_allocation(columns, np.array([4]), exact).tolist() == [
            True, False, True, False]


def test_fast_gpu_goes_to_the_job_that_gains_from_it() -> None:
    # imagenet computes 4x faster on A100, cifar10 not at all: imagenet takes the A100 node.
    cluster = two_types()
    jobs = [Job(spec("cif", "cifar10")), Job(spec("img", "imagenet"))]
    for first in (jobs, jobs[::-1]):
        result = SiaAllocator(perf_params=fast_for("imagenet")).allocate(
            state_of(cluster, first))
        assert types_of(cluster, result) == {"img": {"A100"}, "cif": {"T4"}}


def test_job_that_scales_gets_more_gpus() -> None:
    # 8 GPUs in powers of two for three jobs: 4 + 2 + 2; imagenet (goodput x1.9 from 2 to 4
    # GPUs) gets the 4, not an ncf job (x1.3).
    cluster = make_cluster(nodes=2, gpus=4, gpu_type="T4")
    jobs = [Job(spec("ncf", "ncf")), Job(spec("img", "imagenet")), Job(spec("ncf2", "ncf"))]
    got = sizes(SiaAllocator(perf_params={}).allocate(state_of(cluster, jobs)))
    assert got == {"img": 4, "ncf": 2, "ncf2": 2}


def test_all_gpus_used_when_jobs_can_use_them() -> None:
    # Three imagenet jobs (goodput still growing at 4 GPUs) on 3 nodes x 4: 4 GPUs each.
    cluster = make_cluster(nodes=3, gpus=4, gpu_type="T4")
    jobs = [Job(spec(f"i{k}", "imagenet")) for k in range(3)]
    got = sizes(SiaAllocator(perf_params={}).allocate(state_of(cluster, jobs)))
    assert got == {"i0": 4, "i1": 4, "i2": 4}


def test_idle_slow_gpus_when_fast_ones_serve_every_job_better() -> None:
    # Sia's objective, not a bug: 3 imagenet jobs, A100 4x faster. A100 2+4+2 (speedups
    # 8, 16, 8 over one T4) is worth more at p = -0.5 than A100 8 + T4 4 + T4 4 (32, 4, 4).
    cluster = two_types(t4_nodes=2, a100_nodes=1, a100_size=8)
    jobs = [Job(spec(f"i{k}", "imagenet")) for k in range(3)]
    result = SiaAllocator(perf_params=fast_for("imagenet")).allocate(state_of(cluster, jobs))
    assert types_of(cluster, result) == {f"i{k}": {"A100"} for k in range(3)}
    assert sum(sizes(result).values()) == 8


@pytest.mark.parametrize(("restart_seconds", "expected"), [(30.0, 2), (0.0, 4)])
def test_restart_penalty_keeps_a_young_job_in_place(restart_seconds: float,
                                                    expected: int) -> None:
    # imagenet holds 2 of a node's 4 GPUs at age 20 s; 4 GPUs would be ~1.9x the goodput, but
    # the restart factor 20/50 = 0.4 makes the move worth less than staying.
    cluster = make_cluster(nodes=1, gpus=4, gpu_type="T4")
    policy = SiaAllocator(restart_seconds=restart_seconds, perf_params={})
    jobs = apply(cluster, [Job(spec("img", "imagenet"))], {"img": Assignment((0, 0))})
    assert sizes(policy.allocate(state_of(cluster, jobs, now=20.0))) == {"img": expected}


def test_second_round_keeps_the_first_rounds_allocation() -> None:
    cluster = two_types(t4_nodes=2, a100_nodes=1, a100_size=8)
    jobs = [Job(spec(f"j{i}", app)) for i, app in enumerate(
        ["imagenet", "cifar10", "bert", "ncf", "yolov3", "deepspeech2"])]
    policy = SiaAllocator(perf_params=fast_for("imagenet"))
    first = policy.allocate(state_of(cluster, jobs, now=300.0))
    second = policy.allocate(state_of(cluster, apply(cluster, jobs, first), now=360.0))
    assert second == first


def test_rigid_job_gets_its_size_on_one_type() -> None:
    # A rigid 6-GPU job on 4-GPU T4 nodes: one whole node and 2 GPUs of another.
    cluster = two_types(t4_nodes=2, a100_nodes=1)
    result = SiaAllocator(elastic="declared", perf_params={}).allocate(
        state_of(cluster, [Job(spec("r6", "cifar10", gpus=6))]))
    assert sizes(result) == {"r6": 6} and types_of(cluster, result) == {"r6": {"T4"}}
    assert sorted(result["r6"].per_node().values()) == [2, 4]


def test_registered_profile() -> None:
    profile = build_policy("sia", {"profiles": "bundled"})
    assert (profile.name, profile.round_seconds, profile.acts_on_running) == ("sia", 60.0, True)
    assert profile.plugins[0].perf_params() == {}


APPS = ("yolov3", "bert", "cifar10")


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(t4=st.integers(0, 3), a100=st.integers(1, 2), mix=st.lists(
    st.tuples(st.sampled_from(APPS), st.integers(1, 8), st.booleans(), st.integers(0, 4)),
    min_size=1, max_size=10), elastic=st.sampled_from(["all", "declared"]))
def test_allocations_respect_capacity_bounds_and_types(
        t4: int, a100: int, mix: list[tuple[str, int, bool, int]], elastic: str) -> None:
    cluster = two_types(t4, a100, a100_size=8)
    jobs = [Job(spec(f"j{i}", app, gpus=gpus, at=float(i),
                     bounds=(1, gpus + extra) if declared else None))
            for i, (app, gpus, declared, extra) in enumerate(mix)]
    policy = SiaAllocator(elastic=elastic, perf_params=fast_for("bert"))
    result = policy.allocate(state_of(cluster, jobs, now=100.0))
    used: Counter[int] = Counter()
    for job in jobs:
        target = result.get(job.job_id)
        if target is None:
            continue
        low, high = policy.worker_bounds(job, cluster.num_gpus)
        assert low <= target.num_workers <= high
        assert len({cluster.nodes[n].gpu_type for n in target.nodes}) == 1
        used.update(target.per_node())
    assert all(used[n] <= int(cluster.node_gpus[n]) for n in used)


def test_equally_valued_jobs_are_not_swapped_between_rounds() -> None:
    # 20 rigid 1-GPU ncf jobs of Pollux workload 1 at mixed progress, 16 GPUs: many waiting
    # jobs are worth exactly what running ones are. The LP is indifferent; without the stay
    # tie-break (STAY_TIE_BREAK = 0) this case swaps 4 of them in the next round.
    cluster = two_types(t4_nodes=2, a100_nodes=1, a100_size=8)
    jobs = [Job(s) for s in resolve_trace("pollux-1").jobs if s.model == "ncf"][:20]
    for job, share in zip(jobs, np.random.default_rng(0).uniform(0, 0.9, len(jobs)),
                          strict=True):
        job.done_work = share * job.spec.work
    policy = SiaAllocator(elastic="declared", perf_params=fast_for("ncf", 2.0))
    first = policy.allocate(state_of(cluster, jobs, now=3600.0))
    second = policy.allocate(state_of(cluster, apply(cluster, jobs, first), now=3660.0))
    assert len(first) == 16 and second == first


def test_targets_pass_the_core_allocation_cycle() -> None:
    # The core's own checks accept a Sia round: rigid 4 and 2 on T4 or A100 nodes, an elastic
    # imagenet job resized, a new elastic bert job started; no GPU is given twice.
    from dlsched.scheduling.allocation_cycle import run_allocation_cycle

    cluster = two_types(t4_nodes=2, a100_nodes=1, a100_size=8)
    jobs = [running(spec("a", "imagenet", gpus=2, bounds=(1, 8)), (0, 1)),
            running(spec("b", "cifar10", gpus=4), (4, 5, 6, 7)),
            Job(spec("c", "bert", gpus=2, bounds=(2, 8))), Job(spec("d", "ncf", gpus=2))]
    policy = SiaAllocator(elastic="declared", perf_params=fast_for("imagenet"))
    result = run_allocation_cycle(policy, state_of(cluster, jobs, now=600.0).snapshot)
    assert sorted(s.job_id for s in result.starts) == ["c", "d"]
    gpus = [g for d in (*result.starts, *result.resizes) for g in d.gpus]
    assert len(gpus) == len(set(gpus))
