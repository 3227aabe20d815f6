"""The Tiresias lane hands its free books to the core (``decisions.HandedBooks``).

A lane cycle's starts and stops leave the core's books alone; the core writes the lane's books
once, node by node, after them, where they are of its own state.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from unittest import mock

import numpy as np
from builders import make_cluster, make_job, simulator

from dlsched.scheduling import scheduler
from dlsched.scheduling.decisions import CycleResult
from dlsched.workload.job import JobSpec


def _contended() -> list[JobSpec]:
    """Promotion under contention: promoted jobs evict jobs of the last queue, every size."""
    return [make_job(f"j{i:03d}").at(i * 13).gpus((1, 2, 4, 1, 8, 3)[i % 6]).work(
        300 + 47 * (i % 9)).build() for i in range(80)]


def _run(apply_at: object = None) -> tuple[scheduler.Scheduler, object]:
    sim = simulator("tiresias", make_cluster(nodes=3, gpus=8), _contended(),
                    options={"thresholds": "100:1500", "promote_knob": "2"},
                    restart_overhead=5.0)
    if apply_at is None:
        return sim.core, sim.run()
    with mock.patch.object(scheduler.Scheduler, "_apply_at", apply_at):
        return sim.core, sim.run()


def _books_of_running(core: scheduler.Scheduler) -> tuple[bytes, bytes, float]:
    """The books the running jobs' allocations make: each held GPU 0 free, the others 1."""
    free = np.ones(core.free.shape)
    for job in core.running.values():
        free[list(job.allocation)] = 0.0
    counts = np.array([int(free[core.cluster.node_first_gpu[n]:][:core.cluster.node_gpus[n]]
                           .sum()) for n in range(core.cluster.num_nodes)], dtype=np.int64)
    return free.tobytes(), counts.tobytes(), float(len(free) - free.sum())


@contextmanager
def _adjust_calls() -> Iterator[list[str]]:
    calls: list[str] = []
    whole, shares = scheduler.Scheduler._adjust_whole, scheduler.Scheduler._adjust

    def counted_whole(core: scheduler.Scheduler, *args: object) -> None:
        calls.append("whole")
        whole(core, *args)  # type: ignore[arg-type]

    def counted(core: scheduler.Scheduler, *args: object) -> None:
        calls.append("shares")
        shares(core, *args)  # type: ignore[arg-type]

    with (mock.patch.object(scheduler.Scheduler, "_adjust_whole", counted_whole),
          mock.patch.object(scheduler.Scheduler, "_adjust", counted)):
        yield calls


def test_a_lane_cycle_books_its_starts_and_stops_once_node_by_node() -> None:
    apply_at, checked = scheduler.Scheduler._apply_at, []

    def applying(core: scheduler.Scheduler, result: CycleResult, now: float) -> None:
        if result.books is None:
            apply_at(core, result, now)
            return
        with _adjust_calls() as calls:
            apply_at(core, result, now)
        assert not calls  # no start or stop booked a GPU at a time
        assert (core.free.tobytes(), core.node_free.tobytes(),
                core.used_gpus) == _books_of_running(core)
        checked.append(len(result.starts) + len(result.preemptions))

    _run(applying)
    assert len(checked) > 20 and sum(checked) > 40


def test_books_of_another_state_are_left_and_each_start_and_stop_books_its_gpus() -> None:
    """Handed books whose running jobs have changed since (the journal's count) are not
    written: the starts and stops book their GPUs as without books, the same run."""
    apply_at, stale = scheduler.Scheduler._apply_at, []

    def applying(core: scheduler.Scheduler, result: CycleResult, now: float) -> None:
        books = result.books
        if books is None or not result.preemptions or len(stale) >= 5:
            apply_at(core, result, now)
            return
        changed = result.__class__(**{**{name: getattr(result, name) for name in (
            "starts", "preemptions", "reasons", "next_wakeup", "blocked", "resizes",
            "rejections", "bulk_reasons", "stop_reason")},
            "books": books._replace(changes=books.changes - 1)})
        with _adjust_calls() as calls:
            apply_at(core, changed, now)
        stale.append(len(calls))
        assert len(calls) == len(result.starts) + len(result.preemptions)

    core, result = _run(applying)
    plain_core, plain = _run()
    assert len(stale) == 5
    assert [repr(r) for r in result.jobs] == [repr(r) for r in plain.jobs]  # type: ignore[attr-defined]
    assert (core.free.tobytes(), core.node_version.tobytes()) == (
        plain_core.free.tobytes(), plain_core.node_version.tobytes())
