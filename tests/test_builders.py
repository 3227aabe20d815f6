"""The test builders bound a simulation by cycles and CPU time, never wall time (issue 11
item 4: a wall-clock limit failed hypothesis examples at random on a loaded machine)."""

from __future__ import annotations

import time

import pytest
from builders import TooManyCycles, cpu_limit, make_cluster, make_job, records_of, simulator


def _endless():  # noqa: ANN202
    """A job that runs for 10^9 s and one waiting behind it, a cycle every simulated second."""
    jobs = [make_job("long").gpus(2).work(1e9).build(), make_job("behind").gpus(2).build()]
    return simulator("fifo", make_cluster(nodes=1, gpus=2), jobs, round_seconds=1.0)


def test_a_run_that_does_not_end_stops_after_its_cycles() -> None:
    sim = _endless()
    with pytest.raises(TooManyCycles, match="within 50 cycles"):
        records_of(sim, cycles=50)
    assert sim.core.cycles == 50  # the same on every machine, whatever its load


def test_wall_time_does_not_count() -> None:
    # Each cycle sleeps (wall time passes, no CPU is used): as on a machine shared with other
    # work, the run takes longer than its CPU limit in wall time and still passes.
    sim = simulator("fifo", make_cluster(nodes=1, gpus=1),
                    [make_job(f"j{i}").at(i).build() for i in range(6)])
    cycle = sim.core.cycle

    def slow_cycle():  # noqa: ANN202
        time.sleep(0.05)
        return cycle()

    sim.core.cycle = slow_cycle  # type: ignore[method-assign]
    started = time.perf_counter()
    records = records_of(sim, cpu_seconds=0.2)
    assert time.perf_counter() - started > 0.2
    assert all(r.status == "finished" for r in records.values())


def _spin() -> None:
    """Burn CPU until a signal handler raises. The loop has a function of its own: on CPython
    3.11 an exception raised by a signal handler at a loop's backward jump is looked up at the
    instruction before the loop's start (python/cpython#108214); directly under the ``with``
    below, that sent it back to the ``with``'s own handler again and again, and the test hung
    (the CI of 893fb40 ran out of time there). Here it leaves this frame, which has no handler,
    and reaches the ``with`` from the call."""
    while True:
        pass


def test_cpu_time_does_count() -> None:
    with pytest.raises(TimeoutError, match="CPU time"), cpu_limit(0.05):
        _spin()
