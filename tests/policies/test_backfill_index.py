"""Backfill's index of waiting jobs (backfill_index.py) decides exactly what the job-by-job
walk decides: same records on contended random workloads (pools split the jobs into shapes,
durations spread around the shadow times), and mid-run reasons the walk's or their bucket's."""

from __future__ import annotations

import random

import pytest
from builders import make_cluster, make_job, simulator

from dlsched.policies.backfill import BackfillOrder
from dlsched.policies.backfill_ends import RunningEnds
from dlsched.policies.backfill_index import _Group
from dlsched.workload.job import Job, JobSpec


def _workload(seed: int, jobs: int = 160) -> list[JobSpec]:
    rng = random.Random(seed)
    specs = []
    for i in range(jobs):
        builder = (make_job(f"j{i:03d}").at(rng.uniform(0, 3000))
                   .gpus(rng.choice([1, 1, 2, 3, 4, 8])).work(rng.expovariate(1 / 1500)))
        if rng.random() < 0.5:
            builder = builder.pool(rng.choice(["a", "b"]))
        specs.append(builder.build())
    return specs


def _run(specs: list[JobSpec], indexed: bool, max_time: float | None,
         monkeypatch: pytest.MonkeyPatch) -> list[tuple]:
    with monkeypatch.context() as patch:
        if not indexed:
            patch.setattr(BackfillOrder, "walk_waiting", lambda self, run: None)
        cluster = make_cluster(nodes=4, gpus=4, pools=["a", "a", "b", "b"])
        result = simulator("backfill", cluster, specs, max_time=max_time).run()
    return sorted((r.job_id, r.status, r.first_start, r.finish_time, r.gpu_seconds,
                   r.pending_reason) for r in result.jobs)


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_indexed_walk_gives_the_same_schedule(seed: int,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    specs = _workload(seed)
    fast, slow = _run(specs, True, None, monkeypatch), _run(specs, False, None, monkeypatch)
    assert [r[:5] for r in fast] == [r[:5] for r in slow]


def test_indexed_walk_reasons_mid_run(monkeypatch: pytest.MonkeyPatch) -> None:
    specs = _workload(5)
    fast = _run(specs, True, 2500.0, monkeypatch)
    slow = _run(specs, False, 2500.0, monkeypatch)
    assert [r[:5] for r in fast] == [r[:5] for r in slow]
    waiting = [(f[5], s[5]) for f, s in zip(fast, slow, strict=True) if f[2] is None]
    assert len(waiting) > 10, "the workload must leave jobs waiting at the stop"
    same = sum(f == s for f, s in waiting)
    assert same >= len(waiting) // 2
    assert all(f == s or "would delay" in f or "needs" in f or "as large or smaller" in f
               for f, s in waiting)


def test_group_finds_the_first_job_short_enough() -> None:
    latest: dict[str, int] = {}
    group = _Group(latest)
    durations = [50.0, 9.0, 70.0, 3.0, 80.0, 5.0, 60.0]
    for i, seconds in enumerate(durations):
        job = Job(make_job(f"j{i}").at(i).build())
        latest[job.job_id] = i
        group.add((float(i), job.job_id), job, seconds, i)
    group.rebuild()
    assert [group.first_at_most(start, 10.0) for start in range(8)] == [1, 1, 3, 3, 5, 5, None,
                                                                          None]
    group.drop(3)
    assert group.first_at_most(2, 10.0) == 5
    assert group.first_at_most(0, 1.0) is None
    assert group.first_at_most(4, 1e308) == 4


@pytest.mark.parametrize("seed", [0, 1])
def test_running_ends_give_the_same_reservations(seed: int,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """The reservation reads running jobs by end from a heap of past ends (backfill_ends.py):
    the same records as sorting every running job's end, with many equal ends (whole-second
    works arriving together)."""
    rng = random.Random(seed)
    specs = [make_job(f"t{i:03d}").at(float(rng.randrange(0, 3000, 100)))
             .gpus(rng.choice([1, 2, 4, 8])).work(float(rng.choice([100, 200, 400, 800])))
             .build() for i in range(150)]

    def records(indexed: bool) -> list[tuple]:
        with monkeypatch.context() as patch:
            if not indexed:
                patch.setattr(RunningEnds, "refresh", lambda self, *args: False)
            result = simulator("backfill", make_cluster(nodes=4, gpus=4), specs).run()
        return sorted((r.job_id, r.first_start, r.finish_time) for r in result.jobs)

    fast = records(True)
    assert fast == records(False)
    assert sum(r[1] > 0 for r in fast) > 50  # jobs waited: reservations were made
