"""Microsoft Philly's raw job log (msr-fiddle/philly-traces ``cluster_job_log``; Jeon et al.,
ATC'19), format ``philly-log``: the JSON array of jobs as released (the ``philly`` format reads
the CSV that the Pollux artifact made from it). A user's own download (not bundled).

Each job is ``{"status", "vc", "jobid", "attempts": [{"start_time", "end_time", "detail":
[{"ip", "gpus": [...]}]}], "submitted_time", "user"}``, times as ``YYYY-MM-DD HH:MM:SS`` (or
``None``). A job becomes:

- id ``jobid``; ``submit_time`` = ``submitted_time`` (rebased to the first job);
- ``num_gpus``: the most GPUs any of its attempts held (the ``gpus`` of its ``detail``
  entries, one entry a machine);
- ``work``: the sum of its attempts' run times (``end_time - start_time``) in reference seconds:
  the GPU time it held, without the waits between attempts (the simulation queues it anew);
- ``queue`` and node ``pool`` = ``vc``, as the ``philly`` reader does, so the ``philly``
  cluster's VC pools hold it;
- ``status`` (``Pass``, ``Killed``, ``Failed``) is checked, not kept: a killed or failed job
  held its GPUs for its attempts.

Dropped on purpose and counted: jobs that never ran (no attempt with a start), jobs with no GPU
in any attempt's detail, and jobs still running when the log was cut (an attempt without an
end). Errors name the file, the line the job starts on, and the field (``[12].attempts[0].
start_time``).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from dlsched.errors import InputError, InputLocation
from dlsched.workload.job import JobSpec
from dlsched.workload.readers.base import (
    JSON_EMPTY,
    DropRow,
    ReaderOptions,
    RowContext,
    collect,
    register_reader,
)
from dlsched.workload.trace import Trace

STATUSES = frozenset({"Pass", "Killed", "Failed"})
NEVER_RAN = "never ran (no attempt with a start_time)"
NO_GPU = "no GPU in any attempt's detail"
UNFINISHED = "still running when the log was cut (an attempt without end_time)"
_SNIFF_BYTES = 4096


@dataclass
class JobContext(RowContext):
    """One job of the log; errors name ``[index].field``."""

    prefix: str = ""
    item: Mapping[str, Any] = field(default_factory=dict)

    def where(self, name: str | None = None) -> InputLocation:
        return InputLocation(self.path, self.line, f"{self.prefix}.{name}" if name
                             else self.prefix)

    def time(self, value: Any, name: str) -> float | None:
        """A ``YYYY-MM-DD HH:MM:SS`` time in seconds (naive times read as UTC), None for a
        missing one (``null`` or ``"None"``)."""
        if value is None or value == "None":
            return None
        if not isinstance(value, str):
            raise self.fail(name, f"not a time: {value!r}")
        try:
            when = datetime.fromisoformat(value)
        except ValueError:
            raise self.fail(name, f"not a time like 2017-10-03 14:22:03: {value!r}") from None
        return (when if when.tzinfo else when.replace(tzinfo=UTC)).timestamp()


class PhillyLogReader:
    name = "philly-log"
    columns: frozenset[str] = frozenset()  # JSON: detect_format asks sniff()

    @staticmethod
    def sniff(path: Path) -> bool:
        """A JSON array whose first job has the log's keys (read from the first 4 KiB: the
        released file is one line of ~100 MB)."""
        try:
            with open(path, "rb") as f:
                head = f.read(_SNIFF_BYTES).decode("utf-8", errors="ignore")
        except OSError:
            return False
        return (head.lstrip().startswith("[") and '"attempts"' in head
                and '"submitted_time"' in head)

    def read(self, path: Path, options: ReaderOptions) -> Trace:
        collector = collect(path, options, _jobs(path), _job, gpu_field="attempts",
                            id_field="jobid", empty=JSON_EMPTY)
        return collector.trace(path.stem, self.name)


def _jobs(path: Path) -> Iterator[JobContext]:
    """The log's jobs one by one (``json``'s decoder per element, so each knows its line)."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(InputLocation(str(path)), f"cannot read as UTF-8 text: {exc}") from None
    decoder = json.JSONDecoder()
    at, line = _skip(text, 0), 1
    if not text.startswith("[", at):
        raise InputError(InputLocation(str(path), 1), "expected a JSON array of jobs")
    at, index, seen = _skip(text, at + 1), 0, 0
    while not text.startswith("]", at):
        line += text.count("\n", seen, at)
        seen = at
        try:
            item, end = decoder.raw_decode(text, at)
        except json.JSONDecodeError as exc:
            raise InputError(InputLocation(str(path), exc.lineno, f"[{index}]"),
                             f"not JSON: {exc.msg}") from None
        ctx = JobContext(str(path), line, {}, prefix=f"[{index}]")
        if isinstance(item, dict):
            ctx.item = item
        else:
            ctx.problem = "expected a job object"
        yield ctx
        at, index = _skip(text, end), index + 1
        if text.startswith(",", at):
            at = _skip(text, at + 1)
        elif not text.startswith("]", at):
            line += text.count("\n", seen, at)
            raise InputError(InputLocation(str(path), line), "expected ',' or ']' after a job")


def _skip(text: str, at: int) -> int:
    while at < len(text) and text[at] in " \t\r\n":
        at += 1
    return at


def _job(ctx: RowContext) -> JobSpec:
    assert isinstance(ctx, JobContext)
    item = ctx.item
    job_id = item.get("jobid")
    if not isinstance(job_id, str) or not job_id:
        raise ctx.fail("jobid", "missing job id")
    status = item.get("status")
    if status not in STATUSES:
        raise ctx.fail("status", f"expected one of {', '.join(sorted(STATUSES))}, "
                                 f"got {status!r}")
    vc = item.get("vc")
    if not isinstance(vc, str) or not vc:
        raise ctx.fail("vc", "missing virtual cluster")
    submitted = ctx.time(item.get("submitted_time"), "submitted_time")
    if submitted is None:
        raise ctx.fail("submitted_time", "missing time")
    attempts = item.get("attempts")
    if not isinstance(attempts, list):
        raise ctx.fail("attempts", "expected a list of attempts")
    gpus, work, started = _attempts(ctx, attempts)
    if started is None:
        raise DropRow(NEVER_RAN)
    if gpus == 0:
        raise DropRow(NO_GPU)
    if work <= 0:
        raise DropRow(NEVER_RAN)
    return JobSpec(job_id=job_id, submit_time=min(submitted, started), num_gpus=gpus,
                   work=work, queue=vc, pool=vc)


def _attempts(ctx: JobContext, attempts: list[Any]) -> tuple[int, float, float | None]:
    """(most GPUs an attempt held, the attempts' summed run time, the first start)."""
    gpus, work, first = 0, 0.0, None
    for k, attempt in enumerate(attempts):
        where = f"attempts[{k}]"
        if not isinstance(attempt, dict):
            raise ctx.fail(where, "expected an attempt object")
        start = ctx.time(attempt.get("start_time"), f"{where}.start_time")
        end = ctx.time(attempt.get("end_time"), f"{where}.end_time")
        if start is None:
            continue
        if end is None:
            raise DropRow(UNFINISHED)
        if end < start:
            raise ctx.fail(f"{where}.end_time", "before its start_time")
        first = start if first is None else min(first, start)
        work += end - start
        gpus = max(gpus, _held(ctx, attempt.get("detail"), where))
    return gpus, work, first


def _held(ctx: JobContext, detail: Any, where: str) -> int:
    if detail is None:
        return 0
    if not isinstance(detail, list):
        raise ctx.fail(f"{where}.detail", "expected a list of machines")
    count = 0
    for m, machine in enumerate(detail):
        held = machine.get("gpus") if isinstance(machine, dict) else None
        if not isinstance(held, list):
            raise ctx.fail(f"{where}.detail[{m}].gpus", "expected a list of GPUs")
        count += len(held)
    return count


register_reader(PhillyLogReader())
