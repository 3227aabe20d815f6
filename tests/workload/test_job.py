"""The job model: the JobStatus state machine, JobSpec validation, progress arithmetic."""

from __future__ import annotations

import itertools
import math

import pytest
from builders import make_job

from dlsched.errors import DlschedError
from dlsched.workload.job import InvalidTransition, Job, JobSpec, JobStatus, check_transition

S = JobStatus
ALLOWED = {
    (S.PENDING, S.RUNNING), (S.PENDING, S.FAILED), (S.PENDING, S.CANCELLED),
    (S.RUNNING, S.PREEMPTED), (S.RUNNING, S.FINISHED), (S.RUNNING, S.FAILED),
    (S.RUNNING, S.CANCELLED),
    (S.PREEMPTED, S.RUNNING), (S.PREEMPTED, S.FINISHED), (S.PREEMPTED, S.FAILED),
    (S.PREEMPTED, S.CANCELLED),
}
PAIRS = list(itertools.product(JobStatus, JobStatus))


@pytest.mark.parametrize(("old", "new"), [p for p in PAIRS if p in ALLOWED],
                         ids=[f"{a.value}->{b.value}" for a, b in PAIRS if (a, b) in ALLOWED])
def test_allowed_transition(old: JobStatus, new: JobStatus) -> None:
    job = Job(make_job("j").build())
    job.status = old
    job.set_status(new)
    assert job.status is new


@pytest.mark.parametrize(("old", "new"), [p for p in PAIRS if p not in ALLOWED],
                         ids=[f"{a.value}->{b.value}" for a, b in PAIRS if (a, b) not in ALLOWED])
def test_forbidden_transition(old: JobStatus, new: JobStatus) -> None:
    job = Job(make_job("j").build())
    job.status = old
    with pytest.raises(InvalidTransition, match=f"job j: {old.value} -> {new.value}"):
        job.set_status(new)
    assert job.status is old
    assert issubclass(InvalidTransition, DlschedError)


def test_terminal_states_have_no_way_out() -> None:
    for old in (S.FINISHED, S.FAILED, S.CANCELLED):
        assert old.is_terminal and not old.is_waiting
        for new in JobStatus:
            with pytest.raises(InvalidTransition):
                check_transition("j", old, new)
    assert {s for s in JobStatus if s.is_waiting} == {S.PENDING, S.PREEMPTED}


BAD_SPECS = [
    ("negative-gpus", {"num_gpus": -1}, "num_gpus must be >= 1"),
    ("zero-gpus", {"num_gpus": 0}, "num_gpus must be >= 1"),
    ("zero-work", {"work": 0.0}, "work must be > 0"),
    ("negative-work", {"work": -5.0}, "work must be > 0"),
    ("nan-work", {"work": math.nan}, "work must be > 0"),
    ("negative-submit", {"submit_time": -1.0}, "submit_time must be >= 0"),
    ("zero-share", {"gpu_share": 0.0}, r"gpu_share must be in \(0, 1\]"),
    ("share-above-one", {"gpu_share": 1.5}, r"gpu_share must be in \(0, 1\]"),
    ("min-above-request", {"num_gpus": 2, "min_gpus": 4}, "min_gpus 4 > num_gpus 2"),
    ("max-below-request", {"num_gpus": 4, "max_gpus": 2}, "max_gpus 2 < num_gpus 4"),
]


@pytest.mark.parametrize(("fields", "message"), [c[1:] for c in BAD_SPECS],
                         ids=[c[0] for c in BAD_SPECS])
def test_spec_validation(fields: dict[str, object], message: str) -> None:
    values: dict[str, object] = {"job_id": "bad", "submit_time": 0.0, "num_gpus": 1,
                                 "work": 10.0, **fields}
    with pytest.raises(ValueError, match=f"job bad: {message}"):
        JobSpec(**values)  # type: ignore[arg-type]


def test_valid_spec_and_elasticity() -> None:
    spec = make_job("ok").gpus(4).share(0.5).build()
    assert spec.problem() is None and not spec.is_elastic
    assert JobSpec("e", 0.0, 4, 10.0, min_gpus=1, max_gpus=8).is_elastic


def test_progress_while_running_after_a_restart_pause() -> None:
    # 100 units of work at 2 units/s, restarted at t=10 with a 5 s pause and 20 units done.
    job = Job(make_job("j").gpus(2).work(100).build())
    job.status = S.RUNNING
    job.allocation, job.rate, job.done_work = (0, 1), 2.0, 20.0
    job.progress_time = job.attained_time = 10.0
    job.productive_from = 15.0
    job.attained = 8.0
    assert job.work_done(12.0) == 20.0  # still paused
    assert job.work_done(25.0) == 40.0  # 10 s of progress at 2/s
    assert job.work_done(1000.0) == 100.0  # never more than the work
    assert job.remaining_work(25.0) == 60.0
    assert job.attained_service(25.0) == 8.0 + 2 * 15.0  # pauses count: GPUs are held
    job.status = S.PREEMPTED
    assert job.work_done(1000.0) == 20.0 and job.attained_service(1000.0) == 8.0


def test_new_job_counts_from_its_submission() -> None:
    job = Job(make_job("j").at(42).build())
    assert job.job_id == "j" and job.status is S.PENDING
    assert job.queued_since == 42.0 and job.progress_time == 42.0
    assert job.num_gpus == 1 and job.work_done(100.0) == 0.0
