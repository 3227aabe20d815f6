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


def test_a_reused_credit_adds_the_type_totals_without_numpy_add_at(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # ``np.add.at`` costs ~5 us a call: a reused credit adds the one number job by job.
    calls = []
    add_at = np.add.at
    monkeypatch.setattr(artifact_book.np, "add", SimpleNamespace(
        at=lambda *args: calls.append(1) or add_at(*args)))
    credits, _ = _credited(True)
    assert credits.reused == 4 and len(calls) == 1
