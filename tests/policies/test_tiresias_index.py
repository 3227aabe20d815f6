"""The running-jobs-by-queue index Tiresias uses to find preemption victims."""

from __future__ import annotations

from builders import make_job

from dlsched.policies.tiresias_index import RunningByQueue
from dlsched.workload.job import Job, JobStatus


def _running(job_id: str, submit: float, started: float) -> Job:
    job = Job(make_job(job_id).at(submit).build())
    job.status, job.run_started = JobStatus.RUNNING, started
    return job


def test_victims_come_lowest_rank_first_and_skip_stale_entries() -> None:
    index = RunningByQueue(2)
    a, b, c = _running("a", 0, 5), _running("b", 1, 5), _running("c", 2, 5)
    for job in (a, b, c):
        index.file(job, 0, 5.0)
    index.file(a, 1, 5.0)  # a demoted to queue 1: its queue-0 entry is stale
    c.status = JobStatus.FINISHED
    assert [j.job_id for j in index.ranked_below(0, (0.5, "x"))] == ["a", "b"]
    assert [j.job_id for j in index.ranked_below(1, (10.0, "z"))] == []


def test_compaction_keeps_jobs_filed_this_cycle_before_they_start() -> None:
    index = RunningByQueue(1)
    old = [_running(f"old{i}", i, 0) for i in range(400)]
    for job in old:
        index.file(job, 0, 0.0)
        job.status = JobStatus.FINISHED  # finished: stale, to be compacted away
    new = Job(make_job("new").at(1000).build())  # reserved now, started by the core later
    index.file(new, 0, 7.0)  # this file() triggers a compaction
    new.status, new.run_started = JobStatus.RUNNING, 7.0
    assert [j.job_id for j in index.ranked_below(0, (-1.0, ""))] == ["new"]


def test_compaction_drops_a_preempted_jobs_entry_while_it_waits() -> None:
    index = RunningByQueue(1)
    waiting = _running("waiting", 0, 0)
    index.file(waiting, 0, 0.0)
    waiting.status, waiting.run_started = JobStatus.PREEMPTED, None
    for i in range(40):  # enough files to compact, at a later cycle (now = 9)
        index.file(_running(f"r{i}", 1 + i, 9), 0, 9.0, now=9.0)
    assert "waiting" not in index._filed
    assert len(list(index.ranked_below(0, (-1.0, "")))) == 40


def test_jobs_filed_are_sorted_in_only_when_a_search_asks() -> None:
    """Filing only notes the job; the first search sorts in the entries still live: a job
    that finished, or was filed again (demoted), before any search is never sorted in."""
    index = RunningByQueue(2)
    a, b, c = _running("a", 0, 5), _running("b", 1, 5), _running("c", 2, 5)
    for job in (a, b, c):
        index.file(job, 0, 5.0)
    index.file(b, 1, 5.0)  # b demoted before any search
    c.status = JobStatus.FINISHED
    assert index.queue_of(b) == 1 and index.queue_of(c) is None
    assert [len(entries) for entries in index._entries] == [0, 0]  # nothing sorted yet
    assert [j.job_id for j in index.ranked_below(0, (-1.0, ""))] == ["b", "a"]
    assert [[job.job_id for job, _ in entries] for entries in index._entries] == [["a"], ["b"]]


def test_victims_skip_the_evicted_as_the_search_marks_them() -> None:
    """``ranked_below(..., evicted)`` reads the evictions as it goes (a victim search marks
    each victim before it pulls the next), in the lower queues and in the job's own."""
    index = RunningByQueue(3)
    jobs = {name: _running(name, submit, 5.0)
            for name, submit in (("a", 0), ("b", 1), ("c", 2), ("d", 3))}
    for name, queue in (("a", 2), ("b", 2), ("c", 1), ("d", 1)):
        index.file(jobs[name], queue, 5.0)
    evicted: dict[str, Job] = {"b": jobs["b"]}
    search = index.ranked_below(0, None, evicted)
    assert next(search).job_id == "a"
    evicted["d"] = jobs["d"]  # marked while the search is under way
    assert [j.job_id for j in search] == ["c"]
    assert [j.job_id for j in index.ranked_below(1, (0.5, "x"), {"c": jobs["c"]})] == [
        "b", "a", "d"]


def test_a_stopped_or_demoted_jobs_entry_leaves_the_sorted_lists_at_once() -> None:
    """Stale entries sat at the tail where victim searches start, until a compaction; now a
    stop (``drop``, told by ``on_waiting``) and a demotion (``file`` again) remove them, and
    a job started again is found once."""
    index = RunningByQueue(2)
    a, b, c = _running("a", 0, 5), _running("b", 1, 5), _running("c", 2, 5)
    for job in (a, b, c):
        index.file(job, 1, 5.0)
    index.file(a, 0, 5.0)
    assert [j.job_id for j in index.ranked_below(0, None)] == ["c", "b"]  # sorted in
    c.status, c.run_started = JobStatus.PREEMPTED, None
    index.drop(c)
    index.file(b, 0, 5.0)  # b filed again, in queue 0: its queue-1 entry goes
    assert [len(entries) for entries in index._entries] == [1, 0]
    c.status, c.run_started = JobStatus.RUNNING, 9.0
    index.file(c, 1, 9.0)
    assert [j.job_id for j in index.ranked_below(0, None)] == ["c"]
    assert [len(entries) for entries in index._entries] == [2, 1]
