"""``rounds_only``: decisions only at multiples of the round length (the Pollux and Gavel
artifacts' simulators), and ``start_overhead`` (the Pollux artifact's 30 s on a first start)."""

from __future__ import annotations

import pytest
from builders import make_cluster, make_job, run


def test_arrivals_wait_for_the_next_tick() -> None:
    jobs = [make_job("a").at(10).work(100).build(), make_job("b").at(60).work(100).build()]
    records = run("fifo", make_cluster(nodes=1, gpus=4), jobs, round_seconds=60.0,
                  rounds_only=True)
    # a arrives at 10, starts at the tick 60; b arrives on a tick and starts at once
    assert (records["a"].first_start, records["b"].first_start) == (60.0, 60.0)
    assert records["a"].finish_time == pytest.approx(160.0)


def test_freed_gpus_wait_for_the_next_tick() -> None:
    jobs = [make_job("a").gpus(4).work(90).build(), make_job("b").gpus(4).build()]
    records = run("fifo", make_cluster(nodes=1, gpus=4), jobs, round_seconds=60.0,
                  rounds_only=True)
    assert records["a"].finish_time == pytest.approx(90.0)
    assert records["b"].first_start == 120.0  # not 90: the next decision is at 120


def test_event_cycles_by_default() -> None:
    jobs = [make_job("a").gpus(4).work(90).build(), make_job("b").gpus(4).build()]
    records = run("fifo", make_cluster(nodes=1, gpus=4), jobs, round_seconds=60.0)
    assert records["b"].first_start == pytest.approx(90.0)


def test_start_overhead_delays_the_first_start_only() -> None:
    jobs = [make_job("a").work(100).build()]
    records = run("fifo", make_cluster(nodes=1, gpus=4), jobs, start_overhead=30.0)
    assert records["a"].finish_time == pytest.approx(130.0)


def test_a_completion_between_ticks_waits_without_a_call_to_ask(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # ~2,300 completions fall between rounds in Gavel's 1,000-job FIFO: the loop tells a
    # tick itself (``_at_tick`` and ``_arm_tick``'s first test, inlined); the same times
    from dlsched.sim.simulator import Simulator

    asked: list[float] = []
    at_tick = Simulator._at_tick
    monkeypatch.setattr(Simulator, "_at_tick",
                        lambda self, now: asked.append(now) or at_tick(self, now))
    jobs = [make_job("a").gpus(4).work(90).build(), make_job("b").gpus(4).build(),
            make_job("c").at(30).work(45).build()]
    records = run("fifo", make_cluster(nodes=1, gpus=4), jobs, round_seconds=60.0,
                  rounds_only=True)
    assert records["a"].finish_time == pytest.approx(90.0)
    assert records["b"].first_start == 120.0 and records["c"].first_start > 120.0
    assert asked == []
