"""The running-jobs-by-queue index Tiresias uses to find preemption victims."""

from __future__ import annotations

import random

import pytest
from builders import make_cluster, make_job, run

from dlsched.policies.tiresias_index import WAITING, RunningByQueue
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
    # (queue 0 is kept unsorted, by job id, while no search reads it)
    assert [len(entries) for entries in index._entries] == [0, 0]
    assert set(index._top or ()) == {"a", "b"}
    c.status, c.run_started = JobStatus.RUNNING, 9.0
    index.file(c, 1, 9.0)
    assert [j.job_id for j in index.ranked_below(0, None)] == ["c"]
    assert [len(entries) for entries in index._entries] == [0, 1]


def test_queue_0_is_sorted_in_only_once_a_search_reads_it() -> None:
    """Searches read the queues below the preemptor's, so queue 0's filings are kept by job
    id (a stop or demotion deletes one) until a search ranks queue 0 by submission
    (``same_queue_preemption``): from then on they are sorted in as any queue's, and the
    search reads queue 0's live jobs as it did with every filing sorted in."""
    index = RunningByQueue(2)
    a, b, c, d = (_running(name, submit, 5) for name, submit in
                  (("a", 0), ("b", 1), ("c", 2), ("d", 3)))
    for job in (d, c, b, a):
        index.file(job, 0, 5.0)
    index.file(b, 1, 5.0)  # demoted: leaves queue 0's filings
    c.status, c.run_started = JobStatus.PREEMPTED, None
    index.drop(c)  # stopped: leaves them too
    assert list(index.ranked_below(0, None)) == [b]
    assert index._entries[0] == [] and list(index._top or ()) == ["d", "a"]
    assert index.queue_of(a) == 0 and index.queue_of(c) is None
    assert [j.job_id for j in index.ranked_below(0, (0.5, "x"))] == ["b", "d"]
    assert index._top is None and [job.job_id for job, _ in index._entries[0]] == ["a", "d"]
    e = _running("e", 4, 6)
    index.file(e, 0, 6.0)  # sorted in from now on
    assert [j.job_id for j in index.ranked_below(0, (0.5, "x"))] == ["b", "e", "d"]


def test_compaction_keeps_queue_0s_live_unsorted_filings_only() -> None:
    """Queue 0's unsorted filings are compacted as sorted entries are: the finished ones go
    (memory follows the jobs alive), the running ones and those filed now stay."""
    index = RunningByQueue(2)
    old = [_running(f"old{i}", i, 0) for i in range(400)]
    for job in old:
        index.file(job, 0, 0.0)
    for job in old[1:]:
        job.status = JobStatus.FINISHED
    new = Job(make_job("new").at(1000).build())  # reserved now, started by the core later
    for i in range(250):  # queue-1 filings enough to compact
        index.file(_running(f"r{i}", 500 + i, 7), 1, 7.0, now=7.0)
    index.file(new, 0, 7.0, now=7.0)
    assert set(index._top or ()) == {"old0", "new"}
    assert index.queue_of(old[0]) == 0 and index.queue_of(old[1]) is None


def _truth(index: RunningByQueue, queue: int, evicted: dict[str, Job]) -> int:
    """The GPUs of the jobs a search below ``queue`` reads, all of them (it purges)."""
    return sum(len(job.allocation) for job in index.ranked_below(queue, None, evicted))


@pytest.mark.parametrize("seed", range(12))
def test_held_below_bounds_the_search_and_is_exact_once_read(seed: int) -> None:
    """``held_below`` (the lane's failed searches, told without reading an entry) is never
    below the GPUs the search's candidates hold, through starts, demotions, stops, finishes
    (no call: the index learns of them when a search reads them), restarts, compactions and
    evictions marked in the cycle; once a search has read the queues below, it is exact
    unless a job filed there has not started yet."""
    rng, now = random.Random(seed), 0.0
    index = RunningByQueue(3)
    jobs = [Job(make_job(f"j{i}").gpus(rng.choice((1, 2, 4, 8))).at(i).build())
            for i in range(30)]
    reserved: dict[str, tuple[int, float]] = {}  # filed in the cycle, started at its end
    for _ in range(400):
        now += rng.choice((0.0, 1.0))
        job, step = rng.choice(jobs), rng.random()
        if job.status in WAITING and job.job_id not in reserved and step < 0.5:
            queue = rng.randrange(3)
            index.file(job, queue, now, None, job.spec.num_gpus)
            reserved[job.job_id] = (queue, now)
        elif job.status is JobStatus.RUNNING and step < 0.3:
            where = index._filed.get(job.job_id)
            if where is not None and where[0] < 2:  # demoted a queue down
                index.file(job, where[0] + 1, job.run_started, now)
        elif job.status is JobStatus.RUNNING and step < 0.5:
            job.status, job.run_started = JobStatus.PREEMPTED, None
            index.drop(job)
        elif job.status is JobStatus.RUNNING and step < 0.6:
            job.status = JobStatus.FINISHED
        if rng.random() < 0.2:  # the cycle ends: the core starts the jobs reserved in it
            for job_id, (_, at) in reserved.items():
                started = next(j for j in jobs if j.job_id == job_id)
                started.status, started.run_started = JobStatus.RUNNING, at
                started.allocation = tuple(range(started.spec.num_gpus))
            reserved.clear()
        if rng.random() < 0.5:  # no search in this step: filings stay unsorted
            continue
        running = [j for j in jobs if j.status is JobStatus.RUNNING]
        evicted = {j.job_id: j for j in rng.sample(running, min(len(running), 2))}
        queue = rng.randrange(3)
        held = index.held_below(queue, evicted)
        assert held >= _truth(index, queue, evicted)
        if not any(q > queue for q, _ in reserved.values()):
            assert index.held_below(queue, evicted) == _truth(index, queue, evicted)


def test_a_search_the_lower_queues_cannot_satisfy_reads_no_entry(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The lane's victim search (``post_filter`` with ``room``): at 70 B (8 GPUs, queue 0)
    finds 2 free and A (2 GPUs, demoted at 50) below it, too few: it fails by the index's
    sums without reading an entry. At 85 C (4 GPUs from 60) is demoted too, and B evicts
    both; that search is the only one that reads the index."""
    reads = []
    ranked_below = RunningByQueue.ranked_below

    def counted(self: RunningByQueue, *args: object) -> object:
        reads.append(args[0])
        return ranked_below(self, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(RunningByQueue, "ranked_below", counted)
    jobs = [make_job("A").gpus(2).at(0).work(1000).build(),
            make_job("C").gpus(4).at(60).work(1000).build(),
            make_job("B").gpus(8).at(70).work(10).build()]
    records = run("tiresias", make_cluster(nodes=1, gpus=8), jobs,
                  options={"thresholds": (100.0,)})
    assert records["B"].first_start == 85.0 and records["B"].finish_time == 95.0
    assert records["A"].preemptions == records["C"].preemptions == 1
    assert reads == [0]
