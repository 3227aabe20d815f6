"""Gandiva's cycles that change nothing are skipped (``gandiva_settled``, ``hooks.
SettledAllocator``): with no job waiting and every running job alone at its share on one node,
a round keeps everyone where they are. Skipped or run, the schedule is the same; only the
cycle count drops (the Alibaba openb pods: 3,465 hours of 60 s rounds over a few long jobs)."""

from __future__ import annotations

import dataclasses

import pytest
from builders import cluster_of, make_cluster, make_job, records_of, simulator
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dlsched.cluster.cluster import Cluster, Node
from dlsched.sim.failures import Failure, FailureCategory, FailureModel
from dlsched.sim.simulator import Simulator
from dlsched.workload.job import JobSpec

NO_FAILURES = FailureModel("none", (FailureCategory("gpu", 0.0, 0.0),))


def _run(cluster: Cluster, jobs: list[JobSpec], skip: bool,
         failures: tuple[Failure, ...] = ()) -> tuple[dict, Simulator]:
    """Records (as plain tuples) and the simulator of a Gandiva run; ``skip`` False runs every
    cycle (the core is not told that a cycle changes nothing)."""
    sim = simulator("gandiva", cluster, jobs, failures=NO_FAILURES if failures else None)
    if not skip:
        sim.core.profile.settled = None
    for failure in failures:
        assert sim.failures is not None
        sim.failures.inject(failure)
    records = records_of(sim)
    return {j: dataclasses.astuple(r) for j, r in records.items()}, sim


def test_long_jobs_on_a_roomy_cluster_skip_their_rounds() -> None:
    # Three jobs of 1, 2 and a quarter GPU run 10 h on 2 x 4 GPUs: 600 rounds of 60 s, none
    # of which changes anything; the run takes a cycle per arrival and completion.
    jobs = [make_job("a").gpus(1).work(36000).build(),
            make_job("b").gpus(2).at(30).work(72000).build(),
            make_job("c").share(0.25).at(90).work(9000).build()]
    cluster = make_cluster(nodes=2, gpus=4)
    skipped, sim = _run(cluster, jobs, skip=True)
    every, full = _run(cluster, jobs, skip=False)
    assert skipped == every
    assert full.core.cycles > 600 and sim.core.cycles <= 6


def test_a_job_stopped_after_skipped_rounds_ran_in_them() -> None:
    # n0 (2 GPUs), n1 (1 GPU). b starts at 0 on n1 (the tightest), a at 5 and c at 10 on n0;
    # the cycles at 5 and 10 saw a running, never c. Rounds from 60 are skipped. n0 fails at
    # 1,000 s: a and c wait, b holds the only GPU up. At the round at 1,020 both last ran in
    # the skipped round at 960 (so by arrival: a first), not a at 10 and c never (c first).
    cluster = cluster_of(Node("n0", "V100", 2), Node("n1", "V100", 1))
    jobs = [make_job("b").work(1e5).build(), make_job("a").at(5).work(1e5).build(),
            make_job("c").at(10).work(1e5).build()]
    failures = (Failure(1000.0, 0, "gpu", 1e6),)
    skipped, _ = _run(cluster, jobs, skip=True, failures=failures)
    every, _ = _run(cluster, jobs, skip=False, failures=failures)
    assert skipped == every


JOB = st.tuples(st.sampled_from([1, 1, 2, 4, 0.5, 0.25]),  # GPUs, or a share of one
                st.floats(0, 4000), st.floats(60, 20000))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(JOB, min_size=1, max_size=8), st.booleans())
def test_skipping_never_changes_the_schedule(specs: list, fail: bool) -> None:
    jobs = []
    for i, (size, at, work) in enumerate(specs):
        job = make_job(f"j{i}").at(at).work(work)
        jobs.append((job.gpus(size) if size >= 1 else job.share(size)).build())
    cluster = make_cluster(nodes=2, gpus=4)
    failures = (Failure(2500.0, 1, "gpu", 3000.0),) if fail else ()
    skipped, _ = _run(cluster, jobs, skip=True, failures=failures)
    every, _ = _run(cluster, jobs, skip=False, failures=failures)
    assert skipped == every


@pytest.mark.parametrize(("migrate", "skips"), [
    pytest.param("true", False, id="a-spread-job-may-migrate"),
    pytest.param("false", True, id="no-migration"),
])
def test_a_spread_job_keeps_rounds_when_it_may_migrate(migrate: str, skips: bool) -> None:
    # x and y take two GPUs of n0 (3 GPUs each), so the 4-GPU job s spreads over n0 and n1;
    # its rounds are settled only when it may not migrate.
    jobs = [make_job("x").work(1e5).build(), make_job("y").work(1e5).build(),
            make_job("s").gpus(4).at(1).work(36000).build()]
    cluster = make_cluster(nodes=2, gpus=3)
    sim = simulator("gandiva", cluster, jobs, options={"migrate": migrate}, max_time=3600.0)
    records_of(sim)
    assert (sim.core.cycles < 10) is skips
