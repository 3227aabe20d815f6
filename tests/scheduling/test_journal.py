"""The core's journal of running-job changes (``scheduling/journal.py``): each change that
moves ``running_changes`` names its job, so a reader that looked at count ``c`` reads only the
jobs changed since; a change that names no job, or a count older than the journal keeps, makes
it answer None (look at every running job)."""

from __future__ import annotations

import random

import pytest
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


class _EagerJournal:
    """The journal as it was: the oldest entries dropped at the ``note`` that passed
    ``2 * keep``."""

    def __init__(self, count: int, keep: int) -> None:
        self.count, self._base, self._unknown = count, count, count
        self._jobs: list[Job | None] = []
        self._keep, self._most = keep, 2 * keep

    def note(self, job: Job | None) -> None:
        self._jobs.append(job)
        self.count += 1
        if len(self._jobs) > self._most:
            drop = len(self._jobs) - self._keep
            del self._jobs[:drop]
            self._base += drop

    def note_unknown(self) -> None:
        self.note(None)
        self._unknown = self.count

    def since(self, count: int) -> list[Job | None] | None:
        if count < self._base or count < self._unknown or count > self.count:
            return None
        return self._jobs[count - self._base:]


@pytest.mark.parametrize("keep", [1, 2, 3, 7])
def test_notes_without_a_frame_answer_as_the_eager_journal(keep: int) -> None:
    """``note`` is the kept list's own append (no Python frame a change, issue 14); the
    oldest entries go when the count is read or ``trim`` is asked, and every answer is the
    eager journal's, whatever runs of notes come between reads."""
    chance = random.Random(keep)
    jobs = [Job(make_job(f"j{i}").build()) for i in range(5)]
    journal, eager = RunningJournal(1000, keep=keep), _EagerJournal(1000, keep)
    assert type(journal.note).__name__ == "builtin_function_or_method"
    for _ in range(3000):
        roll = chance.random()
        if roll < 0.7:
            job = chance.choice(jobs)
            journal.note(job)
            eager.note(job)
        elif roll < 0.75:
            journal.note_unknown()
            eager.note_unknown()
        elif roll < 0.8:
            journal.trim()
        else:
            if chance.random() < 0.5:
                assert journal.count == eager.count
            asked = eager.count - chance.randrange(3 * keep + 3)
            assert journal.since(asked) == eager.since(asked)
