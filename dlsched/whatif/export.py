"""``dlsched history export``: the finished jobs of a service's database as a
``dlsched-history`` trace (``workload/readers/history.py``).

Per job: its submission, GPUs, queue, requested GPU type and priority, what each worker asked
for beyond a whole GPU (a share, GPU memory, a MIG profile, CPUs and host memory), and what the
service measured: its run time (``duration``: the sum of its attempts' run times by default,
the work of a job that resumes from its checkpoints; ``last``: its last attempt's, for jobs that
restart from scratch), its attempts and preemptions, first start, finish and JCT. Times are UNIX
seconds (the store keeps seconds since the service's epoch).
"""

from __future__ import annotations

import csv
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import astuple, dataclass
from pathlib import Path
from typing import Any

from dlsched.errors import ConfigError
from dlsched.wording import did_you_mean
from dlsched.workload.readers.history import COLUMNS

DURATIONS = ("total", "last")
# The states a job ends in: only an ended job has its whole run time to replay.
ENDED = ("finished", "failed", "cancelled")


@dataclass(frozen=True)
class HistoryRow:
    """One finished job, in ``COLUMNS`` order."""

    job_id: str
    submit_time: float
    num_gpus: int
    duration: float
    queue: str
    gpu_type: str
    priority: int
    preemptions: int
    attempts: int
    first_start: float | None
    finish_time: float | None
    measured_jct: float | None
    status: str
    name: str
    gpu_share: float = 1.0  # what each worker asked for beyond a whole GPU (docs/sharing.md)
    gpu_memory_gb: float = 0.0
    mig_profile: str | None = None
    cpus_per_gpu: float = 0.0
    memory_gb_per_gpu: float = 0.0
    min_gpus: int | None = None  # an elastic job's bounds (None: rigid)
    max_gpus: int | None = None
    max_per_node: int = 0  # its anti-affinity (0: none; docs/sharing.md)
    group: str | None = None


def run_time(spans: Sequence[tuple[float, float | None]], how: str) -> float:
    """Seconds run over the attempts' (start, end) spans: their sum, or the last one's."""
    ended = [(start, end) for start, end in spans if end is not None and end >= start]
    if not ended:
        return 0.0
    if how == "last":
        return ended[-1][1] - ended[-1][0]
    return sum(end - start for start, end in ended)


def history_rows(url: str, statuses: Iterable[str] = ("finished",), how: str = "total",
                 queues: Iterable[str] | None = None, since: float | None = None,
                 until: float | None = None) -> list[HistoryRow]:
    """The jobs of the database at ``url`` in ``statuses`` submitted in [``since``,
    ``until``) (UNIX seconds; None: unbounded), in submission order. Jobs that never ran (no
    finished attempt) are left out: there is no duration to replay."""
    from sqlalchemy import select

    from dlsched.runtime.store import AttemptRow, JobRow, MetaRow, Store

    if how not in DURATIONS:
        raise ConfigError(f"--duration: {how!r} is not one of {', '.join(DURATIONS)}")
    statuses = tuple(statuses)
    unknown = [status for status in statuses if status not in ENDED]
    if unknown:  # a typo would export nothing and blame the history
        raise ConfigError(f"--status: {unknown[0]!r} is not one of {', '.join(ENDED)}"
                          f"{did_you_mean(unknown[0].casefold(), ENDED)}")
    store = Store(url)
    try:
        with store.session() as session:
            _check_tables(store)
            meta = session.get(MetaRow, "epoch")
            epoch = float(meta.value) if meta is not None else 0.0
            query = select(JobRow).where(JobRow.status.in_(tuple(statuses))).order_by(JobRow.seq)
            if queues is not None:
                query = query.where(JobRow.queue.in_(tuple(queues)))
            jobs = list(session.scalars(query))
            spans: dict[str, list[tuple[float, float | None]]] = {}
            for attempt in session.scalars(select(AttemptRow).order_by(AttemptRow.job_id,
                                                                       AttemptRow.number)):
                spans.setdefault(attempt.job_id, []).append((attempt.start_time,
                                                             attempt.end_time))
    finally:
        store.close()
    rows = [_row(job, spans.get(job.id, []), how, epoch) for job in jobs]
    return [row for row in rows if row.duration > 0
            and (since is None or row.submit_time >= since)
            and (until is None or row.submit_time < until)]


def left_out(url: str, rows: Sequence[HistoryRow], statuses: Iterable[str],
             queues: Iterable[str] | None = None, since: float | None = None,
             until: float | None = None) -> dict[str, int]:
    """The jobs of the queues and window that ``rows`` (``history_rows``) left out, counted
    by why: an ended status not asked for (``failed``, ``cancelled``), ``not ended`` (still
    pending or running), ``never ran`` (no finished attempt: no duration to replay)."""
    from sqlalchemy import select

    from dlsched.runtime.store import JobRow, MetaRow, Store

    store = Store(url)
    try:
        with store.session() as session:
            meta = session.get(MetaRow, "epoch")
            epoch = float(meta.value) if meta is not None else 0.0
            query = select(JobRow.id, JobRow.status, JobRow.submit_time)
            if queues is not None:
                query = query.where(JobRow.queue.in_(tuple(queues)))
            jobs = list(session.execute(query))
    finally:
        store.close()
    exported, asked = {row.job_id for row in rows}, set(statuses)
    counts: dict[str, int] = {}
    for job_id, status, submitted in jobs:
        when = epoch + submitted
        if job_id in exported or (since is not None and when < since) or (
                until is not None and when >= until):
            continue
        why = ("never ran" if status in asked else status if status in ENDED
               else "not ended")
        counts[why] = counts.get(why, 0) + 1
    return counts


def parse_when(text: str | None, flag: str) -> float | None:
    """An ISO date or date-time (UTC unless it names an offset) as UNIX seconds."""
    from datetime import UTC, datetime

    if text is None:
        return None
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        raise ConfigError(f"{flag}: not an ISO date or date-time: {text!r}") from None
    return (when if when.tzinfo else when.replace(tzinfo=UTC)).timestamp()


def _check_tables(store: Any) -> None:
    from sqlalchemy import inspect

    if "jobs" not in inspect(store.engine).get_table_names():
        raise ConfigError(f"{store.url}: no dlsched service database here (no jobs table)")


def _row(job: Any, spans: list[tuple[float, float | None]], how: str,
         epoch: float) -> HistoryRow:
    first = spans[0][0] if spans else None
    jct = None if job.finish_time is None else job.finish_time - job.submit_time
    return HistoryRow(job.id, epoch + job.submit_time, job.num_gpus, run_time(spans, how),
                      job.queue, job.gpu_type or "", job.priority, job.preemptions,
                      job.attempts, _at(epoch, first), _at(epoch, job.finish_time), jct,
                      job.status, job.name or "", job.gpu_share, job.gpu_memory_gb,
                      job.mig_profile, job.cpus_per_gpu, job.memory_gb_per_gpu,
                      job.min_gpus, job.max_gpus, job.max_per_node or 0, job.density_group)


def _at(epoch: float, seconds: float | None) -> float | None:
    return None if seconds is None else epoch + seconds


def write_history(rows: Sequence[HistoryRow], path: Path) -> None:
    if not rows:
        raise ConfigError("no finished jobs to export (nothing has finished yet, or the "
                          "filters left none)")
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(COLUMNS)
        writer.writerows([_cell(v) for v in astuple(row)] for row in rows)


def _cell(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.3f}"
    return str(value)


def measured(rows: Sequence[HistoryRow]) -> dict[str, float]:
    """What the service measured over the exported jobs: mean JCT and queueing delay,
    makespan (first submission to last finish), preemptions."""
    jcts = [r.measured_jct for r in rows if r.measured_jct is not None]
    waits = [r.first_start - r.submit_time for r in rows if r.first_start is not None]
    ends = [r.finish_time for r in rows if r.finish_time is not None]
    return {"jobs": len(rows), "jct_mean": statistics.fmean(jcts) if jcts else 0.0,
            "queueing_delay_mean": statistics.fmean(waits) if waits else 0.0,
            "makespan": max(ends) - min(r.submit_time for r in rows) if ends else 0.0,
            "preemptions": sum(r.preemptions for r in rows)}
