"""Tiresias (discretized 2D-LAS) golden tests with one small threshold: 100 GPU-seconds.

Queue 0 holds jobs below 100 GPU-s of attained service, queue 1 the rest. All traces run on a
single node with restart_overhead=0.
"""

from __future__ import annotations

import pytest
from builders import Row, assert_schedule, make_cluster, make_job, run

from dlsched.workload.job import JobSpec

SMALL = {"thresholds": (100.0,)}



def _pair(a_gpus: int, a_at: float, a_work: float, b_at: float, b_work: float) -> list[JobSpec]:
    return [make_job("A").gpus(a_gpus).at(a_at).work(a_work).build(),
            make_job("B").gpus(a_gpus).at(b_at).work(b_work).build()]


# Demotion happens exactly when attained service reaches 100 GPU-s, in a wake-up cycle (no job
# event happens then).
# 1-gpu: A (300 s) starts at 0 and asks for a wake-up at 100 (100 GPU-s / 1 GPU). B arrives at
#   50 in queue 0, but A is in queue 0 too (50 GPU-s) and came first: B waits. At 100 A drops to
#   queue 1 and B preempts it: B 100->150. A resumes with 200 s left: 150->350.
# 2-gpus: A and B use 2 GPUs each on a 2-GPU node, so A reaches 100 GPU-s at 50. B (at 20)
#   runs 50->100; A resumes with 250 s left: 100->350.
# same-start: as 1-gpu but B is submitted at 0 too (A goes first by id). The wake-up for A's
#   demotion must be asked for in the cycle that starts A: nothing else happens until 100.
# fractional-time: as 1-gpu, shifted by 28.01 s; the wake-up at 128.01 computes A's service as
#   99.99999999999999 in floating point, which must still count as reaching the threshold.
DEMOTION = [
    pytest.param(1, _pair(1, 0, 300, 50, 50), [("A", 0, 350, 350), ("B", 100, 150, 100)],
                 id="1-gpu"),
    pytest.param(2, _pair(2, 0, 300, 20, 50), [("A", 0, 350, 350), ("B", 50, 100, 80)],
                 id="2-gpus"),
    pytest.param(1, _pair(1, 0, 300, 0, 50), [("A", 0, 350, 350), ("B", 100, 150, 150)],
                 id="same-start"),
    pytest.param(1, _pair(1, 28.01, 300, 50, 50),
                 [("A", 28.01, 378.01, 350), ("B", 128.01, 178.01, 128.01)],
                 id="fractional-time"),
]


@pytest.mark.parametrize(("gpus", "jobs", "table"), DEMOTION)
def test_demotion_at_threshold(gpus: int, jobs: list[JobSpec], table: list[Row]) -> None:
    records = run("tiresias", make_cluster(nodes=1, gpus=gpus), jobs, options=SMALL)
    assert_schedule(records, table)
    assert (records["A"].preemptions, records["B"].preemptions) == (1, 0)


# One GPU; A (300 s) from 0, B (50 s) arrives at 150.
# demoted: threshold 100. A is in queue 1 from 100; B (queue 0) preempts it at 150 and runs
#   150->200; A resumes with 150 s left: 200->350.
# default thresholds (3600 GPU-s): A is still in queue 0 and came first: B waits, 300->350.
@pytest.mark.parametrize(("options", "table"), [
    (SMALL, [("A", 0, 350, 350), ("B", 150, 200, 50)]),
    ({}, [("A", 0, 300, 300), ("B", 300, 350, 200)]),
], ids=["demoted-job-preempted", "default-thresholds-no-preemption"])
def test_new_job_preempts_demoted_one(options: dict, table: list[Row]) -> None:
    records = run("tiresias", make_cluster(nodes=1, gpus=1), _pair(1, 0, 300, 150, 50),
                  options=options)
    assert_schedule(records, table)


# One GPU, all jobs stay below 100 GPU-s so all stay in queue 0: FIFO by submission time, not
# by size (SJF would pick "a") nor by id. A 0->50, z (at 1, 40 s) 50->90, a (at 2, 10 s) 90->100.
def test_fifo_within_a_queue() -> None:
    jobs = [make_job("A").at(0).work(50).build(), make_job("z").at(1).work(40).build(),
            make_job("a").at(2).work(10).build()]
    records = run("tiresias", make_cluster(nodes=1, gpus=1), jobs, options=SMALL)
    assert_schedule(records, [("A", 0, 50, 50), ("z", 50, 90, 89), ("a", 90, 100, 98)])


# One GPU. A (150 s) from 0; B (150 s) arrives at 10 and waits (A is in queue 0, earlier).
# At 100 A drops to queue 1 and B (queue 0) preempts it; A has 50 s left. At 200 B reaches
# 100 GPU-s: both are in queue 1. By default (paper §3.2, the authors' simulator) a running job
# keeps its GPUs against a waiting job of its own queue: B runs on 100->250, A resumes 250->300.
def test_running_job_keeps_its_gpus_within_its_queue() -> None:
    records = run("tiresias", make_cluster(nodes=1, gpus=1), _pair(1, 0, 150, 10, 150),
                  options=SMALL)
    assert_schedule(records, [("A", 0, 300, 300), ("B", 100, 250, 240)])
    assert (records["A"].preemptions, records["B"].preemptions) == (1, 0)


# As above with same_queue_preemption: FIFO by submission in queue 1 puts A (submitted at 0)
# first, so at 200 A preempts B: A 200->250, then B resumes with 50 s left: 250->300.
def test_same_queue_preemption_evicts_the_later_job() -> None:
    records = run("tiresias", make_cluster(nodes=1, gpus=1), _pair(1, 0, 150, 10, 150),
                  options={**SMALL, "same_queue_preemption": True})
    assert_schedule(records, [("A", 0, 250, 250), ("B", 100, 300, 290)])
    assert (records["A"].preemptions, records["B"].preemptions) == (1, 1)


# One GPU. A (150 s) from 0, B (90 s) arrives at 100 just as A is demoted: B preempts A
# (A has 50 s left, and last ran 100 s).
# knob 0 (no promotion): B never reaches 100 GPU-s and runs 100->190; A resumes 190->240.
# knob 0.5: A waits 0.5 x 100 = 50 s, so at 150 it is promoted to queue 0, but B runs in queue 0
#   too and keeps its GPU against a waiting job of its own queue (the default): as knob 0.
# knob 0.5 with same_queue_preemption: promoted at 150, A ranks before B (submitted earlier): A
#   preempts B (B has 40 s left, last ran 50 s) and runs 150->200. B would be promoted at
#   150 + 0.5 x 50 = 175 but A still ranks first. B resumes 200->240.
@pytest.mark.parametrize(("knob", "same_queue", "table"), [
    pytest.param("0", False, [("A", 0, 240, 240), ("B", 100, 190, 90)], id="no-promotion"),
    pytest.param("0.5", False, [("A", 0, 240, 240), ("B", 100, 190, 90)],
                 id="promoted-behind-running"),
    # A is preempted at 100 in the same cycle: no wake-up at 150 for its promotion.
    pytest.param("0.5", True, [("A", 0, 200, 200), ("B", 100, 240, 140)],
                 id="promoted-at-150"),
])
def test_starvation_promotion(knob: str, same_queue: bool, table: list[Row]) -> None:
    options = {"thresholds": "100", "promote_knob": knob, "same_queue_preemption": same_queue}
    records = run("tiresias", make_cluster(nodes=1, gpus=1), _pair(1, 0, 150, 100, 90),
                  options=options)
    assert_schedule(records, table)


# One GPU, min_runtime=150. A (1000 s) starts at 0; B (90 s) arrives at 50 and waits (A is in
# queue 0 too, and came first). At 100 A is demoted, but it is protected until 150: B's attempt
# fails. The protection ends at 150 with no start or stop; that failure must not be memoised
# as futile: B evicts A at 150 and runs 150->240; A resumes with 850 s left -> 1090.
def test_protection_ends_with_a_cycle_that_retries() -> None:
    records = run("tiresias", make_cluster(nodes=1, gpus=1), _pair(1, 0, 1000, 50, 90),
                  options={**SMALL, "min_runtime": 150.0})
    assert_schedule(records, [("A", 0, 1090, 1090), ("B", 150, 240, 190)])


# Starvation promotion as the authors' simulator applies it (run_sim.py, dlas_sim_jobs): only a
# job of a queue below 0 is promoted. Two GPUs, knob 1, same_queue_preemption. X (1 GPU) runs
# 0->10; A (2 GPUs, at 1) waits; B (1 GPU, at 2) starts beside X. At 10 A evicts B (same queue,
# submitted later) and runs
# 10->30. B, with 8 GPU-s, waited 8 s by 18 but is still in queue 0: it is not promoted, and its
# 8 GPU-s still count when it resumes at 30, so it is demoted at 122 (not 130, as it would be if
# its service were forgiven). C (2 GPUs, at 50) then evicts it: C 122->132, B resumes -> 532.
def test_starvation_promotes_only_demoted_jobs() -> None:
    jobs = [make_job("X").gpus(1).at(0).work(10).build(),
            make_job("A").gpus(2).at(1).work(20).build(),
            make_job("B").gpus(1).at(2).work(500).build(),
            make_job("C").gpus(2).at(50).work(10).build()]
    records = run("tiresias", make_cluster(nodes=1, gpus=2), jobs,
                  options={"thresholds": "100", "promote_knob": "1",
                           "same_queue_preemption": True})
    assert_schedule(records, [("X", 0, 10, 10), ("A", 10, 30, 29), ("B", 2, 532, 530),
                              ("C", 122, 132, 82)])


# The artifact compares the time waited since the last promotion (after having run) with the
# time run since then, both summed over the job's runs and waits, not this wait with the last
# run. One GPU, knob 1. A runs 0->100 and is demoted; B (50 s) evicts it 100->150; A resumes
# (it has run 100 s, waited 50 s). C (50 s, at 160) evicts A after a 10 s run: A may wait
# 1 x 110 - 50 = 60 s (until 220), so C runs 160->210 and A resumes then -> 1100. (Comparing
# with the last run alone would promote A at 170 and evict C: C would end at 310.)
def test_starvation_counts_runs_and_waits_since_the_last_promotion() -> None:
    jobs = [make_job("A").at(0).work(1000).build(), make_job("B").at(100).work(50).build(),
            make_job("C").at(160).work(50).build()]
    records = run("tiresias", make_cluster(nodes=1, gpus=1), jobs,
                  options={"thresholds": "100", "promote_knob": "1"})
    assert_schedule(records, [("A", 0, 1100, 1100), ("B", 100, 150, 50), ("C", 160, 210, 50)])


@pytest.mark.parametrize("options", [
    {"thresholds": (600.0,)}, {"thresholds": (600.0,), "promote_knob": 2.0},
    {"thresholds": (300.0, 1200.0)}], ids=["two-queues", "promotion", "three-queues"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_demotions_while_all_wait_in_the_last_queue_wake_nothing(
        options: dict, seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """No wake-up is asked for a demotion while every waiting job is in the last queue (a
    demoted job can only become a victim of a job above it): the same schedule, timeline and
    segments as when every demotion wakes a cycle, with fewer cycles."""
    from builders import random_preemptive_jobs, schedule_and_cycles, simulator

    from dlsched.policies.tiresias import DiscretizedLas

    jobs = random_preemptive_jobs(seed)
    cluster = make_cluster(nodes=2, gpus=4)
    quiet, quiet_cycles = schedule_and_cycles(
        simulator("tiresias", cluster, jobs, options=options))
    monkeypatch.setattr(DiscretizedLas, "_demotions_matter", lambda self, state: True)
    # every demotion, stale ones included (``_first_live_demotion`` drops those since: in
    # seed 2's two queues every demotion that mattered to no one was a stale one)
    monkeypatch.setattr(DiscretizedLas, "_first_live_demotion",
                        lambda self, state: self._demotions[0][0])
    woken, woken_cycles = schedule_and_cycles(
        simulator("tiresias", cluster, jobs, options=options))
    assert quiet == woken
    assert quiet_cycles < woken_cycles
