"""Tiresias wakes a cycle for a demotion only while the job still runs the attempt it was
timed for: a job that finished (or stopped) first leaves a stale entry, which no cycle is
woken for (the cycle would decide nothing: its ``_advance`` drops the entry)."""

from __future__ import annotations

import pytest
from builders import (
    assert_schedule,
    make_cluster,
    make_job,
    random_preemptive_jobs,
    schedule_and_cycles,
    simulator,
)

from dlsched.policies.tiresias import DiscretizedLas

SMALL = {"thresholds": (100.0,)}


def _first_entry(self: DiscretizedLas, state: object) -> float | None:
    """The wake-up before stale entries were dropped: the heap's first entry, whatever it is."""
    return self._demotions[0][0] if self._demotions else None


# Two GPUs, threshold 100 GPU-s. A (1 GPU, 60 s) from 0: its demotion is timed for 100, but it
# finishes at 60. C (1 GPU, 1000 s) from 5: demoted at 105. B (2 GPUs, 50 s) arrives at 10 in
# queue 0 and waits (A and C are in queue 0 too; at 60 one GPU is free, C is no victim yet).
# At 105 C is demoted and B preempts it: B 105->155; C resumes with 900 s left: 155->1055.
# Cycles: 0, 5, 10, 60, 105, 155 (C alone then: none at its finish). A wake-up at 100 for A's
# stale entry made a seventh, which decided nothing.
def test_no_cycle_for_the_demotion_of_a_job_that_finished() -> None:
    jobs = [make_job("A").at(0).work(60).build(), make_job("C").at(5).work(1000).build(),
            make_job("B").gpus(2).at(10).work(50).build()]
    sim = simulator("tiresias", make_cluster(nodes=1, gpus=2), jobs, options=SMALL)
    result = sim.run()
    records = {r.job_id: r for r in result.jobs}
    assert_schedule(records, [("A", 0, 60, 60), ("B", 105, 155, 145), ("C", 5, 1055, 1050)])
    assert result.cycles == 6


@pytest.mark.parametrize("options", [
    {"thresholds": (600.0,)}, {"thresholds": (600.0,), "promote_knob": 2.0},
    {"thresholds": (300.0, 1200.0)}], ids=["two-queues", "promotion", "three-queues"])
@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_stale_demotions_wake_nothing(options: dict, seed: int,
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """The same schedule, timeline and segments as when a stale entry wakes a cycle too."""

    jobs = random_preemptive_jobs(seed)
    cluster = make_cluster(nodes=2, gpus=4)
    dropped, dropped_cycles = schedule_and_cycles(
        simulator("tiresias", cluster, jobs, options=options))
    monkeypatch.setattr(DiscretizedLas, "_first_live_demotion", _first_entry)
    woken, woken_cycles = schedule_and_cycles(
        simulator("tiresias", cluster, jobs, options=options))
    assert dropped == woken
    assert dropped_cycles < woken_cycles
