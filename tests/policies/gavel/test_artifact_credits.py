"""``artifact_book.Credits``: crediting kept cells (``_credit_all``) adds, cell by cell and
type by type, exactly what crediting each job again (``_credit_each``) adds."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from dlsched.policies.gavel import artifact_book
from dlsched.policies.gavel.artifact_book import Book, Credits
from dlsched.scheduling.journal import RunningJournal
from dlsched.workload.job import JobStatus

GPU_KIND = np.array([0, 0, 1, 1, 2, 2, 0, 1])  # each GPU's type


def _job(job_id: str, gpu: int) -> SimpleNamespace:
    return SimpleNamespace(job_id=job_id, run_started=0.1, allocation=(gpu,),
                           status=JobStatus.RUNNING)


def _credited(keep_columns: bool) -> tuple[Credits, Book]:
    """Five jobs credited at uneven times (sums that round), one stopping midway."""
    jobs = [_job(f"j{i}", gpu) for i, gpu in enumerate([0, 2, 6, 4, 7])]
    book, credits, journal = Book(3), Credits(3, keep_columns), RunningJournal(0)
    book.add_all([job.job_id for job in jobs], 180.1)
    running = list(jobs)
    for step, now in enumerate([0.3, 0.7, 1.3, 2.9, 3.7]):
        if step == 3:  # j1 stops between two credits
            jobs[1].status = JobStatus.FINISHED
            running.remove(jobs[1])
            journal.note(jobs[1])
        credits.credit(now, running, GPU_KIND, book, journal)
    return credits, book


def test_kept_cells_credit_the_sums_of_each_job_credited_again() -> None:
    kept, kept_book = _credited(True)
    each, each_book = _credited(False)
    assert kept.reused == 4 and each.reused == 0
    assert kept.worker_time.tolist() == each.worker_time.tolist()
    assert kept_book.time.tolist() == each_book.time.tolist()
    for i in range(5):
        assert kept.seconds_on(f"j{i}").tolist() == each.seconds_on(f"j{i}").tolist()


def test_reused_credits_add_the_type_totals_when_read_in_one_numpy_add_at(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # ``np.add.at`` adds element by element in order (the loop's sums): ~10k instructions
    # a call with numpy 2.4, against ~29k for a Python loop over 69 running jobs. A reused
    # credit keeps its additions due, indexed by its cells' types (made once, then carried
    # when a job stops: ``_Running._without``): the totals read make one call for all of
    # them, the report rows read another.
    expected = _credited(False)[0].worker_time.tolist()
    calls, arrays = [], []
    add_at = np.add.at
    monkeypatch.setattr(artifact_book.np, "add", SimpleNamespace(
        at=lambda *args: calls.append(1) or add_at(*args)))
    kind_array = artifact_book._Running.kind_array

    def counted(self, n_types):  # type: ignore[no-untyped-def]
        made = self._kind_array is None
        answer = kind_array(self, n_types)
        arrays.extend([1] if made else [])
        assert answer.tolist() == self.kinds
        return answer

    monkeypatch.setattr(artifact_book._Running, "kind_array", counted)
    credits, _ = _credited(True)
    assert credits.reused == 4 and len(calls) == 1 and len(arrays) == 1  # _credit_each's
    assert credits.worker_time.tolist() == expected
    assert len(calls) == 2
    assert credits.worker_time.tolist() == expected  # nothing due: no call
    credits.seconds_on("j0")  # the report rows' additions: one call
    credits.seconds_on("j2")
    assert len(calls) == 3


def test_additions_due_are_made_at_most_every_few_credits_to_the_same_sums(
        monkeypatch: pytest.MonkeyPatch) -> None:
    each, each_book = _credited(False)
    monkeypatch.setattr(artifact_book, "_DUE_MOST", 2)
    kept, kept_book = _credited(True)
    assert len(kept._on_due) < 2 and len(kept._types_due) < 2
    assert kept.worker_time.tolist() == each.worker_time.tolist()
    for i in range(5):
        assert kept.seconds_on(f"j{i}").tolist() == each.seconds_on(f"j{i}").tolist()


def test_a_reset_drops_the_type_totals_due() -> None:
    credits, _ = _credited(True)
    credits.restart_worker_time(90.5)
    assert credits.worker_time.tolist() == [90.5] * 3
    assert credits.seconds_on("j0").tolist() == _credited(False)[0].seconds_on("j0").tolist()


def test_a_book_keeps_a_new_jobs_five_rows_in_one_block() -> None:
    book = Book(2)
    speed, relative = np.array([2.0, 4.0]), np.array([0.5, 1.0])
    slots = [book.add_row(f"j{i}", 180.0, speed, relative) for i in range(70)]  # grows
    book.deficit[slots[3]] = 7.0
    book.x[slots[3]] = 1.0
    book.remove("j3")
    again = book.add_row("k", 180.0, speed, relative)
    assert again == slots[3] and book.time.base is book.speed.base is book._block
    for slot in slots:
        assert book.time[slot].tolist() == [180.0, 180.0]
        assert book.deficit[slot].tolist() == book.x[slot].tolist() == [0.0, 0.0]
        assert book.speed[slot].tolist() == [2.0, 4.0]
        assert book.relative[slot].tolist() == [0.5, 1.0]


def _moving(keep_moves: bool) -> tuple[Credits, Book]:
    """Four jobs credited at uneven times; at the credits' times one moves to another type,
    one starts, one stops, one is preempted and started again (the end of the running
    order), and one starts between two credits (its cells cannot be shared)."""
    jobs = [_job(f"j{i}", gpu) for i, gpu in enumerate([0, 2, 6, 4, 7, 5])]
    book, journal = Book(3), RunningJournal(0)
    credits = Credits(3, keep_columns=True, keep_moves=keep_moves)
    book.add_all([job.job_id for job in jobs], 180.1)
    running = jobs[:4]
    times = [0.3, 0.7, 1.3, 2.9, 3.7, 4.1, 5.3]
    for step, now in enumerate(times):
        credits.credit(now, running, GPU_KIND, book, journal)
        if step == 1:  # j0 moves from type 0 to type 2
            _relaunch(jobs[0], 5, now, journal)
        elif step == 2:  # j4 starts
            _relaunch(jobs[4], 7, now, journal)
            running.append(jobs[4])
        elif step == 3:  # j2 stops; j1 preempted and started again
            jobs[2].status = JobStatus.FINISHED
            running.remove(jobs[2])
            journal.note(jobs[2])
            running.remove(jobs[1])
            _relaunch(jobs[1], 3, now, journal)
            running.append(jobs[1])
        elif step == 4:  # j5 starts after this credit, before the next
            _relaunch(jobs[5], 1, now + 0.2, journal)
            running.append(jobs[5])
    return credits, book


def _relaunch(job: SimpleNamespace, gpu: int, now: float, journal: RunningJournal) -> None:
    journal.note(job)  # the core notes a stop and a start
    job.allocation, job.run_started = (gpu,), now
    journal.note(job)


def test_cells_of_jobs_that_start_or_move_are_read_again_to_the_same_sums() -> None:
    patched, patched_book = _moving(True)
    each, each_book = _moving(False)
    assert patched.reused == 5 and each.reused == 2
    assert patched.worker_time.tolist() == each.worker_time.tolist()
    assert patched_book.time.tolist() == each_book.time.tolist()
    for i in range(6):
        assert patched.seconds_on(f"j{i}").tolist() == each.seconds_on(f"j{i}").tolist()


def test_a_patched_credit_reads_moved_jobs_without_a_call_each(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Agnostic max-min moves ~60 jobs a round: ``_Running._patched`` reads their cells in
    its own loop; the only Python call it makes is the new ``_Running``'s ``__init__``."""
    import sys

    patched, calls = artifact_book._Running._patched, []

    def counting(self, *args):  # type: ignore[no-untyped-def]
        def profile(frame, event, arg):  # type: ignore[no-untyped-def]
            if event == "call" and frame.f_back is not None and \
                    frame.f_back.f_code is patched.__code__:
                calls.append(frame.f_code.co_name)
        sys.setprofile(profile)
        try:
            return patched(self, *args)
        finally:
            sys.setprofile(None)

    monkeypatch.setattr(artifact_book._Running, "_patched", counting)
    _moving(True)
    assert calls and set(calls) == {"__init__"}


def test_a_stopped_job_s_gap_is_filled_by_the_last_cells() -> None:
    # ``_Running._without``: no mask per array; the cells left are the same (in another
    # order, which changes no sum: ``test_kept_cells_credit_the_sums_...``).
    cells = np.arange(5, dtype=np.intp)
    running = artifact_book._Running(["a", "b", "c", "d", "e"], [0, 1, 2, 0, 1], cells * 3,
                                     cells * 3 + 1, 0, 2.5)
    since: dict[str, float] = {}
    left = running._without([1, 4], since, 7)
    assert since == {"b": 2.5, "e": 2.5} and left.count == 7 and left.when == 2.5
    assert left.ids == ["a", "d", "c"] and left.kinds == [0, 0, 2]
    assert left.on_cells.tolist() == [0, 9, 6] and left.time_cells.tolist() == [1, 10, 7]
    assert running.ids == ["a", "b", "c", "d", "e"] and running.on_cells.tolist() == [
        0, 3, 6, 9, 12]


@pytest.mark.parametrize("policy", ["gavel-maxmin", "gavel-las", "gavel-maxmin-agnostic"])
def test_cells_told_by_the_changed_jobs_credit_as_the_pass_over_all(
        policy: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # Max-min and LAS rounds move ~15 of ~70 running jobs: ``_changed_cells`` reads the
    # jobs the journal names alone; the books, the type totals and every job's seconds per
    # type are those of ``_patched``'s pass over every running job.
    from gavel_cases import artifact_sim

    from dlsched.workload.bundled import resolve_trace
    from dlsched.workload.readers.base import ReaderOptions

    trace = resolve_trace("gavel-continuous-1000", options=ReaderOptions(limit=60))
    told, changed_cells = [], artifact_book._changed_cells

    def counted(*args):  # type: ignore[no-untyped-def]
        answer = changed_cells(*args)
        told.append(answer is not None)
        return answer

    def run() -> tuple[object, object]:
        sim = artifact_sim(policy, trace)
        result = sim.run()
        rounds = next(p for p in sim.profile.plugins if hasattr(p, "seconds_on"))
        seconds = {r.job_id: rounds.seconds_on(r.job_id).tolist() for r in result.jobs}
        return [(r.job_id, r.finish_time, r.preemptions) for r in result.jobs], seconds

    monkeypatch.setattr(artifact_book, "_changed_cells", counted)
    fast = run()
    assert any(told)
    monkeypatch.setattr(artifact_book, "_changed_cells", lambda *args: pytest.fail("called"))
    monkeypatch.setattr(artifact_book._Running, "after", _after_without_changed_cells)
    assert run() == fast


def _after_without_changed_cells(self, journal, running, since,  # type: ignore[no-untyped-def]
                                 moved=None):
    """``_Running.after`` as it was before ``_changed_cells``: ``_patched`` for every move."""
    class _NoTable:  # ``running`` without the core's table: the pass over every job
        def __init__(self, jobs):  # type: ignore[no-untyped-def]
            self.jobs = jobs

        def __iter__(self):  # type: ignore[no-untyped-def]
            return iter(self.jobs)

        def __len__(self) -> int:
            return len(self.jobs)

    return _AFTER(self, journal, _NoTable(running), since, moved)


_AFTER = artifact_book._Running.after
