"""``keep_finished=False`` (sim/finished.py): ended jobs leave the core, and the run's records
are the same, in the same order, as when the core keeps every job."""

from __future__ import annotations

import random

import pytest
from builders import make_cluster, make_job, simulator

from dlsched.sim.failures import FailureCategory, FailureModel
from dlsched.workload.job import JobSpec


def _workload(seed: int, jobs: int = 80) -> list[JobSpec]:
    rng = random.Random(seed)
    specs = []
    for i in range(jobs):
        builder = (make_job(f"j{i:03d}").at(rng.uniform(0, 3000)).gpus(rng.choice([1, 2, 4, 32]))
                   .work(rng.expovariate(1 / 900)))
        if rng.random() < 0.3:
            builder = builder.deadline(rng.uniform(3000, 9000))
        specs.append(builder.build())
    return specs


def _records(policy: str, keep: bool, **options: object) -> tuple:
    sim = simulator(policy, make_cluster(nodes=3, gpus=4), _workload(1), keep_finished=keep,
                    **options)
    result = sim.run()
    return list(result.jobs), len(sim.core.jobs)


@pytest.mark.parametrize("policy", ["fifo", "tiresias", "edf"])
def test_forgetting_ended_jobs_keeps_the_records(policy: str) -> None:
    kept, alive_kept = _records(policy, True, max_time=2500.0)
    forgot, alive = _records(policy, False, max_time=2500.0)
    assert forgot == kept
    assert [r.job_id for r in forgot] == [r.job_id for r in kept]  # submission order
    ended = sum(r.status in ("finished", "failed") for r in kept)
    assert ended > 0 and alive == alive_kept - ended  # the ended jobs left the core


def test_forgetting_with_failures_keeps_the_losses() -> None:
    model = FailureModel("test", (FailureCategory("gpu", 2.0, 0.1),))
    kept, _ = _records("fifo", True, failures=model, seed=3)
    forgot, alive = _records("fifo", False, failures=model, seed=3)
    assert forgot == kept and alive == 0
    assert any(r.failures for r in kept)


def test_columns_hold_rows_across_chunks() -> None:
    """Rows go to the columns a chunk at a time: every row reads back as it came, in order,
    with None kept (optional fields), whatever the chunk boundaries."""
    from dlsched.sim.finished import _CHUNK, FinishedJobs, JobRecords
    from dlsched.sim.result import JobRecord

    rng = random.Random(5)
    rows = [JobRecord(f"j{i}", rng.choice(["a", "b"]), rng.choice([1, 8]), float(i),
                      None if i % 3 == 0 else i + 0.5, None if i % 7 == 0 else i + 9.25,
                      "finished", i % 4, i * 1.5, 2.0, 2.0, rng.choice(["", "why"]),
                      deadline=None if i % 2 else i + 100.0)
            for i in range(_CHUNK * 2 + 17)]
    finished = FinishedJobs()
    for seq, record in enumerate(rows):
        finished.add(seq, record)
        if seq == 10:
            assert finished.row(3) == rows[3] and len(finished) == 11
    assert len(finished) == len(rows)
    assert [finished.row(i) for i in range(len(rows))] == rows
    assert list(JobRecords(finished, [])) == rows


def test_a_run_without_elastic_jobs_keeps_no_size_columns() -> None:
    """Every job rigid: ``min_gpus``, ``max_gpus`` and ``last_gpus`` are derived from
    ``num_gpus`` and ``first_start`` when read, never stored (three int64 columns were ~80 MB
    at 3.4 M jobs before session 34); the records read back as a run that kept every job."""
    sim = simulator("fifo", make_cluster(nodes=3, gpus=4), _workload(1), keep_finished=False)
    result = sim.run()
    finished = result.jobs.finished  # type: ignore[attr-defined]
    assert len(finished) > 0 and not finished.sized
    assert not set(finished.columns) & {"min_gpus", "max_gpus", "last_gpus"}
    kept = simulator("fifo", make_cluster(nodes=3, gpus=4), _workload(1)).run()
    assert list(result.jobs) == list(kept.jobs)


def test_sizes_become_columns_once_a_record_needs_them() -> None:
    """Rigid rows (one that never ran: last size 0) over more than a chunk, then an elastic
    job's: the sizes become columns holding the rows before it as derived, and every row reads
    back as it came."""
    from dlsched.sim.finished import _CHUNK, FinishedJobs, JobRecords
    from dlsched.sim.result import JobRecord

    def rigid(i: int) -> JobRecord:
        ran = i % 5 != 0
        return JobRecord(f"j{i}", "q", 1 + i % 3, float(i), float(i) if ran else None,
                         float(i + 1), "finished" if ran else "failed", 0, 1.0, 1.0, 1.0, "",
                         min_gpus=1 + i % 3, max_gpus=1 + i % 3, last_gpus=1 + i % 3 if ran
                         else 0)

    rows = [rigid(i) for i in range(_CHUNK + 5)]
    rows.append(JobRecord("e", "q", 2, 1.0, 1.0, 2.0, "finished", 0, 1.0, 1.0, 1.0, "",
                          min_gpus=1, max_gpus=8, last_gpus=6))
    rows += [rigid(i) for i in range(_CHUNK + 5, _CHUNK + 9)]
    finished = FinishedJobs()
    for seq, record in enumerate(rows[:_CHUNK + 5]):
        finished.add(seq, record)
    assert not finished.sized and finished.row(_CHUNK + 4) == rows[_CHUNK + 4]
    for seq, record in enumerate(rows[_CHUNK + 5:], start=_CHUNK + 5):
        finished.add(seq, record)
    assert [finished.row(i) for i in range(len(rows))] == rows
    assert finished.sized and list(JobRecords(finished, [])) == rows
