"""Microsoft Philly trace (Jeon et al., ATC'19) as processed by the Pollux artifact.

Columns ``timestamp,duration,num_gpus,gpu_time,cluster``: an ISO time, seconds, a GPU count,
GPU-seconds and the virtual cluster (VC). Submit times are rebased to the first job. The VC
becomes both the job's queue and its node pool (Philly ran each VC on its own machines).
With a tenant model (``--tenants``) the pool pin is dropped (``without_vc_pins``): a VC's quota,
not its machines, bounds it then, so that it can borrow other VCs' idle GPUs.

Reading is vectorised (str.split and numpy) when every row is clean; any doubt (a bad value, a blank
line, quoting, an unusual time format) falls back to the row-by-row path, which gives the same
jobs and is the only place that reports errors, so messages name the exact line and field.
"""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import numpy as np

from dlsched.textinput import MAX_FIELD_CHARS
from dlsched.workload.job import JobSpec, plain_spec
from dlsched.workload.readers.base import (
    MAX_MAGNITUDE,
    ReaderOptions,
    RowCollector,
    RowContext,
    date_time,
    iter_csv_rows,
    register_reader,
)
from dlsched.workload.trace import Trace

COLUMNS = ("timestamp", "duration", "num_gpus", "gpu_time", "cluster")
_TIME_LENGTH = 19  # len("2017-10-09 07:01:55")
_BLANK_LINE = re.compile(rb"\n[ \t]*\n")
# what the row path must judge: quoting, CR, control characters, anything not ASCII (a BOM,
# bytes that may not be UTF-8)
_ROW_PATH_ONLY = re.compile(rb'["\r\x00-\x08\x0b-\x1f\x7f-\xff]')
# fields in range (a format parser may take a second of 60; fromisoformat does not)
_TIME = r"\d{4}-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12]\d|3[01]) (?:[01]\d|2[0-3]):[0-5]\d:[0-5]\d"

_TIME_FULL = re.compile(_TIME)


class PhillyReader:
    name = "philly"
    columns = frozenset(COLUMNS)

    def read(self, path: Path, options: ReaderOptions) -> Trace:
        jobs = _fast_jobs(path, options)
        if jobs is None:
            return self.read_rows(path, options)
        return Trace(name=path.stem, jobs=tuple(jobs), source=str(path), format=self.name)

    def read_rows(self, path: Path, options: ReaderOptions) -> Trace:
        """The row-by-row path alone: ``read`` must give the same jobs or the same error
        (a property test holds the fast path to it)."""
        collector = RowCollector.start(path, options)
        for ctx in iter_csv_rows(path, COLUMNS):
            if not collector.add(ctx, self._job):
                break
        return collector.trace(path.stem, self.name)

    @staticmethod
    def _job(ctx: RowContext) -> JobSpec:
        submit = date_time(ctx, "timestamp")
        duration = ctx.number("duration", positive=True)
        gpus = ctx.integer("num_gpus", minimum=1)
        ctx.number("gpu_time", minimum=0)
        vc = ctx.text("cluster")
        return JobSpec(job_id=f"philly-{ctx.line - 1}", submit_time=submit, num_gpus=gpus,
                       work=duration, queue=vc, pool=vc)


def _clean_columns(path: Path, limit: int | None) -> dict[str, list[str]] | None:
    """The file's columns as lists of strings (the first ``limit`` rows), or None unless it
    is plain CSV: ASCII, unquoted, no blank line, the five columns once each, every row of
    five fields, no value longer than the limit. Split with ``str.split``: no CSV engine
    (pandas' import alone cost ~0.4 CPU s of a run)."""
    data = path.read_bytes().rstrip()  # trailing blank lines shift no line numbers
    if _ROW_PATH_ONLY.search(data) or _BLANK_LINE.search(data):
        return None
    if limit is not None and limit < 1:
        return None
    lines = data.decode("ascii").split("\n")  # ASCII: _ROW_PATH_ONLY refuses any other byte
    header = [name.strip() for name in lines[0].split(",")]
    if len(header) != len(COLUMNS) or set(header) != set(COLUMNS):
        return None
    rows = lines[1:] if limit is None else lines[1:limit + 1]
    cells = [line.split(",") for line in rows]
    if not cells or any(len(row) != len(COLUMNS) for row in cells):
        return None
    columns = [list(column) for column in zip(*cells, strict=True)]
    if any(max(map(len, column)) > MAX_FIELD_CHARS for column in columns):
        return None
    return dict(zip(header, columns, strict=True))


def _submit_seconds(raw: list[str]) -> np.ndarray | None:
    if any(len(value) != _TIME_LENGTH for value in raw):
        return None
    if not all(map(_TIME_FULL.fullmatch, raw)):  # the fields in range; anything else (one-
        return None  # digit hours, an offset) is the row path's (datetime.fromisoformat)
    try:  # a day the month does not have (02-30) is refused here
        seconds = np.array(raw, dtype="datetime64[s]").astype(np.int64).astype(float)
    except ValueError:
        return None
    return None if (seconds < 0).any() else seconds


def _floats(raw: list[str]) -> np.ndarray | None:
    try:
        values = np.array(raw, dtype=float)
    except ValueError:
        return None
    if not np.isfinite(values).all() or (np.abs(values) > MAX_MAGNITUDE).any():
        return None
    return values


def _fast_jobs(path: Path, options: ReaderOptions) -> list[JobSpec] | None:
    """Every job of a clean file in one vectorised pass, or None to use the row path."""
    columns = _clean_columns(path, options.limit)
    if columns is None:
        return None
    submit = _submit_seconds(columns["timestamp"])
    duration = _floats(columns["duration"])
    gpus = _floats(columns["num_gpus"])
    gpu_time = _floats(columns["gpu_time"])
    queues = [value.strip() for value in columns["cluster"]]
    if submit is None or duration is None or gpus is None or gpu_time is None:
        return None
    cap = options.max_gpus
    if ((duration <= 0).any() or (gpus < 1).any() or (gpus != np.floor(gpus)).any()
            or (gpu_time < 0).any() or not all(queues)
            or (cap is not None and (gpus > cap).any())):
        return None
    return list(map(plain_spec, [f"philly-{index}" for index in range(1, len(queues) + 1)],
                    (submit - submit.min()).tolist(), gpus.astype(int).tolist(),
                    duration.tolist(), queues, queues))


register_reader(PhillyReader())


def without_vc_pins(trace: Trace) -> Trace:
    """``trace`` with the pool pin this reader puts on each job (pool = its VC = its queue)
    dropped; any other pool a job names is kept. Used when tenants are configured: the tenant
    layer bounds each VC by its quota and lets it borrow idle quota of its cohort (issue 6)."""
    jobs = tuple(replace(spec, pool=None) if spec.pool is not None and spec.pool == spec.queue
                 else spec for spec in trace.jobs)
    return replace(trace, jobs=jobs)
