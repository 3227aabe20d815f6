"""Pollux (OSDI'21 §4.2) as an allocation policy: search, penalties, placement, invariants."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import replace

import numpy as np
import pytest
from builders import cycle_state, make_cluster, make_job
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dlsched.cluster.cluster import Cluster
from dlsched.policies.elastic.configs import restart_factor
from dlsched.policies.elastic.search import greedy_counts
from dlsched.policies.pollux import PolluxAllocator
from dlsched.scheduling.allocation import Assignment
from dlsched.scheduling.registry import build_policy
from dlsched.scheduling.state import CycleState
from dlsched.workload.job import Job, JobSpec, JobStatus

INF = float("inf")


def spec(job_id: str, model: str | None, gpus: int = 1, at: float = 0.0,
         bounds: tuple[int, int] | None = None) -> JobSpec:
    """A goodput-model job: ``model`` is the Pollux application (None: no goodput profile)."""
    builder = make_job(job_id).gpus(gpus).at(at).work(1000)
    if bounds is not None:
        builder = builder.elastic(*bounds)
    return replace(builder.build(), model=model, batch_size=256)


def running(s: JobSpec, gpus: tuple[int, ...], done: float = 0.0) -> Job:
    job = Job(s)
    job.set_status(JobStatus.RUNNING)
    job.allocation, job.shares, job.done_work = gpus, (1.0,) * len(gpus), done
    return job


def state_of(cluster: Cluster, jobs: list[Job], now: float = 0.0) -> CycleState:
    run = [j for j in jobs if j.allocation]
    used = {g: 1.0 for j in run for g in j.allocation}
    return cycle_state(cluster, used, waiting=[j for j in jobs if not j.allocation],
                       running=run, now=now)


def apply(cluster: Cluster, jobs: list[Job], result: Mapping[str, Assignment]) -> list[Job]:
    """The jobs after the core carried ``result`` out: each on the first GPUs of its nodes."""
    after = []
    for job in jobs:
        target = result.get(job.job_id)
        if target is None:
            after.append(Job(job.spec))
            continue
        gpus = tuple(int(cluster.node_first_gpu[n]) + i for n, k in sorted(
            target.per_node().items()) for i in range(k))
        after.append(running(job.spec, gpus, job.done_work))
    return after


def sizes(result: Mapping[str, Assignment]) -> dict[str, int]:
    return {job_id: a.num_workers for job_id, a in result.items()}


@pytest.mark.parametrize(("utility", "capacity", "expected"), [
    # per GPU: job 0 gains 5 then 1, job 1 gains 4 then 4: one GPU each (9 beats 8 and 6)
    ([[0, 5, 6], [0, 4, 8]], 2, [1, 1]),
    # job 0 may only take 0 or 2 (rigid): the jump of 5/GPU beats job 1's 3
    ([[0, -INF, 10], [0, 3, 4]], 2, [2, 0]),
    # the best jump (0 -> 2, 50/GPU) does not fit: the best that fits is taken
    ([[0, 1, 100]], 1, [1]),
    # a utility that falls with more GPUs stops growing
    ([[0, 5, 4, 3]], 3, [1]),
    ([[0, 1], [0, 1]], 0, [0, 0]),
], ids=["spread", "rigid-jump", "too-wide", "no-gain", "no-capacity"])
def test_greedy_counts(utility: list[list[float]], capacity: int, expected: list[int]) -> None:
    assert greedy_counts(np.array(utility, dtype=float), capacity).tolist() == expected


@pytest.mark.parametrize(("age", "restarts", "delta", "expected"), [
    (60.0, 0, 30.0, 60 / 90), (100.0, 2, 30.0, 40 / 130), (10.0, 1, 30.0, 0.0),
    (50.0, 3, 0.0, 1.0),
])
def test_restart_factor(age: float, restarts: int, delta: float, expected: float) -> None:
    assert restart_factor(age, restarts, delta) == pytest.approx(expected)


@pytest.mark.parametrize("p", [-1.0, 1.0])
def test_job_that_scales_gets_more_gpus(p: float) -> None:
    # One 8-GPU node: imagenet's goodput grows ~6.8x from 1 to 8 GPUs, ncf's ~1.9x.
    cluster = make_cluster(nodes=1, gpus=8, gpu_type="T4")
    jobs = [Job(spec("img", "imagenet")), Job(spec("ncf", "ncf"))]
    got = sizes(PolluxAllocator(p=p).allocate(state_of(cluster, jobs)))
    assert got["img"] > got["ncf"] >= 1
    assert got["img"] + got["ncf"] == 8


def test_utilitarian_p_favours_the_scalable_job_more_than_fair_p() -> None:
    cluster = make_cluster(nodes=1, gpus=8, gpu_type="T4")
    jobs = [Job(spec("img", "imagenet")), Job(spec("ncf", "ncf"))]
    fair = sizes(PolluxAllocator(p=-1).allocate(state_of(cluster, jobs)))
    utilitarian = sizes(PolluxAllocator(p=1).allocate(state_of(cluster, jobs)))
    assert utilitarian["img"] > fair["img"]


def test_fairness_gives_every_job_a_gpu_first() -> None:
    # 8 jobs, 8 GPUs, p = -1: a job left out has speedup 0.01, so each gets exactly one.
    cluster = make_cluster(nodes=2, gpus=4, gpu_type="T4")
    jobs = [Job(spec(f"j{i}", "imagenet" if i % 2 else "ncf")) for i in range(8)]
    assert sizes(PolluxAllocator().allocate(state_of(cluster, jobs))) == {
        f"j{i}": 1 for i in range(8)}


def test_all_gpus_used_when_jobs_can_use_them() -> None:
    cluster = make_cluster(nodes=2, gpus=4, gpu_type="T4")
    jobs = [Job(spec(f"i{k}", "imagenet")) for k in range(3)]
    got = sizes(PolluxAllocator().allocate(state_of(cluster, jobs)))
    assert sum(got.values()) == 8 and sorted(got.values()) == [2, 3, 3]


@pytest.mark.parametrize(("restart_seconds", "expected"), [(30.0, 3), (0.0, 4)])
def test_restart_penalty_keeps_a_young_job_in_place(restart_seconds: float,
                                                    expected: int) -> None:
    # Round 1: imagenet and cifar10 share a 4-GPU node. Round 2 (60 s later) cifar10 is gone;
    # growing imagenet from its 2 GPUs to 4 (goodput x1.9) costs a restart: at age 60 s the
    # factor is 60/90, so it is worth it; after another round on 3 GPUs (x1.3 to grow, factor
    # (120 - 30)/150 = 0.6) it is not, unless restarts are free.
    cluster = make_cluster(nodes=1, gpus=4, gpu_type="T4")
    policy = PolluxAllocator(restart_seconds=restart_seconds)
    jobs = [Job(spec("img", "imagenet")), Job(spec("cif", "cifar10"))]
    first = policy.allocate(state_of(cluster, jobs))
    assert sizes(first) == {"img": 2, "cif": 2}
    jobs = apply(cluster, jobs, first)[:1]
    second = policy.allocate(state_of(cluster, jobs, now=60.0))
    jobs = apply(cluster, jobs, {"img": Assignment((0, 0, 0))})  # as if it had grown to 3
    third = policy.allocate(state_of(cluster, jobs, now=120.0))
    assert sizes(second)["img"] == 4
    assert sizes(third) == {"img": expected}


def test_same_inputs_same_allocation_twice() -> None:
    # With nothing changed, the second round keeps every job exactly where it is.
    cluster = make_cluster(nodes=4, gpus=4, gpu_type="T4")
    jobs = [Job(spec(f"j{i}", app)) for i, app in enumerate(
        ["imagenet", "cifar10", "bert", "ncf", "yolov3", "deepspeech2"])]
    policy = PolluxAllocator()
    first = policy.allocate(state_of(cluster, jobs, now=300.0))
    second = policy.allocate(state_of(cluster, apply(cluster, jobs, first), now=360.0))
    assert second == first


@pytest.mark.parametrize(("interference", "running_jobs"), [(True, 1), (False, 2)])
def test_interference_avoidance(interference: bool, running_jobs: int) -> None:
    # Two rigid 6-GPU jobs on 3 nodes x 4: both must span two nodes and would share one.
    cluster = make_cluster(nodes=3, gpus=4, gpu_type="T4")
    jobs = [Job(spec(f"r{i}", "imagenet", gpus=6)) for i in range(2)]
    policy = PolluxAllocator(elastic="declared", interference=interference)
    got = sizes(policy.allocate(state_of(cluster, jobs)))
    assert sorted(got.values()) == [6] * running_jobs


def test_rigid_jobs_get_their_size_or_nothing() -> None:
    cluster = make_cluster(nodes=1, gpus=4, gpu_type="T4")
    jobs = [Job(spec("r3", "cifar10", gpus=3)), Job(spec("r2", "ncf", gpus=2)),
            Job(spec("e", "imagenet", bounds=(1, 4)))]
    got = sizes(PolluxAllocator(elastic="declared").allocate(state_of(cluster, jobs)))
    # p = -1: e's first GPU is worth the most, so e runs; r3 and r2 cannot both fit beside it
    # and whichever runs has exactly its size.
    assert got["e"] >= 1 and sum(got.values()) == 4
    assert len({"r3", "r2"} & set(got)) == 1
    assert all(got[r] == int(r[1]) for r in ("r3", "r2") if r in got)


def test_job_without_goodput_profile_keeps_its_declared_size() -> None:
    cluster = make_cluster(nodes=1, gpus=4, gpu_type="T4")
    got = sizes(PolluxAllocator().allocate(state_of(cluster, [Job(spec("x", None, gpus=2))])))
    assert got == {"x": 2}


def test_registered_profile() -> None:
    profile = build_policy("pollux", {"p": "-0.5", "elastic": "declared"})
    assert (profile.name, profile.round_seconds, profile.acts_on_running) == ("pollux", 60.0,
                                                                               True)
    assert profile.plugins[0].p == -0.5


def check_invariants(cluster: Cluster, jobs: list[Job], result: Mapping[str, Assignment],
                     policy: PolluxAllocator, interference: bool = True) -> None:
    """Capacity per node, bounds, rigid sizes and (``interference``) one distributed job per
    node: what any allocation of the policy must satisfy."""
    by_id = {j.job_id: j for j in jobs}
    used: Counter[int] = Counter()
    for job_id, target in result.items():
        low, high = policy.worker_bounds(by_id[job_id], cluster.num_gpus)
        assert low <= target.num_workers <= high, job_id
        used.update(target.per_node())
    assert all(used[n] <= int(cluster.node_gpus[n]) for n in used)
    if interference:
        spread = Counter(n for t in result.values() if len(t.per_node()) > 1
                         for n in t.per_node())
        assert all(count <= 1 for count in spread.values())


APPS = ("yolov3", "bert", "cifar10")


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(nodes=st.integers(1, 4), mix=st.lists(
    st.tuples(st.sampled_from(APPS), st.integers(1, 6), st.booleans(), st.integers(0, 3)),
    min_size=1, max_size=10), elastic=st.sampled_from(["all", "declared"]))
def test_allocations_respect_capacity_and_bounds(
        nodes: int, mix: list[tuple[str, int, bool, int]], elastic: str) -> None:
    cluster = make_cluster(nodes=nodes, gpus=4, gpu_type="T4")
    jobs = [Job(spec(f"j{i}", app, gpus=gpus, at=float(i),
                     bounds=(1, gpus + extra) if declared else None))
            for i, (app, gpus, declared, extra) in enumerate(mix)]
    policy = PolluxAllocator(elastic=elastic)
    result = policy.allocate(state_of(cluster, jobs, now=100.0))
    check_invariants(cluster, jobs, result, policy)


def test_targets_pass_the_core_allocation_cycle() -> None:
    # The core's own checks (bounds, nodes, free GPUs per node) accept a round with running,
    # waiting, rigid and declared-elastic jobs; every GPU ends up used.
    from dlsched.scheduling.allocation_cycle import run_allocation_cycle

    cluster = make_cluster(nodes=3, gpus=4, gpu_type="T4")
    jobs = [running(spec("a", "imagenet", gpus=2, bounds=(1, 8)), (0, 1)),
            running(spec("b", "cifar10", gpus=4), (4, 5, 6, 7)),
            Job(spec("c", "bert", gpus=2, bounds=(2, 6))), Job(spec("d", "ncf", gpus=2))]
    state = state_of(cluster, jobs, now=600.0)
    result = run_allocation_cycle(PolluxAllocator(elastic="declared"), state.snapshot)
    assert sorted(s.job_id for s in result.starts) == ["c", "d"]
    taken = {g for d in (*result.starts, *result.resizes) for g in d.gpus}
    kept = {g for j in jobs[:2] if j.job_id not in {r.job_id for r in result.resizes}
            for g in j.allocation}
    assert not result.preemptions and len(taken | kept) == 12


def test_explore_doubles_a_job_from_the_most_gpus_it_ran_on() -> None:
    # The Pollux artifact's max_replicas = 2 x the most replicas profiled (1 before any run)
    cluster = make_cluster(nodes=2, gpus=4, gpu_type="T4")
    policy = PolluxAllocator(explore=True)
    jobs = [Job(spec("img", "imagenet"))]
    first = policy.allocate(state_of(cluster, jobs))
    assert sizes(first) == {"img": 1}
    jobs = apply(cluster, jobs, first)
    assert sizes(policy.allocate(state_of(cluster, jobs, now=600.0))) == {"img": 2}
    assert sizes(PolluxAllocator().allocate(state_of(cluster, jobs, now=600.0))) == {"img": 8}


def test_penalize_start_discounts_a_young_waiting_job() -> None:
    # 2 GPUs, a running imagenet job (age 600 s) and a cifar10 job just arrived (age 10 s):
    # the artifact penalises any changed allocation, a first start too: factor 10 / 40
    cluster = make_cluster(nodes=1, gpus=2, gpu_type="T4")
    old = running(spec("img", "imagenet"), (0, 1))
    new = Job(spec("cif", "cifar10", at=590.0))
    plain = PolluxAllocator().utilities(state_of(cluster, [old, new], now=600.0),
                                        [old, new], [Counter({0: 2}), Counter()], 2)[0]
    start = PolluxAllocator(penalize_start=True).utilities(
        state_of(cluster, [old, new], now=600.0), [old, new], [Counter({0: 2}), Counter()], 2)[0]
    assert start[0, 2] == pytest.approx(plain[0, 2])  # the running job as it is
    assert start[1, 1] == pytest.approx(plain[1, 1] * (10 / 40) ** -1)  # p = -1: S^-1


def test_rigid_apps_keep_their_requested_size() -> None:
    # Alone on 8 GPUs ncf would grow; the artifact keeps ncf at one replica
    cluster = make_cluster(nodes=2, gpus=4, gpu_type="T4")
    jobs = [Job(spec("ncf", "ncf"))]
    assert sizes(PolluxAllocator().allocate(state_of(cluster, jobs)))["ncf"] > 1
    assert sizes(PolluxAllocator(rigid_apps="ncf").allocate(state_of(cluster, jobs))) == {
        "ncf": 1}


@pytest.mark.parametrize("trace", ["pinned", "mig"])
def test_a_job_pinned_to_a_gpu_type_runs_only_there(trace: str) -> None:
    # A V100 node listed first: Pollux put A100-pinned jobs there, and MIG jobs too (the run
    # stopped: "GPU 0 cannot hold MIG profile '1g'").
    from builders import cluster_of, records_of, simulator

    from dlsched.cluster.cluster import Node
    from dlsched.mig.profiles import profile_share

    cluster = cluster_of(Node("v", "V100", 2), Node("a", "A100", 2))
    jobs = ([JobSpec(j, 0, 1, 100.0, gpu_types=("A100",)) for j in ("j1", "j2", "j3")]
            if trace == "pinned" else
            [JobSpec(j, 0, 1, 100.0, gpu_share=profile_share(p), mig_profile=p)
             for j, p in (("a", "1g"), ("b", "3g"), ("c", "7g"))])
    sim = simulator("pollux", cluster, jobs)
    assert {r.status for r in records_of(sim).values()} == {"finished"}
    assert {g for s in sim.core.segments.all() for g in s.gpus} == {2, 3}


@pytest.mark.parametrize(("most", "unobserved", "cross_from_within"), [
    (0, ("alpha_r", "beta_r", "alpha_n", "beta_n"), False),
    (1, ("alpha_r", "beta_r", "alpha_n", "beta_n"), False),
    (2, ("beta_r",), True),
    (4, (), True),
    (5, (), False),
], ids=["never-ran", "one-gpu", "two-gpus", "one-node", "across-nodes"])
def test_learned_sync_keeps_what_a_job_could_have_measured(
        most: int, unobserved: tuple[str, ...], cross_from_within: bool) -> None:
    # The artifact's fit_perf_params: unobserved terms at 1e-8, cross-node >= 1.1 x within-node
    from dlsched.perf.goodput.throughput_model import goodput_function
    from dlsched.policies.elastic.sync_prior import UNOBSERVED, learned_sync

    true = goodput_function("imagenet", "T4").params
    learned = learned_sync(true, most, node_size=4)
    for name in ("alpha_c", "beta_c", "gamma"):
        assert getattr(learned, name) == getattr(true, name)
    for name in unobserved:
        assert getattr(learned, name) == UNOBSERVED
    if cross_from_within:
        assert learned.alpha_n == pytest.approx(1.1 * learned.alpha_r)
        assert learned.beta_n == pytest.approx(1.1 * learned.beta_r)
    if most > 4:
        assert learned == true
    assert learned_sync(true, most, node_size=4, ran_across_nodes=True) == true


def test_learn_sync_values_a_job_by_the_sizes_it_ran_on() -> None:
    # Ran on one GPU: valued as if it synchronised for free (it would grow more eagerly); ran
    # across nodes (on 2 GPUs of two nodes, or on more GPUs than a node holds): valued with
    # the true model, as without the option; on 2 GPUs of one node: cross-node sync guessed
    cluster = make_cluster(nodes=2, gpus=4, gpu_type="T4")
    for gpus, same in (((0,), False), ((0, 1), False), ((0, 4), True),
                       ((0, 1, 2, 3, 4), True)):
        job = running(spec("img", "imagenet"), gpus)
        state, held = state_of(cluster, [job], now=600.0), [Counter(Assignment.of(
            job, cluster).per_node())]
        plain = PolluxAllocator().utilities(state, [job], held, 8)[0]
        learned = PolluxAllocator(learn_sync=True).utilities(state, [job], held, 8)[0]
        assert np.allclose(plain, learned) == same, (gpus, plain, learned)
