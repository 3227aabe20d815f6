"""Chronus (SoCC'21 §4): lease-slot MILP admission, best effort by least remaining GPU time,
late SLO jobs last, and hand-made traces on which EDF's greed (or a late job run first) misses a
deadline that Chronus meets."""

from __future__ import annotations

import numpy as np
import pytest
from builders import cycle_state, make_cluster, make_job, run

from dlsched.policies.elastic.chronus_milp import lease_milp
from dlsched.scheduling.registry import build_policy
from dlsched.workload.job import Job, JobStatus


def chronus(lease: float = 100.0):
    return build_policy("chronus", {"lease_seconds": str(lease)}).plugins[0]


@pytest.mark.parametrize(("need", "horizon", "weight", "scheduled", "first"), [
    # 4 GPUs, both jobs want all 4. A: 2 leases within 3; B: 1 within 1 -> B now, A after.
    ([2, 1], [3, 1], [1, 1], [True, True], [False, True]),
    # A within 2 slots cannot share with B: one of them; equal weights, B is cheaper
    ([2, 1], [2, 1], [1, 1], [False, True], [False, True]),
    # A already admitted (weight above all new ones): B is refused
    ([2, 1], [2, 1], [3, 1], [True, False], [True, False]),
], ids=["both-fit", "one-fits", "admitted-kept"])
def test_lease_milp(need: list[int], horizon: list[int], weight: list[float],
                    scheduled: list[bool], first: list[bool]) -> None:
    y, now = lease_milp(np.array([4, 4]), np.array(need), np.array(horizon),
                        np.array(weight, dtype=float), capacity=4)
    assert y.tolist() == scheduled and now.tolist() == first


# Hopeless X (1000 s of work due at 100 s) and feasible Y (100 s due at 200 s), 4 GPUs each.
HOPELESS = make_job("x").gpus(4).work(1000).deadline(100).build()
FEASIBLE = make_job("y").at(1).gpus(4).work(100).deadline(200).build()


def test_edf_greed_misses_the_feasible_deadline() -> None:
    records = run("edf", make_cluster(nodes=1, gpus=4), [HOPELESS, FEASIBLE])
    assert records["y"].finish_time == pytest.approx(1100.0)  # behind x: misses 200
    assert records["x"].finish_time == pytest.approx(1000.0)  # and x misses too


def test_chronus_rejects_hopeless_and_runs_feasible_job_first() -> None:
    plugin = chronus()
    state = cycle_state(make_cluster(nodes=1, gpus=4), waiting=[Job(HOPELESS), Job(FEASIBLE)],
                        now=1.0)
    got = plugin.allocate(state)
    # x cannot finish by 100 even if run now: demoted below best effort, not merely refused
    assert plugin.demoted == {"x"} and not plugin.rejected and plugin.admitted == {"y"}
    # y holds all 4 GPUs for the first lease (100 s at rate 1): done at 101 <= 200. x waits.
    assert {k: v.num_workers for k, v in got.items()} == {"y": 4}


# Best effort goes by least remaining GPU time (Chronus's artifact: emergence = -remaining time
# x GPUs), not by attained service. 2 GPUs; (name, GPUs, submit, work, done): "served" (2 GPUs,
# ran 500 of 600 s: 1000 GPU-s attained, 200 GPU-s left) beats "fresh" (2 GPUs, 1000 s left:
# 2000 GPU-s), which LAS ran; "narrow" (1 GPU, 300 s: 300 GPU-s) beats "wide" (2 GPUs, 200 s:
# 400 GPU-s, arrived first: LAS's tie-break ran it) although it has longer to run.
@pytest.mark.parametrize(("a", "b", "winner"), [
    (("served", 2, 0.0, 600.0, 500.0), ("fresh", 2, 1.0, 1000.0, 0.0), "served"),
    (("wide", 2, 0.0, 200.0, 0.0), ("narrow", 1, 1.0, 300.0, 0.0), "narrow"),
], ids=["remaining-not-attained", "gpu-seconds"])
def test_best_effort_fill_by_least_remaining_gpu_time(
        a: tuple[str, int, float, float, float], b: tuple[str, int, float, float, float],
        winner: str) -> None:
    jobs = []
    for name, gpus, submit, work, done in (a, b):
        job = Job(make_job(name).at(submit).gpus(gpus).work(work).build())
        job.done_work, job.attained = done, done * gpus
        jobs.append(job)
    state = cycle_state(make_cluster(nodes=1, gpus=2), waiting=jobs, now=5.0)
    assert list(chronus().allocate(state)) == [winner]  # the other does not fit beside it


def test_running_jobs_keep_their_lease_between_boundaries() -> None:
    plugin = chronus()
    be = Job(make_job("be").gpus(4).build())
    plugin.allocate(cycle_state(make_cluster(nodes=1, gpus=4), waiting=[be]))
    be.set_status(JobStatus.RUNNING)
    be.allocation, be.shares = (0, 1, 2, 3), (1.0,) * 4
    urgent = Job(make_job("urgent").at(10).gpus(4).work(50).deadline(200).build())
    mid = cycle_state(make_cluster(nodes=1, gpus=4), used={g: 1.0 for g in range(4)},
                      running=[be], waiting=[urgent], now=10.0)
    assert set(plugin.allocate(mid)) == {"be"}  # mid-lease: no preemption
    boundary = cycle_state(make_cluster(nodes=1, gpus=4), used={g: 1.0 for g in range(4)},
                           running=[be], waiting=[urgent], now=100.0)
    assert set(plugin.allocate(boundary)) == {"urgent"}  # next lease: the SLO job runs


def test_bad_lease_is_a_clear_error() -> None:
    with pytest.raises(Exception, match="lease_seconds must be > 0"):
        build_policy("chronus", {"lease_seconds": "0"})


@pytest.mark.parametrize("held", [[True, False], [False, True]], ids=["keep-a", "keep-b"])
def test_lease_milp_gives_slot_zero_to_the_job_that_holds_gpus(held: list[bool]) -> None:
    # Two 4-GPU jobs, one slot each within 2 slots, 4 GPUs: either order is as early; the one
    # running now keeps slot 0 (no needless stop and restart).
    y, now = lease_milp(np.array([4, 4]), np.array([1, 1]), np.array([2, 2]),
                        np.array([1.0, 1.0]), capacity=4, keep=np.array(held))
    assert y.tolist() == [True, True] and now.tolist() == held


def test_preempted_job_does_not_displace_a_running_one_mid_lease() -> None:
    # Issue 5: a preempted job keeps its last GPUs in ``allocation`` while it waits. Taking it
    # for a running job made the older one "keep" GPUs mid-lease and preempted the job that
    # held them: a restart (30 s lost) at every event, 32k preemptions on chronus-mix2-4h.
    plugin = chronus()
    old = Job(make_job("old").gpus(4).build())
    plugin.allocate(cycle_state(make_cluster(nodes=1, gpus=4), waiting=[old]))  # lease to 100
    old.set_status(JobStatus.RUNNING)
    old.set_status(JobStatus.PREEMPTED)
    old.allocation, old.shares = (0, 1, 2, 3), (1.0,) * 4  # stale: where it last ran
    held = Job(make_job("held").at(1).gpus(4).build())
    held.set_status(JobStatus.RUNNING)
    held.allocation, held.shares = (0, 1, 2, 3), (1.0,) * 4
    mid = cycle_state(make_cluster(nodes=1, gpus=4), used={g: 1.0 for g in range(4)},
                      running=[held], waiting=[old], now=50.0)
    assert set(plugin.allocate(mid)) == {"held"}


# Lease 100 s, restart 30 s: a lease yields 70 s of work; the last lease may end mid-slot.
PLANS = [
    # 100 s: 2 leases; the 2nd ends at 100 + 30 + 30 = 160 <= 200, a 3rd slot would not
    (100.0, 200.0, 30.0, (2, 2)),
    # due at 150: slot 1 would end at 160, too late -> 1 slot for 2 leases (rejected)
    (100.0, 150.0, 30.0, (2, 1)),
    # no restart: 250 s in 3 leases ends at 250 <= 290 (flooring 290/100 gave 2 slots)
    (250.0, 290.0, 0.0, (3, 3)),
    # already late
    (100.0, 50.0, 0.0, (1, 0)),
]


@pytest.mark.parametrize(("work", "deadline", "restart", "plan"), PLANS,
                         ids=["two-leases", "too-tight", "partial-last-lease", "late"])
def test_plan_counts_restarts_and_a_partial_last_lease(
        work: float, deadline: float, restart: float, plan: tuple[int, int]) -> None:
    plugin = build_policy("chronus", {"lease_seconds": "100",
                                      "restart_seconds": str(restart)}).plugins[0]
    job = Job(make_job("j").gpus(4).work(work).deadline(deadline).build())
    state = cycle_state(make_cluster(nodes=1, gpus=4), waiting=[job])
    assert plugin._plan(state, job) == plan


def test_deadline_beyond_the_slot_window_is_not_rejected() -> None:
    # 700 s of work due at 1000 with a 4-slot window: 7 leases within 10 slots is feasible.
    # Capping the horizon at the window (4 < 7) used to reject it.
    plugin = build_policy("chronus", {"lease_seconds": "100", "restart_seconds": "0",
                                      "max_slots": "4"}).plugins[0]
    far = Job(make_job("far").gpus(4).work(700).deadline(1000).build())
    got = plugin.allocate(cycle_state(make_cluster(nodes=1, gpus=4), waiting=[far]))
    assert plugin.admitted == {"far"} and set(got) == {"far"}


def test_bad_restart_is_a_clear_error() -> None:
    with pytest.raises(Exception, match="restart_seconds must be in"):
        build_policy("chronus", {"lease_seconds": "100", "restart_seconds": "100"})


# Late SLO jobs go last (Chronus's artifact: its LOWEST queue, below best effort). "late": 4
# GPUs, 50 s of work due at 10 (400 x 4 = 200 GPU-s left, hopeless); "be": no deadline, 100 s
# on 4 GPUs (400 GPU-s). By least remaining GPU time alone "late" went first.
def test_late_slo_job_ranks_below_best_effort() -> None:
    plugin = chronus()
    late = Job(make_job("late").gpus(4).work(50).deadline(10).build())
    be = Job(make_job("be").at(1).gpus(4).work(100).build())
    got = plugin.allocate(cycle_state(make_cluster(nodes=1, gpus=4), waiting=[late, be],
                                      now=1.0))
    assert set(got) == {"be"} and plugin.demoted == {"late"}


def test_admitted_job_that_can_no_longer_make_it_is_demoted() -> None:
    # Lease 1000 s, no restart. At 0 both are admitted: a (due 300) in slot 0, c (due 2500)
    # later. At 250, mid-lease, a has not run: 100 s left, due at 300, it cannot make it. Two
    # waiting admitted jobs on 4 free GPUs went by earliest deadline: a. Now a is demoted and
    # c (which can still make it) runs.
    plugin = build_policy("chronus", {"lease_seconds": "1000",
                                      "restart_seconds": "0"}).plugins[0]
    a = Job(make_job("a").gpus(4).work(100).deadline(300).build())
    c = Job(make_job("c").gpus(4).work(100).deadline(2500).build())
    first = plugin.allocate(cycle_state(make_cluster(nodes=1, gpus=4), waiting=[a, c]))
    assert set(first) == {"a"} and plugin.admitted == {"a", "c"}
    got = plugin.allocate(cycle_state(make_cluster(nodes=1, gpus=4), waiting=[a, c],
                                      now=250.0))
    assert set(got) == {"c"} and plugin.demoted == {"a"} and plugin.admitted == {"c"}


@pytest.mark.parametrize(("a", "b", "first"), [
    # (name, GPUs, work, deadline) at 1 s: overdue x GPUs, (1 + 100 - 61) x 2 = 80 beats
    # (1 + 100 - 41) x 1 = 60 although narrow is later (by lateness alone narrow went first)
    (("wide", 2, 100.0, 61.0), ("narrow", 1, 100.0, 41.0), "wide"),
    (("soon", 2, 100.0, 90.0), ("long", 2, 300.0, 200.0), "long"),  # 22 < 202
], ids=["gpus-count", "most-overdue"])
def test_late_jobs_by_most_overdue_gpu_time(a: tuple[str, int, float, float],
                                            b: tuple[str, int, float, float],
                                            first: str) -> None:
    jobs = [Job(make_job(n).gpus(g).work(w).deadline(d).build()) for n, g, w, d in (a, b)]
    got = chronus().allocate(cycle_state(make_cluster(nodes=1, gpus=2), waiting=jobs, now=1.0))
    assert list(got) == [first]


def test_late_job_no_longer_costs_a_feasible_one_its_deadline() -> None:
    # Lease 100 s, restart 30 s. x: 50 s on 4 GPUs due at 10 (hopeless). y: 100 s due at 120:
    # refused (two 70 s leases do not fit by 120) but it makes it if run from 0. Both ran best
    # effort, x first (200 GPU-s < 400): y finished at 150, late. Now x waits: y at 100, x 150.
    records = run("chronus", make_cluster(nodes=1, gpus=4),
                  [make_job("x").gpus(4).work(50).deadline(10).build(),
                   make_job("y").gpus(4).work(100).deadline(120).build()],
                  options={"lease_seconds": 100, "restart_seconds": 30})
    assert records["y"].finish_time == pytest.approx(100.0)
    assert records["x"].finish_time == pytest.approx(150.0)
