"""The event core: same-time order (priority, then insertion), peek/pop, and stale completions."""

from __future__ import annotations

import pytest
from builders import (
    make_cluster,
    make_job,
    random_preemptive_jobs,
    records_of,
    schedule_and_cycles,
    simulator,
)

from dlsched.sim import simulator as simulator_module
from dlsched.sim.events import Event, EventQueue, Priority
from dlsched.workload.job import Job


def test_same_time_order_is_priority_then_insertion() -> None:
    queue = EventQueue()
    scheduled = [("t1", Priority.TIMER), ("a1", Priority.ARRIVAL), ("f1", Priority.FINISH),
                 ("a2", Priority.ARRIVAL), ("x1", Priority.FAILURE), ("f2", Priority.FINISH)]
    for name, kind in scheduled:
        queue.schedule(5.0, Event(kind, name))
    popped = [queue.pop() for _ in scheduled]
    assert [event.payload for _, event in popped] == ["f1", "f2", "x1", "a1", "a2", "t1"]
    assert {time for time, _ in popped} == {5.0}


def test_time_comes_before_priority() -> None:
    queue = EventQueue()
    queue.schedule(2.0, Event(Priority.FINISH, "late-finish"))
    queue.schedule(1.0, Event(Priority.TIMER, "early-timer"))
    queue.schedule(1.5, Event(Priority.ARRIVAL, "middle"))
    assert [queue.pop()[1].payload for _ in range(3)] == ["early-timer", "middle", "late-finish"]


def test_peek_pop_len_and_empty() -> None:
    queue = EventQueue()
    assert queue.peek() == float("inf")
    assert not queue and len(queue) == 0
    queue.schedule(3.0, Event(Priority.ARRIVAL, "a"))
    queue.schedule(1.0, Event(Priority.ARRIVAL, "b"))
    assert queue.peek() == 1.0 and len(queue) == 2  # peek does not remove
    assert queue.pop() == (1.0, Event(Priority.ARRIVAL, "b"))
    assert queue.peek() == 3.0 and bool(queue)
    queue.pop()
    assert not queue
    with pytest.raises(IndexError):
        queue.pop()


def test_payloads_are_never_compared() -> None:
    # Ties on (time, priority) are broken by the sequence number, so payloads without an
    # ordering (dicts, specs) never reach a comparison.
    queue = EventQueue()
    for i in range(3):
        queue.schedule(0.0, Event(Priority.ARRIVAL, {"i": i}))
    assert [queue.pop()[1].payload["i"] for _ in range(3)] == [0, 1, 2]


# Simulator level. One GPU, SRTF: A (100 s) starts at 0 and schedules its completion at 100;
# B (20 s) preempts it at 10 and ends at 30; A resumes at 30 and ends at 120. The completion
# event at 100 is still in the heap but belongs to A's first run: it must be ignored.
def test_stale_finish_of_preempted_job_is_ignored() -> None:
    jobs = [make_job("A").work(100).build(), make_job("B").at(10).work(20).build()]
    sim = simulator("srtf", make_cluster(nodes=1, gpus=1), jobs)
    finish_events: list[tuple[float, str]] = []
    finished: list[tuple[float, str]] = []
    executor, finish = sim.core.executor, sim.core.finish
    start = executor.start

    def log_start(job: Job, now: float) -> None:  # (the executor pushes onto the heap itself)
        start(job, now)
        finish_events.extend((time, event.payload) for time, _, _, event in sim.events.heap
                             if event.kind is Priority.FINISH and event.payload == job.job_id
                             and event.token == job.epoch)

    def log_finish(job_id: str) -> None:
        finished.append((sim.clock.now(), job_id))
        finish(job_id)

    executor.start, sim.core.finish = log_start, log_finish  # type: ignore[method-assign]
    records = records_of(sim)
    assert sorted(finish_events) == [(30.0, "B"), (100.0, "A"), (120.0, "A")]
    assert finished == [(30.0, "B"), (120.0, "A")]
    assert records["A"].finish_time == 120.0 and records["A"].preemptions == 1


# One GPU, FIFO: A (10 s) ends at 10, exactly when B arrives. Completions run before arrivals at
# the same time, and one cycle follows both: B starts at 10, not later.
def test_completion_frees_gpus_before_same_time_arrival() -> None:
    jobs = [make_job("A").work(10).build(), make_job("B").at(10).work(5).build()]
    sim = simulator("fifo", make_cluster(nodes=1, gpus=1), jobs)
    cycle_times: list[float] = []
    cycle = sim.core.cycle

    def log_cycle():  # noqa: ANN202
        cycle_times.append(sim.clock.now())
        return cycle()

    sim.core.cycle = log_cycle
    records = records_of(sim)
    assert records["B"].first_start == 10.0 and records["B"].finish_time == 15.0
    assert cycle_times == [0.0, 10.0, 15.0]  # one cycle at 10 for the finish and the arrival


def _run_compacted_above(policy: str, floor: int, monkeypatch: pytest.MonkeyPatch
                         ) -> tuple[tuple, float, int]:
    """(schedule and cycles, end time, heap entries after each cycle, summed) of a contended
    run whose heap is rid of stale entries once it holds over ``floor``."""
    monkeypatch.setattr(simulator_module, "_COMPACT_FLOOR", floor)
    sim = simulator(policy, make_cluster(nodes=2, gpus=4), random_preemptive_jobs(3),
                    options={"promote_knob": 2} if policy == "tiresias" else None)
    sizes, cycle = [], sim.core.cycle

    def sized_cycle():  # noqa: ANN202
        result = cycle()
        sizes.append(len(sim.events))
        return result

    sim.core.cycle = sized_cycle
    outcome = schedule_and_cycles(sim)
    return outcome, sim.clock.time, sum(sizes)


# Stale completions (preempted jobs') and wake-ups (armed over) dropped after every cycle
# (``Simulator._compact`` with a floor below zero) leave the run as it was: the same
# schedule, cycles and end time (the latest stale entry is kept: a run's last time step may
# be its).
@pytest.mark.parametrize("policy", ["srtf", "tiresias"])
def test_dropping_stale_entries_keeps_the_run(policy: str,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    compacted, end, entries = _run_compacted_above(policy, -10**9, monkeypatch)  # always
    kept, kept_end, kept_entries = _run_compacted_above(policy, 10**9, monkeypatch)
    assert compacted == kept and end == kept_end
    assert entries < kept_entries
