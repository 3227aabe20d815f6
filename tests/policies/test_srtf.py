"""SRTF golden tests: preemption of the longer-remaining job, restart overhead, fewest victims."""

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

from dlsched.scheduling.plugins import preemption
from dlsched.workload.job import JobSpec


def _long_then_short(short_at: float, short_work: float) -> list[JobSpec]:
    return [make_job("A").at(0).work(100).build(),
            make_job("B").at(short_at).work(short_work).build()]


# One GPU. A (100 s) runs from 0. B (20 s) arrives at 10, when A has 90 s left: B preempts A and
# runs 10->30 (a first start pays no overhead). A resumes at 30, pauses `overhead` seconds to
# reload, then runs its last 90 s: it finishes at 30 + overhead + 90.
# A's GPU time is 10 (first run) + overhead + 90.
@pytest.mark.parametrize(("overhead", "table"), [
    (0.0, [("A", 0, 120, 120), ("B", 10, 30, 20)]),
    (5.0, [("A", 0, 125, 125), ("B", 10, 30, 20)]),
], ids=["no-overhead", "overhead-5s"])
def test_shorter_job_preempts(overhead: float, table: list[Row]) -> None:
    records = run("srtf", make_cluster(nodes=1, gpus=1), _long_then_short(10, 20),
                  restart_overhead=overhead)
    assert_schedule(records, table)
    assert (records["A"].preemptions, records["B"].preemptions) == (1, 0)
    assert records["A"].gpu_seconds == pytest.approx(100 + overhead)


# One GPU. B (50 s) arrives at 60 when A has only 40 s left: no preemption; B runs 100->150.
def test_longer_newcomer_does_not_preempt() -> None:
    records = run("srtf", make_cluster(nodes=1, gpus=1), _long_then_short(60, 50))
    assert_schedule(records, [("A", 0, 100, 100), ("B", 100, 150, 90)])
    assert records["A"].preemptions == 0


# One node, 4 GPUs, all busy from 0: X (1 GPU, 1000 s), Y (2 GPUs, 800 s), W (1 GPU, 100 s).
# Z (2 GPUs, 50 s) arrives at 10. Candidates, most remaining first: X (990), Y (790), W (90).
# Evicting X frees 1 GPU (not enough), then Y frees 2 more: Z fits. Giving X back still leaves
# Z room, so only Y is preempted. Z runs 10->60 on Y's GPUs; W ends at 100; Y resumes at 60 with
# 790 s left -> 850. X is never touched: 0->1000.
def test_evicts_only_the_victims_it_needs() -> None:
    jobs = [make_job("X").gpus(1).work(1000).build(), make_job("Y").gpus(2).work(800).build(),
            make_job("W").gpus(1).work(100).build(), make_job("Z").gpus(2).at(10).work(50).build()]
    records = run("srtf", make_cluster(nodes=1, gpus=4), jobs)
    assert_schedule(records, [("X", 0, 1000, 1000), ("Y", 0, 850, 850), ("W", 0, 100, 100),
                              ("Z", 10, 60, 50)])
    assert {j: r.preemptions for j, r in records.items()} == {"X": 0, "Y": 1, "W": 0, "Z": 0}


# One GPU, min_runtime=20. A starts at 0; B (20 s) arrives at 10 while A is protected (it has
# run 10 s < 20 s). The protection ends at 20, so B should preempt A then: B 20->40,
# A resumes at 40 with 80 s left -> 120.
def test_min_runtime_protection_ends_with_a_cycle() -> None:
    records = run("srtf", make_cluster(nodes=1, gpus=1), _long_then_short(10, 20),
                  options={"min_runtime": "20"})
    assert_schedule(records, [("A", 0, 120, 120), ("B", 20, 40, 30)])


# Same trace, but a third job arrives at 15, inside the protection window: it triggers a cycle
# but A is still protected. What the protection does guarantee: A is not preempted before 20.
def test_min_runtime_protects_a_fresh_start() -> None:
    jobs = [*_long_then_short(10, 20), make_job("C").at(15).work(500).build()]
    records = run("srtf", make_cluster(nodes=1, gpus=1), jobs, options={"min_runtime": "20"},
                  max_time=19)
    assert records["A"].status == "running"
    assert records["B"].status == "pending"


# SRTF's preemption ranks running jobs lazily from a heap of past keys (running_ranks.py,
# issue 14): the same records as sorting every running job in every cycle, on a contended
# workload with preemptions, restarts and protection windows.
@pytest.mark.parametrize("min_runtime", ["0", "200"])
def test_falling_ranks_give_the_same_schedule(min_runtime: str,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    jobs = random_preemptive_jobs(11)

    def records(indexed: bool) -> list[tuple]:
        with monkeypatch.context() as patch:
            if not indexed:
                patch.setattr(preemption, "FallingRanks", lambda: None)
            return preemption_outline("srtf", jobs, {"min_runtime": min_runtime})

    fast = records(True)
    assert fast == records(False)
    assert sum(r[3] for r in fast) > 5  # preemptions happened


# ``no_victims`` is exact: asked before every search of a contended run (with and without the
# index, with and without protection windows), it says True exactly where the search nominates
# no candidate; and the cycle's shortcut it enables (a job without victims that the free counts
# rule out fails without the search) leaves the schedule as it was.
@pytest.mark.parametrize("indexed", [True, False], ids=["index", "sorted"])
@pytest.mark.parametrize("min_runtime", ["0", "200"])
def test_no_victims_is_exact(indexed: bool, min_runtime: str,
                             monkeypatch: pytest.MonkeyPatch) -> None:
    jobs, told = random_preemptive_jobs(5), []
    search, answer = preemption.Preemption.post_filter, preemption.Preemption.no_victims

    def checked(self, state, job):  # type: ignore[no-untyped-def]
        none = answer(self, state, job)
        found = tuple(search(self, state, job))
        told.append((none, not found))
        return found

    with monkeypatch.context() as patch:
        if not indexed:
            patch.setattr(preemption, "FallingRanks", lambda: None)
        plain = preemption_outline("srtf", jobs, {"min_runtime": min_runtime})
        patch.setattr(preemption.Preemption, "post_filter", checked)
        patch.setattr(preemption.Preemption, "no_victims", None)  # no shortcut: every search
        assert preemption_outline("srtf", jobs, {"min_runtime": min_runtime}) == plain
    assert sum(none for none, _ in told) > 10 and sum(not none for none, _ in told) > 10
    assert all(none == empty for none, empty in told)
