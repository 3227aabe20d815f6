"""Write one run to a folder: ``summary.json``, ``run.json``, ``jobs.csv`` (or ``jobs.parquet``)
and ``timeline.csv``.

Same seed and config give byte-identical files, except the two timing fields of
``summary.json`` (``TIMING_KEYS``); ``deterministic_view`` drops them for comparison. Every file
names the policy, trace, cluster, seed and dlsched version that made it: the JSON files as keys,
the tables as trailing columns (so tables of several runs can be concatenated and still told
apart), and the Parquet file also in its schema metadata under ``dlsched.run``.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from dlsched.errors import DlschedError
from dlsched.report.fairness import FairnessInputs
from dlsched.report.goodput_series import GOODPUT_COLUMNS, goodput_rows
from dlsched.report.job_table import JobTable, job_table, optional_floats
from dlsched.report.metrics import TIMING_KEYS, Summary, summarize
from dlsched.sim.result import JobRecord, RunInfo, SimulationResult

FORMATS = ("csv", "parquet")
RUN_COLUMNS = ("policy", "trace", "cluster", "seed", "version")
JOB_COLUMNS = ("job_id", "queue", "num_gpus", "submit_time", "first_start", "finish_time", "jct",
               "queueing_delay", "status", "preemptions", "gpu_seconds", "pending_reason",
               "queue_position", "resizes", "deadline")
# Only in runs where a job may run at several sizes (elastic: ``min_gpus`` < ``max_gpus``),
# after JOB_COLUMNS: the range it may run at and the GPUs of its last run (empty: it never
# ran). ``num_gpus`` stays the size it asked for: its first size, or for an ``llm-jobs`` job,
# which asks for none, the smallest the planner fits (docs/traces.md). Runs without elastic
# jobs keep their columns.
SIZE_COLUMNS = ("min_gpus", "max_gpus", "last_gpus")
TIMELINE_COLUMNS = ("time", "used_gpus", "waiting", "running")
FLOAT_FORMAT = "%.6f"


class ParquetUnavailable(DlschedError, ImportError):
    """Parquet output was asked for but pyarrow is not installed."""


def write_run(result: SimulationResult, out_dir: Path, fmt: str = "csv",
              fairness: FairnessInputs | None = None,
              positions: Mapping[str, int] | None = None, timeline: bool = True) -> Summary:
    """Write the run's files into ``out_dir`` (created if missing); ``fmt`` picks the jobs table
    format, ``"csv"`` or ``"parquet"`` (which needs ``pip install dlsched[parquet]``);
    ``fairness`` fills the finish-time-fairness and per-type fields of ``summary.json``;
    ``positions``: each job still pending at the end, its 1-based place in its queue (the
    ``queue_position`` column; empty for the others). Returns the summary it wrote (computed
    once: callers need not summarize again). ``timeline`` False: the caller writes
    timeline.csv itself (``write_timeline``, e.g. on another process: ``report/aside.py``)."""
    check_format(fmt)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    identity = run_identity(result.info)
    table = job_table(result.jobs)  # the records as columns, read once
    _remove_unwritten(out_dir, fmt, bool(result.goodput_series))
    if fmt == "parquet":
        _write_parquet(out_dir / "jobs.parquet", job_rows(result, positions, table), identity,
                       result.info, job_column_names(table))
    else:
        _write_columns(out_dir / "jobs.csv", job_column_names(table),
                       job_columns(result, positions, table), identity)
    if timeline:
        write_timeline(result, out_dir, identity)
    if result.goodput_series:  # runs whose model is progress dependent (goodput_series.py)
        _write_csv(out_dir / "goodput.csv", GOODPUT_COLUMNS, goodput_rows(result), identity)
    summary = summarize(result, fairness, table)
    data = summary.to_dict()
    if result.mig is not None:  # only runs with MIG jobs: the others' keys stay as they were
        data["mig"] = result.mig
    if result.fragmentation is not None:  # only runs with fractional jobs, likewise
        data["fragmentation"] = result.fragmentation
    if result.solver:  # only policies that solve MILPs (Chronus): how many were cut short
        data["solver"] = dict(result.solver)
    write_json(out_dir / "summary.json", data)
    run = run_info_dict(result.info)
    if result.stalled_at is not None:  # jobs were left waiting that could never start
        run["stalled_at"] = result.stalled_at
    write_json(out_dir / "run.json", run)
    return summary


def _remove_unwritten(out_dir: Path, fmt: str, goodput: bool) -> None:
    """Remove the optional files of an earlier run in ``out_dir`` that this run does not
    write: a ``jobs.parquet`` left beside a new ``jobs.csv`` was what ``dlsched.simulate``'s
    ``.jobs`` read (``notebook.read_jobs`` prefers it), another policy's jobs, and a stale
    ``goodput.csv`` told of a run that had none. ``services.json`` and ``report.html`` are
    written after this by a run with services (``serving/cluster_run.py``), the only run
    whose own folder has them (a comparison's report is in the folder above its runs')."""
    unwritten = ["jobs.csv" if fmt == "parquet" else "jobs.parquet", "services.json",
                 "report.html"]
    if not goodput:
        unwritten.append("goodput.csv")
    for name in unwritten:
        (out_dir / name).unlink(missing_ok=True)


def write_timeline(result: SimulationResult, out_dir: Path,
                   identity: Mapping[str, Any] | None = None) -> None:
    """timeline.csv of a run (as ``write_run`` writes it)."""
    _write_columns(Path(out_dir) / "timeline.csv", TIMELINE_COLUMNS, timeline_columns(result),
                   run_identity(result.info) if identity is None else identity)


def check_format(fmt: str) -> None:
    """Fail before writing anything when the jobs table's format is unknown or needs a
    package that is not installed."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown output format {fmt!r}: expected one of {', '.join(FORMATS)}")
    if fmt == "parquet":
        _import_pyarrow()


def deterministic_view(summary: Mapping[str, Any]) -> dict[str, Any]:
    """``summary`` without the fields that measure the host (wall clock, cycle time)."""
    return {key: value for key, value in summary.items() if key not in TIMING_KEYS}


def run_identity(info: RunInfo) -> dict[str, Any]:
    return {"policy": info.policy, "trace": info.trace, "cluster": info.cluster,
            "seed": info.seed, "version": info.version}


def run_info_dict(info: RunInfo) -> dict[str, Any]:
    """Everything needed to name and repeat the run: identity, options, placement, overhead."""
    return {**run_identity(info),
            "policy_options": {str(k): str(v) for k, v in info.policy_options},
            "placement": info.placement,
            "restart_overhead": float(info.restart_overhead)}


def _opt_float(value: float | None) -> float | None:
    return None if value is None else float(value)


def job_row(job: JobRecord, position: int | None = None) -> tuple[Any, ...]:
    return (job.job_id, job.queue, int(job.num_gpus), float(job.submit_time),
            _opt_float(job.first_start), _opt_float(job.finish_time), _opt_float(job.jct),
            _opt_float(job.queueing_delay), job.status, int(job.preemptions),
            float(job.gpu_seconds), job.pending_reason, position, int(job.resizes),
            _opt_float(job.deadline))


def has_sizes(table: JobTable) -> bool:
    """Whether some job of the run may run at several sizes (``SIZE_COLUMNS``)."""
    if table.min_gpus is None or table.max_gpus is None:  # none made: none may (JobTable)
        return False
    return bool((table.min_gpus != table.max_gpus).any())


def job_column_names(table: JobTable) -> tuple[str, ...]:
    """jobs.csv's columns for this run: ``JOB_COLUMNS``, then ``SIZE_COLUMNS`` if it has
    elastic jobs."""
    return (*JOB_COLUMNS, *SIZE_COLUMNS) if has_sizes(table) else JOB_COLUMNS


def job_rows(result: SimulationResult, positions: Mapping[str, int] | None = None,
             table: JobTable | None = None) -> list[tuple[Any, ...]]:
    """One row per job in ``JOB_COLUMNS`` order, sorted by submit time then job id."""
    return list(zip(*job_columns(result, positions, table), strict=True))


def job_columns(result: SimulationResult, positions: Mapping[str, int] | None = None,
                table: JobTable | None = None) -> list[list[Any]]:
    """``job_rows`` as columns (``JOB_COLUMNS`` order), read from the records' columns
    (``job_table``; ``table``: already made from ``result.jobs``)."""
    t = table if table is not None else job_table(result.jobs)
    # submit time, then job id (unique): numpy orders strings by code point, as Python does
    order = np.lexsort((np.asarray(t.job_id, dtype=str), t.submit_time))

    def texts(values: list[str]) -> list[str]:
        return np.asarray(values, dtype=object)[order].tolist()

    ids = texts(t.job_id)
    where = positions or {}
    submit, first, finish = (t.submit_time[order], t.first_start[order],
                             t.finish_time[order])
    columns = [ids, texts(t.queue), t.num_gpus[order].tolist(), submit.tolist(),
               optional_floats(first), optional_floats(finish), optional_floats(finish - submit),
               optional_floats(first - submit), texts(t.status), t.preemptions[order].tolist(),
               t.gpu_seconds[order].tolist(), texts(t.pending_reason),
               [where.get(i) for i in ids] if where else [None] * len(ids),
               t.resizes[order].tolist(), optional_floats(t.deadline[order])]
    if has_sizes(t):
        assert t.min_gpus is not None and t.max_gpus is not None and t.last_gpus is not None
        last = t.last_gpus[order].tolist()
        columns += [t.min_gpus[order].tolist(), t.max_gpus[order].tolist(),
                    [gpus or None for gpus in last]]
    return columns


def timeline_rows(result: SimulationResult) -> list[tuple[Any, ...]]:
    return list(zip(*timeline_columns(result), strict=True))


def timeline_columns(result: SimulationResult) -> list[list[Any]]:
    """``TIMELINE_COLUMNS``, each as a list of Python numbers."""
    timeline = result.timeline
    return [list(map(float, timeline.times)), list(map(float, timeline.used_gpus)),
            list(map(int, timeline.waiting)), list(map(int, timeline.running))]


def write_json(path: Path, data: Mapping[str, Any]) -> None:
    """Sorted keys, two-space indent, a trailing newline; NaN is refused, not written."""
    text = json.dumps(data, sort_keys=True, indent=2, allow_nan=False)
    path.write_text(text + "\n", encoding="utf-8")


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return FLOAT_FORMAT % value
    return str(value)


def _write_csv(path: Path, columns: Sequence[str], rows: Sequence[tuple[Any, ...]],
               identity: Mapping[str, Any]) -> None:
    """Rows as ``_cell`` writes each value: the same bytes as a ``csv.writer`` row by row
    (minimal quoting, ``\\n`` line ends)."""
    values = [list(column) for column in zip(*rows, strict=True)] if rows else []
    _write_columns(path, columns, values, identity)


def _write_columns(path: Path, names: Sequence[str], columns: Sequence[Sequence[Any]],
                   identity: Mapping[str, Any]) -> None:
    """A table given column by column, as ``_write_csv`` writes it: one formatter per column
    instead of a call per cell, several times faster on 10^5 rows."""
    if columns and len(columns) != len(names):  # rows would not line up with the header
        raise ValueError(f"{path.name}: {len(columns)} columns for {len(names)} names")
    header = _csv_line([*names, *identity])
    rows = len(columns[0]) if columns else 0
    with path.open("w", encoding="utf-8", newline="") as handle:
        handle.write(header + "\n")
        if not rows:
            return
        # One ``%`` format per row: a column of floats is ``%.6f``, of ints ``%d``, of
        # None empty, the rest strings made by ``_format_column``.
        specs, values = [], []
        for column in columns:
            spec, data = _row_spec(column)
            specs.append(spec)
            if data is not None:
                values.append(data)
        if identity:  # the run's identity: constant trailing cells
            specs.append(_csv_line([_cell(value) for value in identity.values()]
                                   ).replace("%", "%%"))
        line = ",".join(specs)
        body = (map(line.__mod__, zip(*values, strict=True)) if values
                else [line % ()] * rows)
        handle.write("\n".join(body) + "\n")


def _row_spec(values: Sequence[Any]) -> tuple[str, Sequence[Any] | None]:
    """A column's part of the row format and the values it takes (None: a constant)."""
    kinds = set(map(type, values))
    if kinds == {float}:
        whole = _whole_floats(values)
        return (FLOAT_FORMAT, values) if whole is None else (_WHOLE_FORMAT, whole)
    if kinds == {int}:
        return "%d", values
    if kinds == {type(None)}:
        return "", None
    return "%s", _format_column(values)


_WHOLE_FORMAT = "%d.000000"  # ``FLOAT_FORMAT`` of a whole number, from the int (~2x faster)
_EXACT = 2.0 ** 53  # below it every whole float is exactly its int


def _whole_floats(values: Sequence[float]) -> list[int] | None:
    """A float column whose values are all whole numbers (trace times and GPU counts mostly
    are), as ints, which ``_WHOLE_FORMAT`` writes as ``FLOAT_FORMAT`` writes the floats;
    None otherwise (a fraction, NaN or infinity, -0.0, or beyond 2**53)."""
    array = np.asarray(values, dtype=float)
    with np.errstate(invalid="ignore"):
        whole = bool((np.abs(array) < _EXACT).all() and (array == np.trunc(array)).all())
    if not whole or np.signbit(array[array == 0.0]).any():
        return None
    return array.astype(np.int64).tolist()


_SPECIAL = frozenset(',"\r\n')


def _format_column(values: Sequence[Any]) -> list[str]:
    """Each value as ``_cell`` formats it, quoted as ``csv.writer`` would; one formatter per
    column when its values are all floats, ints or plain strings (the common case)."""
    kinds = set(map(type, values))
    if kinds <= {float, type(None)}:
        if type(None) not in kinds:
            return list(map(FLOAT_FORMAT.__mod__, values))
        fmt = FLOAT_FORMAT
        return [fmt % v if v is not None else "" for v in values]
    if kinds <= {int, type(None)}:
        if type(None) not in kinds:
            return list(map(str, values))
        return [str(v) if v is not None else "" for v in values]
    if kinds <= {str}:
        joined = "".join(values)  # one scan for the characters that need quotes
        if any(char in joined for char in _SPECIAL):
            return [_quoted(v) for v in values]
        return list(values)
    return [_quoted(_cell(v)) for v in values]


def _quoted(text: str) -> str:
    if _SPECIAL.isdisjoint(text):
        return text
    return _csv_line([text])


def _csv_line(cells: Sequence[str]) -> str:
    """One row as ``csv.writer`` writes it (without the line end)."""
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\n").writerow(cells)
    return buffer.getvalue()[:-1]


def _import_pyarrow() -> Any:
    try:
        import pyarrow
        import pyarrow.parquet  # noqa: F401  (loads the submodule onto ``pyarrow``)
    except ImportError as exc:
        raise ParquetUnavailable(
            "Parquet output needs pyarrow: pip install 'dlsched[parquet]' (or use fmt='csv')"
        ) from exc
    return pyarrow


def _parquet_schema(pa: Any, job_names: Sequence[str] = JOB_COLUMNS) -> Any:
    text, integer, number = pa.string(), pa.int64(), pa.float64()
    types = {"job_id": text, "queue": text, "num_gpus": integer, "status": text,
             "preemptions": integer, "pending_reason": text, "seed": integer,
             "queue_position": integer, "resizes": integer,
             **{name: integer for name in SIZE_COLUMNS}}
    names = (*job_names, *RUN_COLUMNS)
    return pa.schema([pa.field(name, types.get(name, text if name in RUN_COLUMNS else number))
                      for name in names])


def _write_parquet(path: Path, rows: Sequence[tuple[Any, ...]], identity: Mapping[str, Any],
                   info: RunInfo, job_names: Sequence[str] = JOB_COLUMNS) -> None:
    pa = _import_pyarrow()
    schema = _parquet_schema(pa, job_names)
    full_rows = [(*row, *identity.values()) for row in rows]
    columns = {name: [row[i] for row in full_rows] for i, name in enumerate(schema.names)}
    metadata = {"dlsched.run": json.dumps(run_info_dict(info), sort_keys=True)}
    table = pa.table(columns, schema=schema.with_metadata(metadata))
    pa.parquet.write_table(table, path)
