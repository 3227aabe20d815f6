"""EDF golden tests: deadline order, best-effort jobs last, preemption of later deadlines."""

from __future__ import annotations

import pytest
from builders import (
    Row,
    assert_schedule,
    make_cluster,
    make_job,
    preemption_outline,
    random_preemptive_jobs,
    run,
)

from dlsched.policies.edf import DeadlineOrder
from dlsched.workload.job import JobSpec

# One GPU busy with A (100 s, deadline 500) from 0. B (10 s, deadline 400), C (10 s, deadline
# 300) and E (10 s, no deadline) arrive at 1, 2, 3. Without preemption A runs 0->100, then by
# deadline: C 100->110, B 110->120, E 120->130 (a job without a deadline goes last).
ORDER = [make_job("A").at(0).work(100).deadline(500).build(),
         make_job("B").at(1).work(10).deadline(400).build(),
         make_job("C").at(2).work(10).deadline(300).build(),
         make_job("E").at(3).work(10).build()]
ORDER_TABLE = [("A", 0, 100, 100), ("B", 110, 120, 119), ("C", 100, 110, 108),
               ("E", 120, 130, 127)]

# Preemptive, one GPU: B (deadline 50) arrives at 10 and evicts A (deadline 500): B 10->30,
# A resumes at 30 with 90 s left -> 120. E (no deadline) then waits behind nothing: 120->130.
PREEMPT = [make_job("A").at(0).work(100).deadline(500).build(),
           make_job("B").at(10).work(20).deadline(50).build(),
           make_job("E").at(11).work(10).build()]
PREEMPT_TABLE = [("A", 0, 120, 120), ("B", 10, 30, 20), ("E", 120, 130, 119)]

# Preemptive, one GPU: a best-effort job X holds the GPU; D (deadline 1000) evicts it at 1
# (any deadline is earlier than none): D 1->11, X resumes with 9 s left: 11->20.
BEST_EFFORT = [make_job("X").at(0).work(10).build(),
               make_job("D").at(1).work(10).deadline(1000).build()]
BEST_EFFORT_TABLE = [("X", 0, 20, 20), ("D", 1, 11, 10)]

# A later deadline never evicts an earlier one: A (deadline 200) keeps the GPU; B (deadline
# 300) waits 100->110.
NO_INVERSION = [make_job("A").at(0).work(100).deadline(200).build(),
                make_job("B").at(5).work(10).deadline(300).build()]
NO_INVERSION_TABLE = [("A", 0, 100, 100), ("B", 100, 110, 105)]


@pytest.mark.parametrize(("preemptive", "jobs", "table", "preempted"), [
    (False, ORDER, ORDER_TABLE, {}),
    (True, PREEMPT, PREEMPT_TABLE, {"A": 1}),
    (True, BEST_EFFORT, BEST_EFFORT_TABLE, {"X": 1}),
    (True, NO_INVERSION, NO_INVERSION_TABLE, {}),
], ids=["deadline-order-best-effort-last", "earlier-deadline-preempts",
        "deadline-preempts-best-effort", "later-deadline-never-preempts"])
def test_edf_golden(preemptive: bool, jobs: list[JobSpec], table: list[Row],
                    preempted: dict[str, int]) -> None:
    records = run("edf", make_cluster(nodes=1, gpus=1), jobs,
                  options={"preemptive": str(preemptive).lower()})
    assert_schedule(records, table)
    assert {j: r.preemptions for j, r in records.items() if r.preemptions} == preempted


# Four GPUs: W (4 GPUs, deadline 100) cannot fit while S (2 GPUs) runs; EDF is work-conserving
# so T (1 GPU, deadline 900) starts beside S, W evicts both S and T (later deadlines) at 5.
def test_gang_evicts_only_what_it_needs() -> None:
    jobs = [make_job("S").gpus(2).at(0).work(50).deadline(800).build(),
            make_job("T").at(1).work(50).deadline(900).build(),
            make_job("W").gpus(4).at(5).work(10).deadline(100).build()]
    records = run("edf", make_cluster(nodes=1, gpus=4), jobs)
    assert records["W"].first_start == 5 and records["W"].finish_time == 15
    # S had 45 s left and T 46 s: both restart at 15 on the free GPUs.
    assert (records["S"].finish_time, records["T"].finish_time) == (60, 61)
    assert (records["S"].preemptions, records["T"].preemptions) == (1, 1)


# The preemption plugin keeps EDF's running jobs sorted across cycles (issue 14): the same
# records as sorting them in every cycle, on a contended workload with min_runtime, where
# jobs start, finish and are preempted (and restart) between victim searches.
@pytest.mark.parametrize("min_runtime", ["0", "300"])
def test_running_index_gives_the_same_schedule(min_runtime: str,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    jobs = random_preemptive_jobs(7, with_deadlines=True)

    def records(indexed: bool) -> list[tuple]:
        with monkeypatch.context() as patch:
            patch.setattr(DeadlineOrder, "running_static", indexed)
            return preemption_outline("edf", jobs, {"min_runtime": min_runtime})

    fast = records(True)
    assert fast == records(False)
    assert sum(r[3] for r in fast) > 5  # preemptions happened


# One GPU, min_runtime=20: B (deadline 50) arrives at 10 while A (deadline 500) is protected (it
# has run 10 s). The failed attempt at 10 must not be memoised as futile: the protection ends
# at 20 with no start or stop, and B evicts A then: B 20->40, A resumes with 80 s left -> 120.
def test_protection_ends_with_a_cycle_that_retries() -> None:
    records = run("edf", make_cluster(nodes=1, gpus=1), PREEMPT[:2],
                  options={"min_runtime": "20"})
    assert_schedule(records, [("A", 0, 120, 120), ("B", 20, 40, 30)])
