"""The service's state in a database: jobs, their attempts and events (SQLAlchemy 2.0 ORM).

SQLite by default (``sqlite:///PATH``, in WAL mode); any SQLAlchemy URL selects another
database. The service writes through: a submission commits before the API answers, and each loop
iteration commits its changes in one transaction (a ``Batch``), so a ``kill -9`` loses at most
the last iteration, which the restart recovers from the processes themselves.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import (
    JSON,
    Engine,
    ForeignKey,
    String,
    create_engine,
    event,
    func,
    insert,
    inspect,
    select,
    text,
    update,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, sessionmaker
from sqlalchemy.pool import StaticPool

UNFINISHED = ("pending", "running", "preempted")
# Columns added after the first release: (name, SQL type, default), see ``_add_missing_columns``.
NEWER_COLUMNS = (("done_work", "FLOAT", "0"), ("preemptions", "INTEGER", "0"))


class Base(DeclarativeBase):
    pass


class MetaRow(Base):
    __tablename__ = "meta"
    key: Mapped[str] = mapped_column(String(64), primary_key=True)
    value: Mapped[str] = mapped_column(String(256))


class JobRow(Base):
    __tablename__ = "jobs"
    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    seq: Mapped[int] = mapped_column(unique=True)
    name: Mapped[str | None] = mapped_column(String(200))
    command: Mapped[list[str]] = mapped_column(JSON)
    env: Mapped[dict[str, str]] = mapped_column(JSON, default=dict)
    working_dir: Mapped[str | None] = mapped_column(String(4096))
    num_gpus: Mapped[int]
    gpu_type: Mapped[str | None] = mapped_column(String(64))
    queue: Mapped[str] = mapped_column(String(64), index=True)
    priority: Mapped[int] = mapped_column(default=0)
    min_gpus: Mapped[int | None]
    max_gpus: Mapped[int | None]
    checkpoint_dir: Mapped[str] = mapped_column(String(4096))
    work_seconds: Mapped[float | None]
    status: Mapped[str] = mapped_column(String(16), index=True)
    submit_time: Mapped[float]
    attempts: Mapped[int] = mapped_column(default=0)
    failures: Mapped[int] = mapped_column(default=0)
    pending_reason: Mapped[str] = mapped_column(String(1000), default="")
    finish_time: Mapped[float | None]
    attained_service: Mapped[float] = mapped_column(default=0.0)
    done_work: Mapped[float] = mapped_column(default=0.0)
    preemptions: Mapped[int] = mapped_column(default=0)
    last_progress: Mapped[dict[str, Any] | None] = mapped_column(JSON)


class AttemptRow(Base):
    __tablename__ = "attempts"
    job_id: Mapped[str] = mapped_column(ForeignKey("jobs.id"), primary_key=True)
    number: Mapped[int] = mapped_column(primary_key=True)
    start_time: Mapped[float]
    end_time: Mapped[float | None] = mapped_column(index=True)
    gpus: Mapped[list[int]] = mapped_column(JSON)
    pids: Mapped[list[int]] = mapped_column(JSON)
    log_path: Mapped[str] = mapped_column(String(4096))
    outcome: Mapped[str | None] = mapped_column(String(32))
    message: Mapped[str] = mapped_column(String(1000), default="")


class EventRow(Base):
    __tablename__ = "events"
    id: Mapped[int] = mapped_column(primary_key=True, autoincrement=True)
    job_id: Mapped[str] = mapped_column(ForeignKey("jobs.id"), index=True)
    time: Mapped[float]
    kind: Mapped[str] = mapped_column(String(32))
    message: Mapped[str] = mapped_column(String(1000), default="")


@dataclass
class Batch:
    """The changes of one loop iteration, committed in one transaction."""

    jobs: dict[str, dict[str, Any]] = field(default_factory=dict)
    new_attempts: list[dict[str, Any]] = field(default_factory=list)
    ended_attempts: list[dict[str, Any]] = field(default_factory=list)
    events: list[dict[str, Any]] = field(default_factory=list)

    def job(self, job_id: str, **columns: Any) -> None:
        self.jobs.setdefault(job_id, {"id": job_id}).update(columns)

    def event(self, job_id: str, at: float, kind: str, message: str = "") -> None:
        self.events.append({"job_id": job_id, "time": at, "kind": kind, "message": message})

    def attempt_started(self, job_id: str, number: int, at: float, gpus: Iterable[int],
                        pids: Iterable[int], log_path: str) -> None:
        self.new_attempts.append({"job_id": job_id, "number": number, "start_time": at,
                                  "end_time": None, "gpus": list(gpus), "pids": list(pids),
                                  "log_path": log_path, "outcome": None, "message": ""})

    def attempt_ended(self, job_id: str, number: int, at: float, outcome: str,
                      message: str) -> None:
        self.ended_attempts.append({"job_id": job_id, "number": number, "end_time": at,
                                    "outcome": outcome, "message": message})

    def __bool__(self) -> bool:
        return bool(self.jobs or self.new_attempts or self.ended_attempts or self.events)


class Store:
    def __init__(self, url: str) -> None:
        self.url = url
        self.engine: Engine = _engine(url)
        self.session = sessionmaker(self.engine, expire_on_commit=False)

    def create(self) -> None:
        Base.metadata.create_all(self.engine)
        self._add_missing_columns()

    def _add_missing_columns(self) -> None:
        """A database made by an older dlsched lacks the newer ``jobs`` columns: add them with
        their defaults (``ALTER TABLE ... ADD COLUMN``, which SQLite and PostgreSQL both do)."""
        present = {column["name"] for column in inspect(self.engine).get_columns("jobs")}
        with self.engine.begin() as connection:
            for name, kind, default in NEWER_COLUMNS:
                if name not in present:
                    connection.execute(text(f"ALTER TABLE jobs ADD COLUMN {name} {kind} "
                                            f"NOT NULL DEFAULT {default}"))

    def close(self) -> None:
        self.engine.dispose()

    def epoch(self) -> float:
        """The service's time zero, set on first start and kept ever after."""
        with self.session.begin() as session:
            row = session.get(MetaRow, "epoch")
            if row is None:
                row = MetaRow(key="epoch", value=repr(time.time()))
                session.add(row)
            return float(row.value)

    def next_seq(self) -> int:
        with self.session() as session:
            return (session.scalar(select(func.max(JobRow.seq))) or 0) + 1

    def add_job(self, row: JobRow, at: float, message: str) -> None:
        """Insert a new job and its first event (bulk inserts: no unit-of-work overhead)."""
        values = {column.key: _value_or_default(row, column)
                  for column in JobRow.__table__.columns}
        with self.session.begin() as session:
            session.execute(insert(JobRow), [values])
            session.execute(insert(EventRow), [{"job_id": row.id, "time": at,
                                                "kind": "submitted", "message": message}])

    def commit(self, batch: Batch) -> None:
        with self.session.begin() as session:
            if batch.new_attempts:
                session.execute(insert(AttemptRow), batch.new_attempts)
            if batch.jobs:
                session.execute(update(JobRow), list(batch.jobs.values()))
            for ended in batch.ended_attempts:
                key = (AttemptRow.job_id == ended["job_id"]) & (
                    AttemptRow.number == ended["number"])
                values = {k: ended[k] for k in ("end_time", "outcome", "message")}
                session.execute(update(AttemptRow).where(key).values(**values))
            if batch.events:
                session.execute(insert(EventRow), batch.events)

    # -- queries --------------------------------------------------------------------------
    def job(self, job_id: str) -> JobRow | None:
        with self.session() as session:
            return session.get(JobRow, job_id)

    def jobs(self, status: str | None = None, queue: str | None = None,
             limit: int | None = 1000, offset: int = 0,
             statuses: Iterable[str] | None = None,
             queues: Iterable[str] | None = None) -> list[JobRow]:
        query = select(JobRow).order_by(JobRow.seq).limit(limit).offset(offset)
        if status is not None:
            query = query.where(JobRow.status == status)
        if statuses is not None:
            query = query.where(JobRow.status.in_(tuple(statuses)))
        if queue is not None:
            query = query.where(JobRow.queue == queue)
        if queues is not None:
            query = query.where(JobRow.queue.in_(tuple(queues)))
        with self.session() as session:
            return list(session.scalars(query))

    def unfinished(self) -> list[JobRow]:
        return self.jobs(statuses=UNFINISHED, limit=None)

    def attempts(self, job_id: str) -> list[AttemptRow]:
        query = select(AttemptRow).where(AttemptRow.job_id == job_id).order_by(
            AttemptRow.number)
        with self.session() as session:
            return list(session.scalars(query))

    def open_attempts(self) -> list[AttemptRow]:
        """Attempts with no end: their processes may still run (after a crash)."""
        with self.session() as session:
            return list(session.scalars(select(AttemptRow).where(AttemptRow.end_time.is_(None))))

    def events(self, job_id: str) -> list[EventRow]:
        query = select(EventRow).where(EventRow.job_id == job_id).order_by(EventRow.id)
        with self.session() as session:
            return list(session.scalars(query))


def _value_or_default(row: JobRow, column: Any) -> Any:
    """A column's value, or its scalar default when the row leaves it unset (a bulk insert
    would otherwise write NULL)."""
    value = getattr(row, column.key)
    default = column.default
    if value is None and default is not None and default.is_scalar:
        return default.arg
    return value


def _engine(url: str) -> Engine:
    if not url.startswith("sqlite"):
        return create_engine(url, pool_pre_ping=True)
    memory = url in ("sqlite://", "sqlite:///:memory:")
    engine = create_engine(url, connect_args={"check_same_thread": False, "timeout": 30},
                           poolclass=StaticPool if memory else None)

    @event.listens_for(engine, "connect")
    def _pragmas(connection: Any, _record: Any) -> None:
        # WAL + NORMAL: a committed transaction survives the process being killed (not
        # necessarily a power cut), and writes do not wait for fsync.
        cursor = connection.cursor()
        if not memory:
            cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.close()

    return engine
