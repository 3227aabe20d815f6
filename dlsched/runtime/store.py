"""The service's state in a database: jobs, their attempts and events (SQLAlchemy 2.0 ORM).

SQLite by default (``sqlite:///PATH``, in WAL mode); any SQLAlchemy URL selects another
database. The service writes through: a submission commits before the API answers, and each loop
iteration commits its changes in one transaction (a ``Batch``), so a ``kill -9`` loses at most
the last iteration, which the restart recovers from the processes themselves.
"""

from __future__ import annotations

import time
import uuid
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
from sqlalchemy.exc import ArgumentError
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, sessionmaker
from sqlalchemy.pool import StaticPool

from dlsched.errors import ConfigError

UNFINISHED = ("pending", "running", "preempted")
# Columns added after the first release: (table, name, SQL type, default), see
# ``_add_missing_columns`` (a default of None: a nullable column).
NEWER_COLUMNS = (("jobs", "done_work", "FLOAT", "0"), ("jobs", "preemptions", "INTEGER", "0"),
                 ("jobs", "idempotency_key", "VARCHAR(64)", None),
                 ("jobs", "request_digest", "VARCHAR(64)", None),
                 ("attempts", "generation", "INTEGER", "0"),
                 ("jobs", "submitted_by", "VARCHAR(256)", None),
                 ("jobs", "gpu_share", "FLOAT", "1"), ("jobs", "gpu_memory_gb", "FLOAT", "0"),
                 ("jobs", "mig_profile", "VARCHAR(32)", None),
                 ("jobs", "cpus_per_gpu", "FLOAT", "0"),
                 ("jobs", "memory_gb_per_gpu", "FLOAT", "0"),
                 ("jobs", "max_per_node", "INTEGER", "0"),
                 ("jobs", "density_group", "VARCHAR(128)", None),
                 ("attempts", "stop_time", "FLOAT", None),
                 ("attempts", "mig_start", "INTEGER", None))


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
    # A digest of the caller and its ``Idempotency-Key`` (``commands.submit``): unique, so a
    # retried submission finds the job its first try made; ``request_digest`` is the body's.
    idempotency_key: Mapped[str | None] = mapped_column(String(64), unique=True)
    request_digest: Mapped[str | None] = mapped_column(String(64))
    # Who submitted it: the tenant of its token (``admin`` for --token, ``anyone`` without).
    submitted_by: Mapped[str | None] = mapped_column(String(256))
    # Sharing (docs/sharing.md): per worker, a share of a GPU, GPU memory, a MIG profile,
    # host CPUs and memory.
    gpu_share: Mapped[float] = mapped_column(default=1.0)
    gpu_memory_gb: Mapped[float] = mapped_column(default=0.0)
    mig_profile: Mapped[str | None] = mapped_column(String(32))
    cpus_per_gpu: Mapped[float] = mapped_column(default=0.0)
    memory_gb_per_gpu: Mapped[float] = mapped_column(default=0.0)
    # An anti-affinity: at most max_per_node workers of the group on one node.
    max_per_node: Mapped[int] = mapped_column(default=0)
    density_group: Mapped[str | None] = mapped_column(String(128))


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
    # The service generation (``Store.next_generation``) that owns the attempt: it launched
    # it, or adopted its workers after a restart. Fencing: only the owner ends it.
    generation: Mapped[int] = mapped_column(default=0)
    # When the service told its workers to stop (preemption, resize, cancel, shutdown): after
    # a crash, workers still exiting then are stopped, never adopted as running.
    stop_time: Mapped[float | None]
    # A MIG worker's instance start slice: an adopting restart books the slices it really
    # holds (the placement's choice on an emptier GPU may differ).
    mig_start: Mapped[int | None]


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
    launched_attempts: list[dict[str, Any]] = field(default_factory=list)
    ended_attempts: list[dict[str, Any]] = field(default_factory=list)
    events: list[dict[str, Any]] = field(default_factory=list)
    stopping_attempts: list[dict[str, Any]] = field(default_factory=list)
    at: float | None = None  # set: record it as the service's ``alive_at`` (service clock)

    def job(self, job_id: str, **columns: Any) -> None:
        self.jobs.setdefault(job_id, {"id": job_id}).update(columns)

    def event(self, job_id: str, at: float, kind: str, message: str = "") -> None:
        self.events.append({"job_id": job_id, "time": at, "kind": kind, "message": message})

    def attempt_started(self, job_id: str, number: int, at: float, gpus: Iterable[int],
                        pids: Iterable[int], log_path: str) -> None:
        self.new_attempts.append({"job_id": job_id, "number": number, "start_time": at,
                                  "end_time": None, "gpus": list(gpus), "pids": list(pids),
                                  "log_path": log_path, "outcome": None, "message": ""})

    def attempt_launched(self, job_id: str, number: int, at: float,
                         pids: Iterable[int]) -> None:
        """An attempt begun with ``Store.begin_attempt`` has its workers: their pids."""
        self.launched_attempts.append({"job_id": job_id, "number": number, "start_time": at,
                                       "pids": list(pids)})

    def attempt_stopping(self, job_id: str, number: int, at: float) -> None:
        """The service told the attempt's workers to stop."""
        self.stopping_attempts.append({"job_id": job_id, "number": number, "stop_time": at})

    def attempt_ended(self, job_id: str, number: int, at: float, outcome: str,
                      message: str) -> None:
        self.ended_attempts.append({"job_id": job_id, "number": number, "end_time": at,
                                    "outcome": outcome, "message": message})

    def __bool__(self) -> bool:
        return bool(self.jobs or self.new_attempts or self.launched_attempts
                    or self.ended_attempts or self.events or self.stopping_attempts)


class Store:
    def __init__(self, url: str) -> None:
        self.url = url
        self.engine: Engine = _engine(url)
        self.session = sessionmaker(self.engine, expire_on_commit=False)

    def create(self) -> None:
        Base.metadata.create_all(self.engine)
        self._add_missing_columns()
        with self.session.begin() as session:  # set by each commit (``alive_at``)
            if session.get(MetaRow, "alive_at") is None:
                session.add(MetaRow(key="alive_at", value=""))

    def _add_missing_columns(self) -> None:
        """A database made by an older dlsched lacks the newer ``jobs`` columns: add them with
        their defaults (``ALTER TABLE ... ADD COLUMN``, which SQLite and PostgreSQL both do)."""
        inspector = inspect(self.engine)
        present = {table: {column["name"] for column in inspector.get_columns(table)}
                   for table in ("jobs", "attempts")}
        with self.engine.begin() as connection:
            for table, name, kind, default in NEWER_COLUMNS:
                if name in present[table]:
                    continue
                tail = "" if default is None else f" NOT NULL DEFAULT {default}"
                connection.execute(text(f"ALTER TABLE {table} ADD COLUMN {name} {kind}{tail}"))
                if name == "idempotency_key":
                    connection.execute(text("CREATE UNIQUE INDEX IF NOT EXISTS "
                                            "ix_jobs_idempotency_key ON jobs (idempotency_key)"))

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

    def service_key(self) -> str:
        """A name for this database's service, made on first start and kept ever after: the
        Ray executor's detached actors carry it, so a restart finds its own (``ray_adopt.py``)."""
        with self.session.begin() as session:
            row = session.get(MetaRow, "service_key")
            if row is None:
                row = MetaRow(key="service_key", value=uuid.uuid4().hex[:12])
                session.add(row)
            return row.value

    def next_generation(self) -> int:
        """Count this start of the service (1, 2, ...) and return its number, durably."""
        with self.session.begin() as session:
            row = session.get(MetaRow, "generation")
            if row is None:
                row = MetaRow(key="generation", value="0")
                session.add(row)
            row.value = str(int(row.value) + 1)
            return int(row.value)

    def begin_attempt(self, job_id: str, number: int, generation: int, at: float,
                      gpus: Iterable[int], log_path: str, mig_start: int | None = None) -> None:
        """Record an attempt, and the job's attempt count, before its workers start: no two
        launches of a job ever share an attempt number, even across a ``kill -9``."""
        with self.session.begin() as session:
            session.execute(insert(AttemptRow), [{
                "job_id": job_id, "number": number, "start_time": at, "end_time": None,
                "gpus": list(gpus), "pids": [], "log_path": log_path, "outcome": None,
                "message": "", "generation": generation, "mig_start": mig_start}])
            session.execute(update(JobRow).where(JobRow.id == job_id).values(attempts=number))

    def adopt_attempt(self, job_id: str, number: int, generation: int,
                      pids: Iterable[int]) -> None:
        """A restarted service (``generation``) takes over an attempt whose workers still run."""
        key = (AttemptRow.job_id == job_id) & (AttemptRow.number == number)
        with self.session.begin() as session:
            session.execute(update(AttemptRow).where(key).values(generation=generation,
                                                                 pids=list(pids)))

    def by_idempotency_key(self, key: str) -> JobRow | None:
        with self.session() as session:
            return session.scalar(select(JobRow).where(JobRow.idempotency_key == key))

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
            for launched in batch.launched_attempts:
                key = (AttemptRow.job_id == launched["job_id"]) & (
                    AttemptRow.number == launched["number"])
                values = {k: launched[k] for k in ("start_time", "pids")}
                session.execute(update(AttemptRow).where(key).values(**values))
            for stopping in batch.stopping_attempts:
                key = (AttemptRow.job_id == stopping["job_id"]) & (
                    AttemptRow.number == stopping["number"])
                session.execute(update(AttemptRow).where(key).values(
                    stop_time=stopping["stop_time"]))
            if batch.jobs:
                session.execute(update(JobRow), list(batch.jobs.values()))
            for ended in batch.ended_attempts:
                key = (AttemptRow.job_id == ended["job_id"]) & (
                    AttemptRow.number == ended["number"])
                values = {k: ended[k] for k in ("end_time", "outcome", "message")}
                session.execute(update(AttemptRow).where(key).values(**values))
            if batch.events:
                session.execute(insert(EventRow), batch.events)
            if batch.at is not None:  # an UPDATE alone: a merge costs a SELECT more
                session.execute(update(MetaRow).where(MetaRow.key == "alive_at").values(
                    value=repr(batch.at)))

    def alive_at(self) -> float | None:
        """When (service clock) a service last saved its running jobs' state, which it does
        every ``STATE_SAVE_SECONDS`` while jobs run: about when it died. None before any."""
        with self.session() as session:
            row = session.get(MetaRow, "alive_at")
            return float(row.value) if row is not None and row.value else None

    # -- queries --------------------------------------------------------------------------
    def job(self, job_id: str) -> JobRow | None:
        with self.session() as session:
            return session.get(JobRow, job_id)

    def jobs(self, status: str | None = None, queue: str | None = None,
             limit: int | None = 1000, offset: int = 0,
             statuses: Iterable[str] | None = None,
             queues: Iterable[str] | None = None,
             newest_first: bool = False,
             submitted_by: str | None = None) -> list[JobRow]:
        order = JobRow.seq.desc() if newest_first else JobRow.seq
        query = _where(select(JobRow), status, queue, statuses, queues, submitted_by)
        with self.session() as session:
            return list(session.scalars(query.order_by(order).limit(limit).offset(offset)))

    def count_jobs(self, status: str | None = None, queue: str | None = None,
                   statuses: Iterable[str] | None = None, queues: Iterable[str] | None = None,
                   submitted_by: str | None = None) -> int:
        """How many jobs ``jobs`` would list without a limit (the dashboard's "of N")."""
        query = _where(select(func.count()).select_from(JobRow), status, queue, statuses,
                       queues, submitted_by)
        with self.session() as session:
            return session.scalar(query) or 0

    def submitters(self, queues: Iterable[str] | None = None) -> list[str]:
        """Everyone who submitted a job (to one of ``queues``), sorted."""
        query = select(JobRow.submitted_by).distinct().where(JobRow.submitted_by.is_not(None))
        if queues is not None:
            query = query.where(JobRow.queue.in_(tuple(queues)))
        with self.session() as session:
            return sorted(name for name in session.scalars(query) if name)

    def job_queues(self, queues: Iterable[str] | None = None) -> list[str]:
        """Every queue a job was submitted to (one of ``queues``), ended jobs' too, sorted."""
        query = select(JobRow.queue).distinct()
        if queues is not None:
            query = query.where(JobRow.queue.in_(tuple(queues)))
        with self.session() as session:
            return sorted(session.scalars(query))

    def unfinished(self) -> list[JobRow]:
        return self.jobs(statuses=UNFINISHED, limit=None)

    def attempts(self, job_id: str) -> list[AttemptRow]:
        query = select(AttemptRow).where(AttemptRow.job_id == job_id).order_by(
            AttemptRow.number)
        with self.session() as session:
            return list(session.scalars(query))

    def attempts_since(self, time: float) -> list[AttemptRow]:
        """Attempts that were running at ``time`` or began later (service-clock seconds)."""
        query = select(AttemptRow).where(AttemptRow.end_time.is_(None)
                                         | (AttemptRow.end_time >= time))
        with self.session() as session:
            return list(session.scalars(query))

    def worker_shares(self, job_ids: Iterable[str]) -> dict[str, tuple[float, str | None]]:
        """Each job's ``gpu_share`` and ``mig_profile`` (what one worker holds of its GPU)."""
        ids = list(dict.fromkeys(job_ids))
        query = select(JobRow.id, JobRow.gpu_share, JobRow.mig_profile).where(
            JobRow.id.in_(ids))
        with self.session() as session:
            return {job_id: (share, mig) for job_id, share, mig in session.execute(query)}

    def open_attempts(self) -> list[AttemptRow]:
        """Attempts with no end: their processes may still run (after a crash)."""
        with self.session() as session:
            return list(session.scalars(select(AttemptRow).where(AttemptRow.end_time.is_(None))))

    def last_requeued(self) -> dict[str, float]:
        """Each job's latest time it went back to its queue (a ``preempted`` or ``requeued``
        event): since when a preempted job waits."""
        query = select(EventRow.job_id, func.max(EventRow.time)).where(
            EventRow.kind.in_(("preempted", "requeued"))).group_by(EventRow.job_id)
        with self.session() as session:
            return {job_id: at for job_id, at in session.execute(query)}

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
    """The database's engine; a URL SQLAlchemy cannot read, or whose driver is not installed,
    is one line naming ``--db`` (``dlsched serve --db notaurl`` ended in a traceback)."""
    try:
        return _sqlite_engine(url) if url.startswith("sqlite") else create_engine(
            url, pool_pre_ping=True)
    except ArgumentError as exc:  # and NoSuchModuleError: an unknown dialect or driver
        raise ConfigError(f"--db: not a database URL SQLAlchemy can open ({exc}); e.g. "
                          "sqlite:///PATH or postgresql://USER@HOST/DB") from None
    except ImportError as exc:  # the dialect's driver (psycopg, MySQLdb) is not installed
        raise ConfigError(f"--db: the {url.split(':', 1)[0]} driver is not installed "
                          f"({exc}); pip install it") from None


def _sqlite_engine(url: str) -> Engine:
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


def _where(query: Any, status: str | None, queue: str | None, statuses: Iterable[str] | None,
           queues: Iterable[str] | None, submitted_by: str | None) -> Any:
    """``query`` narrowed to the jobs of these filters (None: any)."""
    if status is not None:
        query = query.where(JobRow.status == status)
    if statuses is not None:
        query = query.where(JobRow.status.in_(tuple(statuses)))
    if queue is not None:
        query = query.where(JobRow.queue == queue)
    if queues is not None:
        query = query.where(JobRow.queue.in_(tuple(queues)))
    if submitted_by is not None:
        query = query.where(JobRow.submitted_by == submitted_by)
    return query
