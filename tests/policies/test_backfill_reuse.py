"""Backfill's reservation reused while every expected end stays put (``RunningEnds.fixed``),
and its running ends filed from the core's journal of running-job changes (issue 14): the
same records as computing every reservation afresh from a look at every running job, on
workloads whose ends move (restart pauses, jobs slower than their reference rate on older
GPUs) and whose ends do not."""

from __future__ import annotations

import random

import pytest
from builders import cluster_of, make_cluster, make_job

from dlsched.cluster.cluster import Node
from dlsched.perf.model import LinearScaling
from dlsched.policies import backfill as backfill_module
from dlsched.policies.backfill_ends import RunningEnds
from dlsched.scheduling.journal import RunningJournal
from dlsched.scheduling.registry import build_policy
from dlsched.sim.simulator import SimConfig, Simulator
from dlsched.workload.job import Job, JobSpec, JobStatus
from dlsched.workload.trace import Trace


def _workload(seed: int, jobs: int = 150) -> list[JobSpec]:
    rng = random.Random(seed)
    return [make_job(f"j{i:03d}").at(rng.uniform(0, 4000)).gpus(rng.choice([1, 1, 2, 4, 8]))
            .work(rng.expovariate(1 / 1500)).build() for i in range(jobs)]


CLUSTERS = {
    "same-gpus": lambda: make_cluster(nodes=4, gpus=4),
    # A K80 job runs below its reference rate (a V100's): its end moves with time.
    "mixed-gpus": lambda: cluster_of(Node("v0", "V100", 4), Node("v1", "V100", 4),
                                     Node("k0", "K80", 4), Node("k1", "K80", 4)),
}


def _records(cluster: str, seed: int, start_overhead: float, patch: pytest.MonkeyPatch,
             afresh: bool) -> list[tuple]:
    with patch.context() as p:
        if afresh:
            p.setattr(RunningEnds, "fixed", lambda self, changes, since: False)
            p.setattr(RunningJournal, "since", lambda self, count: None)
        result = Simulator(CLUSTERS[cluster](), Trace("t", tuple(_workload(seed))),
                           build_policy("backfill"),
                           SimConfig(restart_overhead=0.0, start_overhead=start_overhead),
                           throughput=LinearScaling(reference_type="V100")).run()
    return sorted((r.job_id, r.first_start, r.finish_time) for r in result.jobs)


@pytest.mark.parametrize("cluster", sorted(CLUSTERS))
@pytest.mark.parametrize("start_overhead", [0.0, 90.0])
@pytest.mark.parametrize("seed", [0, 1])
def test_reused_reservations_and_told_ends_give_the_same_records(
        cluster: str, start_overhead: float, seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    computed = []
    original = backfill_module.EasyReservation._compute

    def counting(self: backfill_module.EasyReservation, state, head):  # type: ignore[no-untyped-def]
        computed.append(state.now)
        return original(self, state, head)

    monkeypatch.setattr(backfill_module.EasyReservation, "_compute", counting)
    fresh = _records(cluster, seed, start_overhead, monkeypatch, afresh=True)
    afresh_count = len(computed)
    computed.clear()
    assert _records(cluster, seed, start_overhead, monkeypatch, afresh=False) == fresh
    assert sum(r[1] > 0 for r in fresh) > 50  # jobs waited: reservations were made
    assert afresh_count > 50
    if cluster == "same-gpus" and start_overhead == 0.0:
        assert len(computed) < afresh_count  # some were reused


def test_a_reservation_is_not_reused_while_an_end_moves(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Were a reservation reused while a job runs below its reference rate, the head's shadow
    time would lag its true one: the records above would differ (these seeds show it)."""
    with monkeypatch.context() as p:
        p.setattr(RunningEnds, "fixed", lambda self, changes, since: True)
        stale = [_records("mixed-gpus", seed, 0.0, monkeypatch, afresh=False)
                 for seed in (2, 4, 6)]
    fresh = [_records("mixed-gpus", seed, 0.0, monkeypatch, afresh=True) for seed in (2, 4, 6)]
    assert all(a != b for a, b in zip(stale, fresh, strict=True))


def _running(job_id: str, started: float, rate: float, pause_until: float) -> Job:
    job = Job(make_job(job_id).gpus(1).work(1000.0).build())
    job.status, job.run_started, job.rate = JobStatus.RUNNING, started, rate
    job.progress_time, job.productive_from = started, pause_until
    return job


def test_ends_are_fixed_only_past_every_pause_and_at_the_reference_rate() -> None:
    ends = RunningEnds()
    steady = _running("a", 0.0, 1.0, 0.0)
    paused = _running("b", 100.0, 1.0, 130.0)
    assert ends.refresh([steady, paused], lambda job: 500.0, lambda job: 1.0, changes=7)
    assert not ends.fixed(7, 120.0)  # b's end still moves until its pause ends at 130
    assert ends.fixed(7, 130.0) and ends.fixed(7, 400.0)
    assert not ends.fixed(8, 400.0)  # the running jobs changed since the look
    slow = _running("c", 200.0, 0.5, 200.0)
    ends.refresh([steady, paused, slow], lambda job: 900.0, lambda job: 1.0, changes=9)
    assert not ends.fixed(9, 400.0)  # c runs below its reference rate: its end moves
