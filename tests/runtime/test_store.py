"""The state store: rows survive a reopen; a batch commits jobs, attempts and events at once."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("sqlalchemy")

from dlsched.runtime.store import Batch, JobRow, Store  # noqa: E402


def job_row(job_id: str, seq: int) -> JobRow:
    return JobRow(id=job_id, seq=seq, name="n", command=["python", "train.py", "--x=1 2"],
                  env={"A": "b"}, working_dir="/w", num_gpus=2, gpu_type="T4", queue="q",
                  priority=3, min_gpus=1, max_gpus=4, checkpoint_dir="/ck", work_seconds=60.0,
                  status="pending", submit_time=1.5, attempts=0, failures=0, pending_reason="",
                  attained_service=0.0)


def test_round_trip_through_a_reopen(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'state.db'}"
    store = Store(url)
    store.create()
    epoch = store.epoch()
    store.add_job(job_row("job-1", 1), 1.5, "submitted")
    store.add_job(job_row("job-2", 2), 2.0, "submitted")
    batch = Batch()
    batch.job("job-1", status="running", attempts=1)
    batch.job("job-2", last_progress={"step": 7, "metrics": {"loss": 0.5}})
    batch.attempt_started("job-1", 1, 3.0, (0, 1), (101, 102), "/logs/a1")
    batch.event("job-1", 3.0, "started", "attempt 1")
    store.commit(batch)
    ended = Batch()
    ended.attempt_ended("job-1", 1, 9.0, "succeeded", "ok")
    ended.job("job-1", status="finished", finish_time=9.0)
    store.commit(ended)
    store.close()

    again = Store(url)
    again.create()
    assert again.epoch() == epoch
    assert again.next_seq() == 3
    one = again.job("job-1")
    assert one is not None and one.status == "finished" and one.finish_time == 9.0
    assert one.command == ["python", "train.py", "--x=1 2"] and one.env == {"A": "b"}
    assert (one.num_gpus, one.gpu_type, one.queue, one.priority) == (2, "T4", "q", 3)
    two = again.job("job-2")
    assert two is not None and two.status == "pending"
    assert two.last_progress == {"step": 7, "metrics": {"loss": 0.5}}
    [attempt] = again.attempts("job-1")
    assert (attempt.gpus, attempt.pids, attempt.outcome, attempt.end_time) == (
        [0, 1], [101, 102], "succeeded", 9.0)
    assert [e.kind for e in again.events("job-1")] == ["submitted", "started"]
    assert [r.id for r in again.unfinished()] == ["job-2"]
    assert again.open_attempts() == []
    assert [r.id for r in again.jobs(queue="q", status="pending")] == ["job-2"]
    again.close()


def test_open_attempts_are_those_without_an_end(tmp_path: Path) -> None:
    store = Store(f"sqlite:///{tmp_path / 's.db'}")
    store.create()
    store.add_job(job_row("job-1", 1), 0.0, "")
    batch = Batch()
    batch.attempt_started("job-1", 1, 1.0, (0,), (5,), "/l")
    batch.attempt_started("job-1", 2, 2.0, (1,), (6,), "/l2")
    batch.attempt_ended("job-1", 1, 1.5, "stopped", "")
    store.commit(batch)
    assert [(a.number, a.pids) for a in store.open_attempts()] == [(2, [6])]
    store.close()


def test_an_empty_batch_is_falsy() -> None:
    batch = Batch()
    assert not batch
    batch.event("j", 0.0, "kind")
    assert batch


def test_an_older_database_gets_the_newer_columns(tmp_path: Path) -> None:
    """A database from before ``done_work``/``preemptions`` existed opens, gains them with
    their defaults, and keeps its rows; a row that leaves them unset gets the defaults."""
    from sqlalchemy import inspect, text

    url = f"sqlite:///{tmp_path / 'old.db'}"
    old = Store(url)
    old.create()
    old.add_job(job_row("job-1", 1), 1.5, "submitted")
    with old.engine.begin() as connection:
        for name in ("done_work", "preemptions"):
            connection.execute(text(f"ALTER TABLE jobs DROP COLUMN {name}"))
    old.close()
    store = Store(url)
    store.create()
    columns = {c["name"] for c in inspect(store.engine).get_columns("jobs")}
    assert {"done_work", "preemptions"} <= columns
    store.add_job(job_row("job-2", 2), 2.0, "submitted")
    rows = {row.id: (row.done_work, row.preemptions) for row in store.jobs()}
    assert rows == {"job-1": (0.0, 0), "job-2": (0.0, 0)}
    store.close()


def _installed(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None


@pytest.mark.parametrize(("url", "message"), [
    pytest.param("notaurl", "--db: not a database URL SQLAlchemy can open .*Could not parse",
                 id="not-a-url"),
    pytest.param("nosuchdb://u@h/x", "--db: not a database URL .*nosuchdb", id="unknown-dialect"),
    pytest.param("mysql://u@127.0.0.1:1/x", "--db: the mysql driver is not installed "
                 "\\(No module named 'MySQLdb'\\)", id="driver-missing",
                 marks=pytest.mark.skipif(_installed("MySQLdb"), reason="MySQLdb is installed")),
])
def test_a_database_url_it_cannot_open_is_one_line_naming_db(url: str, message: str) -> None:
    """``dlsched serve --db notaurl`` (and ``history export --db``) ended in SQLAlchemy's
    traceback; a missing driver (``No module named 'psycopg'``) too."""
    from dlsched.errors import ConfigError

    with pytest.raises(ConfigError, match=message):
        Store(url)


def test_serve_with_a_bad_db_url_says_so_without_a_traceback(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from dlsched.cli import app

    result = CliRunner().invoke(app, ["serve", "--gpus", "1", "--port", "0", "--db", "notaurl",
                                      "--data-dir", str(tmp_path)])
    assert result.exit_code == 1, result.output
    assert "error: --db: not a database URL" in result.output
    assert "Traceback" not in result.output
