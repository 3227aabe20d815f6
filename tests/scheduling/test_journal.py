"""The core's journal of running-job changes (``scheduling/journal.py``): each change that
moves ``running_changes`` names its job, so a reader that looked at count ``c`` reads only the
jobs changed since; a change that names no job, or a count older than the journal keeps, makes
it answer None (look at every running job)."""

from __future__ import annotations

from builders import NullExecutor, cluster_of, make_job

from dlsched.cluster.cluster import Node
from dlsched.perf.model import LinearScaling
from dlsched.policies.fifo import fifo
from dlsched.scheduling.journal import RunningJournal
from dlsched.scheduling.scheduler import Scheduler
from dlsched.sim.clock import SimClock
from dlsched.workload.job import Job


def test_the_core_names_the_job_of_each_change() -> None:
    clock = SimClock()
    core = Scheduler(cluster_of(Node("v", "V100", 2)), fifo(), LinearScaling(), clock,
                     NullExecutor())
    first = core.snapshot().running_changes
    assert first is not None and core.snapshot().journal is core.journal
    core.submit(make_job("A").gpus(2).work(1e6).build())
    core.submit(make_job("B").gpus(2).work(1e6).build())
    core.cycle()
    after_start = core.running_changes
    assert [job.job_id for job in core.journal.since(first) or ()] == ["A"]
    clock.time = 10.0
    core.requeue("A", "node drained")
    core.cycle()  # A, first by submission, starts again
    core.finish("A")
    core.cycle()  # B starts
    told = core.journal.since(first)
    assert [job.job_id for job in told or ()] == ["A", "A", "A", "A", "B"]
    assert core.running_changes == first + 5
    assert [job.job_id for job in core.journal.since(after_start) or ()] == ["A", "A", "A", "B"]
    assert core.journal.since(core.running_changes) == []
    assert core.snapshot(running=False).journal is None


def test_an_untold_change_or_an_old_count_cannot_be_read() -> None:
    jobs = [Job(make_job(f"j{i}").build()) for i in range(6)]
    journal = RunningJournal(100, keep=2)
    journal.note(jobs[0])
    journal.note_unknown()  # e.g. a re-rating of many jobs at once
    journal.note(jobs[1])
    assert journal.since(100) is None and journal.since(101) is None
    assert journal.since(102) == [jobs[1]]
    for job in jobs[2:]:
        journal.note(job)  # more than twice ``keep``: the oldest are dropped
    assert journal.count == 107
    assert journal.since(102) is None
    assert journal.since(105) == [jobs[4], jobs[5]]
    assert journal.since(108) is None  # a count it never had
