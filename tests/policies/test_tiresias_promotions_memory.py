"""Tiresias' promotion entries follow the jobs alive, not the jobs seen (issue 14): an entry
whose job ended, or was queued again since, can never be due; the heap drops such entries
when it doubles (``_prune_promotions``), and the schedule is the one it gave with them."""

from __future__ import annotations

import pytest
from builders import make_cluster, make_job, random_preemptive_jobs, records_of, simulator

from dlsched.policies import tiresias
from dlsched.policies.tiresias import PRUNE_FLOOR, DiscretizedLas
from dlsched.workload.job import Job, JobStatus


def _stopped_after_an_hour(job_id: str, now: float) -> Job:
    """A job stopped at ``now`` after its first 2 h (queue 1 of the default threshold)."""
    job = Job(make_job(job_id).work(1e6).build())
    job.set_status(JobStatus.RUNNING)
    job.set_status(JobStatus.PREEMPTED)
    job.attained, job.attained_time = 7200.0, now
    job.last_run_seconds, job.queued_since = 7200.0, now
    return job


@pytest.mark.parametrize(("ends", "held_at_most"), [
    # Each waits once, then ends: 20 x the floor of jobs seen, no more than the floor held
    # (without pruning: every one, each entry due 4 h after its wait began).
    pytest.param("finished", PRUNE_FLOOR, id="ended-jobs"),
    # Each is queued again at once (its earlier entry superseded): one job alive.
    pytest.param("requeued", PRUNE_FLOOR + 2, id="requeued-job"),
])
def test_promotion_entries_follow_the_jobs_alive(ends: str, held_at_most: int) -> None:
    order = DiscretizedLas((3600.0,), promote_knob=2)
    job = _stopped_after_an_hour("j", 0.0)
    for i in range(20 * PRUNE_FLOOR):
        if ends == "finished":
            job = _stopped_after_an_hour(f"j{i}", float(i))
            order.on_waiting(job)
            job.set_status(JobStatus.FINISHED)
        else:
            job.queued_since = float(i)
            order.on_waiting(job)
    assert len(order._promotions) <= held_at_most


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_pruning_leaves_the_schedule(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    # Pruning at every second entry against never pruning: the same starts, ends and
    # preemptions (120 jobs on 2 x 4 GPUs, promote_knob=2).
    outlines = []
    for floor in (2, 10**9):
        monkeypatch.setattr(tiresias, "PRUNE_FLOOR", floor)
        sim = simulator("tiresias", make_cluster(nodes=2, gpus=4),
                        random_preemptive_jobs(seed), options={"promote_knob": 2})
        outlines.append(sorted((r.job_id, r.first_start, r.finish_time, r.preemptions)
                               for r in records_of(sim).values()))
    assert outlines[0] == outlines[1]


def test_jobs_due_at_one_time_are_named_in_the_order_they_were_filed() -> None:
    # Five waits filed at one time, each due at 4 h: named in filing order, as a heap of
    # (time, seq) tuples popped them (a heap of equal times pops them 1, 5, ...).
    order = DiscretizedLas((3600.0,), promote_knob=2)
    jobs = [_stopped_after_an_hour(f"j{i}", 0.0) for i in range(5)]
    for job in jobs:
        order.on_waiting(job)
    assert order.key_changes(4 * 3600.0) == jobs
