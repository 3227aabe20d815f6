"""``Groups.least``: the steady member of least refusal order, kept across cycles (issue 14).

Backfill's refusal is monotone in a waiting job's oracle remaining seconds, so the walk by
groups asks only whether the group's least steady member is refused before passing over the
whole group (``GroupWalk._refuse``). The least member is kept while the group's steady members
only grow, and found again once it leaves or stops being steady.
"""

from __future__ import annotations

from dlsched.tenancy.groups import Groups
from dlsched.workload.job import Job, JobSpec


def _job(name: str, seconds: float) -> Job:
    return Job(JobSpec(job_id=name, submit_time=0.0, num_gpus=2, work=seconds, queue="a"))


def _groups(jobs: list[Job]) -> tuple[Groups, dict[str, tuple[int, str]]]:
    groups = Groups(lambda job: {"gpu": float(job.spec.num_gpus)})
    entries = {job.job_id: (i, job.job_id) for i, job in enumerate(jobs)}
    for job in jobs:
        groups.join(job, "cq", entries[job.job_id])
    return groups, entries


def _order(asked: list[str]):
    def order(job: Job) -> float:
        asked.append(job.job_id)
        return job.spec.work

    return order


def test_the_least_steady_member_is_kept_and_found_again() -> None:
    jobs = [_job("a", 30.0), _job("b", 10.0), _job("c", 20.0), _job("d", 5.0)]
    groups, entries = _groups(jobs)
    group = groups.group_of["a"]
    asked: list[str] = []
    assert groups.least(group, _order(asked)) is None  # no member is steady yet
    for name in "abc":
        groups.mark(name, True)
    groups.settle(entries)
    assert groups.least(group, _order(asked)).job_id == "b"
    asked.clear()
    assert groups.least(group, _order(asked)).job_id == "b"
    assert asked == []  # kept: nothing asked again
    groups.mark("d", True)
    groups.settle(entries)
    assert groups.least(group, _order(asked)).job_id == "d"
    assert asked == ["d"]  # only the member marked steady since
    groups.leave(jobs[3], "cq", entries["d"])  # the least one starts
    assert groups.least(group, _order(asked)).job_id == "b"
    groups.mark("b", False)  # tried again and no longer steady
    groups.settle(entries)
    assert groups.least(group, _order(asked)).job_id == "c"


def test_a_member_leaving_before_it_is_counted_is_not_the_least() -> None:
    jobs = [_job("a", 30.0), _job("b", 10.0)]
    groups, entries = _groups(jobs)
    group = groups.group_of["a"]
    groups.mark("a", True)
    groups.settle(entries)
    assert groups.least(group, _order([])).job_id == "a"
    groups.mark("b", True)
    groups.settle(entries)
    groups.leave(jobs[1], "cq", entries["b"])  # marked steady, then gone before a look
    assert groups.least(group, _order([])).job_id == "a"
