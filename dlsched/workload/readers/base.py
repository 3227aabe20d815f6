"""Shared machinery for trace readers: row iteration with line numbers and typed field parsing.

A reader turns one file format into a ``Trace``. Every bad value raises ``InputError`` naming the
file, the 1-based line and the field; with ``skip_invalid`` the row is dropped and counted.
Rows out of a reader's scope (``DropRow``) are left out and counted by reason, not as errors.
"""

from __future__ import annotations

import csv
import dataclasses
import importlib
import math
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from dlsched.errors import InputError, InputLocation
from dlsched.gcpause import gc_paused
from dlsched.textinput import MAX_FIELD_CHARS, TextLines, field_at, value_problem
from dlsched.textinput import first_line as text_first_line
from dlsched.wording import count_of, did_you_mean
from dlsched.workload.job import JobSpec
from dlsched.workload.trace import Trace

if TYPE_CHECKING:
    from dlsched.cluster.cluster import Cluster

# The one reader-specific option: the sacct field that is a job's queue (slurm.QUEUE_FIELDS).
SACCT, SACCT_DEFAULT_QUEUE = "slurm-sacct", "partition"


@dataclass(frozen=True)
class ReaderOptions:
    """``max_gpus``: the cluster's GPU count; a job asking for more is impossible.
    ``max_cpus``, ``max_memory_gb``, ``max_gpu_memory_gb``: the most CPUs and host memory
    (GiB) any node has and the most memory any GPU has; a worker asking for more is impossible
    (None: not checked). ``sacct_queue``: which ``sacct`` field is a Slurm job's queue
    (``slurm.QUEUE_FIELDS``; other formats refuse any but the default). ``sacct_resources``:
    a Slurm job asks the CPUs and memory ``AllocTRES`` gives it (other formats refuse it)."""

    skip_invalid: bool = False
    max_gpus: int | None = None
    limit: int | None = None
    max_cpus: float | None = None
    max_memory_gb: float | None = None
    max_gpu_memory_gb: float | None = None
    rebase: bool = True  # move the first submission to t=0 (RunConfig.keep_trace_clock)
    sacct_queue: str = SACCT_DEFAULT_QUEUE  # RunConfig.sacct_queue
    sacct_resources: bool = False  # RunConfig.sacct_resources

    @classmethod
    def for_cluster(cls, cluster: Cluster, **kwargs: Any) -> ReaderOptions:
        """Options that refuse what no part of ``cluster`` could ever host (a resource the
        cluster does not model, 0 everywhere, is not checked)."""
        def most(values: Any) -> float | None:
            top = float(values.max()) if len(values) else 0.0
            return top if top > 0 else None
        return cls(max_gpus=cluster.num_gpus, max_cpus=most(cluster.node_cpus),
                   max_memory_gb=most(cluster.node_memory_gb),
                   max_gpu_memory_gb=most(cluster.gpu_memory_gb), **kwargs)


class TraceReader(Protocol):
    name: str
    columns: frozenset[str]

    def read(self, path: Path, options: ReaderOptions) -> Trace: ...


READERS: dict[str, TraceReader] = {}

# Header-less formats are sniffed in this order: the Philly log (a JSON array) before the
# Kubernetes reader, which takes any JSON.
_READER_MODULES = ("philly", "philly_raw", "itp", "alibaba", "alibaba_dlrm", "pai", "pollux",
                   "gavel", "chronus", "helios", "acme", "history", "slurm", "kueue", "mig",
                   "llm_jobs")


def register_reader(reader: TraceReader) -> TraceReader:
    if reader.name in READERS:
        raise ValueError(f"reader {reader.name} registered twice")
    READERS[reader.name] = reader
    return reader


def _load_all() -> None:
    for module in _READER_MODULES:
        try:
            importlib.import_module(f"dlsched.workload.readers.{module}")
        except ModuleNotFoundError as exc:  # a reader module not written yet
            if exc.name != f"dlsched.workload.readers.{module}":
                raise


def _header(path: Path) -> list[str]:
    first = text_first_line(path)
    delimiter = "\t" if "\t" in first else ","
    return [c.strip() for c in first.split(delimiter)]


def detect_format(path: Path) -> str:
    """The reader whose required columns match this file's header (most specific wins)."""
    _load_all()
    try:
        header = set(_header(path))
    except InputError:  # not a header line (e.g. a one-line JSON log): a sniffer may know it
        if (found := _sniffed(path)) is not None:
            return found
        raise
    matches = [r for r in READERS.values() if r.columns and r.columns <= header]
    if not matches and _is_request_trace(path, header):
        raise InputError(InputLocation(str(path), 1), REQUEST_TRACE)
    if not matches:
        if (found := _sniffed(path)) is not None:  # header-less formats decide for themselves
            return found
        if not header - {""}:  # nothing on the first line
            raise InputError(InputLocation(str(path), 1), "empty file: no header, no jobs")
        known = ", ".join(sorted(READERS))
        raise InputError(InputLocation(str(path), 1), f"unknown trace format (known: {known}); "
                         f"columns were {sorted(header)}{_closest_format(header)}")
    return max(matches, key=lambda r: len(r.columns)).name


def _closest_format(header: set[str]) -> str:
    """The format whose required columns the header lacks fewest of (at most two), named with
    those columns: a CSV of ``job_id,submit_time,num_gpus,duration`` lacks only ``queue`` of
    ``dlsched-history``, which the bare list of formats did not say."""
    near = [(len(r.columns - header), r.name, sorted(r.columns - header))
            for r in READERS.values() if r.columns and r.columns & header]
    if not near:
        return ""
    lacking, name, columns = min(near)
    return (f"; closest: {name}, which also needs {', '.join(columns)} (docs/traces.md)"
            if lacking <= 2 else "")


REQUEST_TRACE = ("an inference service's request trace (Azure LLM or Mooncake), not a job "
                 "trace: give it to a service in a services file (dlsched simulate --services "
                 "FILE) or to dlsched replicas (docs/inference.md)")


def _is_request_trace(path: Path, header: set[str]) -> bool:
    """The Azure LLM CSV header, or a Mooncake JSON line (``timestamp``, ``input_length``)."""
    if {"TIMESTAMP", "ContextTokens", "GeneratedTokens"} <= header:
        return True
    first = text_first_line(path).lstrip()
    return first.startswith("{") and '"input_length"' in first and '"timestamp"' in first


def _sniffed(path: Path) -> str | None:
    """The first header-less format (``sniff``) that recognises the file."""
    for r in READERS.values():
        sniff = getattr(r, "sniff", None)
        if sniff is not None and sniff(path):
            return r.name
    return None


def read_trace(path: str | Path, fmt: str | None = None,
               options: ReaderOptions | None = None) -> Trace:
    _load_all()
    path = Path(path)
    if not path.exists():
        raise InputError(InputLocation(str(path)), "no such file")
    fmt = fmt or detect_format(path)
    if fmt not in READERS:
        raise InputError(InputLocation(str(path)), f"unknown format {fmt!r} "
                         f"(known: {', '.join(sorted(READERS))}){did_you_mean(fmt, READERS)}")
    options = options or ReaderOptions()
    if options.sacct_queue != SACCT_DEFAULT_QUEUE and fmt != SACCT:
        raise InputError(InputLocation(str(path)), f"sacct_queue {options.sacct_queue!r} "
                         f"(--sacct-queue) names the queue field of a Slurm sacct export "
                         f"(format {SACCT}); this trace is {fmt}")
    if options.sacct_resources and fmt != SACCT:
        raise InputError(InputLocation(str(path)), f"sacct_resources (--sacct-resources) reads "
                         f"the CPUs and memory of a Slurm sacct export (format {SACCT}); this "
                         f"trace is {fmt}")
    with gc_paused():
        return READERS[fmt].read(path, options)


MAX_MAGNITUDE = 1e15  # any number a trace gives: 31 million years in seconds, 10^15 GPUs


@dataclass
class RowContext:
    """One CSV row plus where it is; ``get`` parses a field or raises a located error.
    ``problem`` marks a row that could not even be split into fields (blamed on
    ``problem_field`` when one field is at fault)."""

    path: str
    line: int
    row: dict[str, str]
    problem: str | None = None
    problem_field: str | None = None

    def where(self, field: str | None = None) -> InputLocation:
        return InputLocation(self.path, self.line, field)

    def fail(self, field: str | None, message: str) -> InputError:
        return InputError(self.where(field), message)

    def text(self, field: str, *, optional: bool = False) -> str | None:
        value = self.row.get(field)
        if value is not None:
            value = value.strip()
            if value:
                return value
        if optional:
            return None
        raise self.fail(field, "missing value")

    def number(self, field: str, *, optional: bool = False, minimum: float | None = None,
               positive: bool = False) -> float | None:
        raw = self.text(field, optional=optional)
        if raw is None:
            return None
        try:
            value = float(raw)
        except ValueError:
            raise self.fail(field, f"not a number: {raw!r}") from None
        if not math.isfinite(value):
            raise self.fail(field, f"not a finite number: {raw!r}")
        if abs(value) > MAX_MAGNITUDE:
            raise self.fail(field, f"out of range: {raw} (the limit is {MAX_MAGNITUDE:g})")
        if positive and value <= 0:
            raise self.fail(field, f"must be > 0, got {raw}")
        if minimum is not None and value < minimum:
            raise self.fail(field, f"must be >= {minimum:g}, got {raw}")
        return value

    def integer(self, field: str, *, optional: bool = False,
                minimum: int | None = None) -> int | None:
        value = self.number(field, optional=optional, minimum=minimum)
        if value is None:
            return None
        if value != int(value):
            raise self.fail(field, f"not an integer: {self.row.get(field)!r}")
        return int(value)


_EPOCH = "1970-01-01"


def date_time(ctx: RowContext, field: str) -> float:
    """A date-time field as seconds since 1970-01-01 UTC; a time without an offset is UTC.
    Times before 1970 are refused (no trace has them; they would be negative times)."""
    raw = ctx.text(field)
    try:
        when = datetime.fromisoformat(raw)
    except ValueError:
        raise ctx.fail(field, f"not a date-time: {raw!r}") from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    seconds = when.timestamp()
    if seconds < 0:
        raise ctx.fail(field, f"{raw!r} is before {_EPOCH}")
    return seconds


def _checked_row(path: str, line: int, names: Sequence[str], values: list[str],
                 screen: bool = True, headerless: bool = False) -> RowContext:
    """A row whose values are all readable text, or one that carries the first problem.
    ``screen`` False: its lines are known clean (``TextLines.suspect``), skip the values.
    ``headerless``: the field count is the format's, not a header's (a Gavel trace has none)."""
    for index, value in enumerate(values if screen else ()):
        problem = value_problem(value)
        if problem is not None:
            name = names[index] if index < len(names) else None
            return RowContext(path, line, {}, problem, name or None)
    if len(values) < len(names):  # blame the first column the row does not reach
        source = "the format" if headerless else "the header"
        return RowContext(path, line, {}, f"missing: the row has {len(values)} fields, {source} "
                          f"{len(names)}", names[len(values)] or None)
    if len(values) > len(names):
        return RowContext(path, line, {}, f"expected {len(names)} fields, found "
                          f"{len(values)}: values after the last column", names[-1] or None)
    return RowContext(path, line, dict(zip(names, values, strict=True)))


def _header_row(path: Path, raw_names: list[str], expected: Sequence[str],
                allow_extra: frozenset[str]) -> list[str]:
    """A missing expected column, an unknown, repeated or unreadable one fails on line 1."""
    def fail(field: str | None, message: str) -> InputError:
        return InputError(InputLocation(str(path), 1, field), message)

    for index, name in enumerate(raw_names, start=1):
        problem = value_problem(name)
        if problem is not None:
            raise fail(None, f"the name of column {index}: {problem}")
    names = [c.strip() for c in raw_names]
    missing = [c for c in expected if c not in names]
    if missing:
        raise fail(missing[0], "missing column")
    unknown = [c for c in names if c not in expected and c not in allow_extra and c]
    if unknown:
        raise fail(unknown[0], "unknown column")
    repeated = [c for i, c in enumerate(names) if c and c in names[:i]]
    if repeated:
        raise fail(repeated[0], "column appears twice in the header")
    return names


def _csv_problem(lines: TextLines, start: int, error: csv.Error) -> InputError:
    """A located message for what the csv module refused (the field is guessed from the
    record's last line read: the quote that opened it, or the over-long value)."""
    path, message = str(lines.path), str(error)
    if "field larger than field limit" in message:
        parts = lines.last.split(lines.delimiter or ",")
        long = next((i for i, p in enumerate(parts) if len(p) > MAX_FIELD_CHARS), None)
        field = lines.names[long] if long is not None and long < len(lines.names) else None
        return InputError(InputLocation(path, lines.line, field),
                          f"value longer than the limit of {MAX_FIELD_CHARS:,} characters")
    text = lines.remembered if lines.remember == start else lines.last
    quote = text.find('"')
    field = field_at(text[:quote], lines.delimiter, lines.names) if quote >= 0 else None
    if "unexpected end of data" in message:
        return InputError(InputLocation(path, start, field),
                          "unterminated quote: the file ends inside a quoted value that "
                          f"starts on line {start}")
    return InputError(InputLocation(path, lines.line, field), f"bad CSV quoting: {message}")


def iter_csv_rows(path: Path, expected: Sequence[str], *, delimiter: str = ",",
                  allow_extra: frozenset[str] = frozenset(),
                  headerless: bool = False) -> Iterator[RowContext]:
    """Rows of a CSV file with a header, checking the header first (``headerless``: a file
    without one, whose columns are ``expected``; a row of another width fails on its line).

    A missing expected column or an unknown or repeated extra column fails on line 1. A row's
    ``line`` is the line it starts on (a quoted value may span lines: that is an error).
    """
    lines = TextLines(path, delimiter)
    reader = csv.reader(lines, delimiter=delimiter, strict=True)
    start = 1
    try:
        if headerless:
            names: Sequence[str] = tuple(expected)
        else:
            header = next(reader, None)
            if header is None:
                raise InputError(InputLocation(str(path), 1), "empty file (expected a header: "
                                 f"{delimiter.join(expected)})")
            names = _header_row(path, header, expected, allow_extra)
        lines.names = names
        start = lines.remember = reader.line_num + 1
        lines.suspect = False
        for values in reader:
            if any(v.strip(" \t") for v in values):  # not str.strip: \x1f is "space"
                screen = lines.suspect or reader.line_num != start  # several lines: a quote
                yield _checked_row(str(path), start, names, values, screen, headerless)
            start = lines.remember = reader.line_num + 1
            lines.suspect = False
    except csv.Error as exc:
        raise _csv_problem(lines, start, exc) from None


def headerless_values(path: Path, columns: Sequence[str], *, delimiter: str = "\t"
                      ) -> Iterator[tuple[int, list[str], bool]]:
    """Each non-blank line of a header-less file: its number, its values, and whether they
    need screening (``TextLines.suspect``: a clean line's values cannot hold a control
    character, a line end or more than ``MAX_FIELD_CHARS``)."""
    lines = TextLines(path, delimiter)
    lines.names = columns
    for text in lines:
        text = text.rstrip("\r\n")
        if text.strip(" \t"):
            yield lines.line, text.split(delimiter), lines.suspect
        lines.suspect = False


def checked_row(path: str, line: int, names: Sequence[str], values: list[str],
                screen: bool) -> RowContext:
    """A row of ``headerless_values`` as ``iter_headerless_rows`` yields it."""
    return _checked_row(path, line, names, values, screen, headerless=True)


def iter_headerless_rows(path: Path, columns: Sequence[str], *,
                         delimiter: str = "\t") -> Iterator[RowContext]:
    """Rows of a header-less file, named by ``columns``; a row with another field count fails."""
    where = str(path)
    for line, values, suspect in headerless_values(path, columns, delimiter=delimiter):
        yield _checked_row(where, line, columns, values, suspect, headerless=True)


def first_line(path: Path) -> str:
    """The first non-blank line of a text file ('' if none or unreadable as text)."""
    try:
        return text_first_line(path)
    except InputError:
        return ""


_SPEC_FIELDS = tuple(f.name for f in dataclasses.fields(JobSpec))
_SUBMIT = _SPEC_FIELDS.index("submit_time")
_DEADLINE = _SPEC_FIELDS.index("deadline")
_ENDS_AT = _SPEC_FIELDS.index("ends_at")


def rebase(jobs: Sequence[JobSpec]) -> list[JobSpec]:
    """Jobs shifted so the earliest submission is at 0; deadlines and fixed ends move with
    them."""
    if not jobs:
        return list(jobs)
    t0 = min(j.submit_time for j in jobs)
    if t0 == 0:
        return list(jobs)
    return [_shifted(j, t0) for j in jobs]


def _shifted(job: JobSpec, t0: float) -> JobSpec:
    # positional construction: about twice as fast as dataclasses.replace on 10^5 jobs
    values = [getattr(job, name) for name in _SPEC_FIELDS]
    values[_SUBMIT] -= t0
    for index in (_DEADLINE, _ENDS_AT):
        if values[index] is not None:
            values[index] -= t0
    return JobSpec(*values)


class DropRow(Exception):
    """Raised by a row builder to leave a valid row out on purpose (counted by reason)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass
class RowCollector:
    """Builds jobs row by row; turns errors into counted warnings when asked.

    ``gpu_field`` names the column a too-large GPU request is blamed on, ``id_field`` the one a
    repeated job id is (None where the reader makes ids from line numbers). Rows a builder
    leaves out on purpose (it raises ``DropRow``, e.g. for CPU-only pods) are not errors and not
    ``skipped``; the trace's warnings end with one summary line per reason. A file that gives
    no job at all is an error: a run on nothing would only look like one.
    """

    path: Path
    options: ReaderOptions
    jobs: list[JobSpec]
    warnings: list[str]
    gpu_field: str = "num_gpus"
    dropped: dict[str, int] = dataclasses.field(default_factory=dict)
    id_field: str | None = None
    lines: dict[str, int] = dataclasses.field(default_factory=dict)  # job id -> its line
    rows: int = 0
    first_row: int | None = None
    # The columns blamed for a worker's CPUs, host memory and GPU memory beyond any node's.
    resource_fields: tuple[str, str, str] = ("cpus_per_gpu", "memory_gb_per_gpu",
                                             "gpu_memory_gb")
    # Where and how a file of no records is told: a CSV's header, a JSON file's empty list.
    empty: tuple[int, str] = (2, "no job rows (the file has at most a header)")

    @classmethod
    def start(cls, path: Path, options: ReaderOptions, gpu_field: str = "num_gpus",
              id_field: str | None = None) -> RowCollector:
        return cls(path, options, [], [], gpu_field, id_field=id_field)

    def add(self, ctx: RowContext, build: Callable[[RowContext], JobSpec | None]) -> bool:
        """Build one job; False once ``limit`` jobs are collected."""
        self.count_row(ctx)
        return self.accept(ctx, build)

    def add_built(self, line: int, spec: JobSpec) -> bool:
        """``add`` of a job its reader built without a ``RowContext`` after making every
        check ``add`` would (GPUs within ``max_gpus``, nothing asked beyond GPUs, an id not
        used before): e.g. ``gavel``'s clean rows. False once ``limit`` jobs are collected."""
        self.rows += 1
        self.first_row = self.first_row or line
        self.jobs.append(spec)
        self.lines[spec.job_id] = line
        limit = self.options.limit
        return limit is None or len(self.jobs) < limit

    def count_row(self, ctx: RowContext) -> None:
        """Count a row read (for the message of a file that gives no job)."""
        self.rows += 1
        self.first_row = self.first_row or ctx.line

    def accept(self, ctx: RowContext, build: Callable[[RowContext], JobSpec | None]) -> bool:
        """``add`` without counting a row: a reader that builds a job from several rows
        (``pai``) counts each row, then accepts each job on its first row."""
        try:
            if ctx.problem is not None:
                raise ctx.fail(ctx.problem_field, ctx.problem)
            spec = _built(ctx, build)
            if spec is not None:
                self._check(ctx, spec)
                self.jobs.append(spec)
                self.lines[spec.job_id] = ctx.line
        except DropRow as drop:
            self.drop(drop.reason)
        except InputError as exc:
            if not self.options.skip_invalid:
                raise
            self.warnings.append(str(exc))
        limit = self.options.limit
        return limit is None or len(self.jobs) < limit

    def drop(self, reason: str) -> None:
        self.dropped[reason] = self.dropped.get(reason, 0) + 1

    def _check(self, ctx: RowContext, spec: JobSpec) -> None:
        cap = self.options.max_gpus
        if cap is not None and spec.num_gpus > cap:
            raise ctx.fail(self.gpu_field,
                           f"asks for {count_of(spec.num_gpus, 'GPU')}; the cluster has {cap}")
        if spec.asks_beyond_gpus:
            self._check_resources(ctx, spec)
        first = self.lines.get(spec.job_id)
        if first is not None:
            raise ctx.fail(self.id_field, f"job id {spec.job_id!r} is used twice: on line "
                                          f"{first} and on line {ctx.line}")

    def _check_resources(self, ctx: RowContext, spec: JobSpec) -> None:
        options = self.options
        for field, asked, most, what in zip(
                self.resource_fields,
                (spec.cpus_per_gpu, spec.memory_gb_per_gpu, spec.gpu_memory_gb),
                (options.max_cpus, options.max_memory_gb, options.max_gpu_memory_gb),
                ("CPUs", "GiB of host memory", "GiB of GPU memory"), strict=True):
            if most is not None and asked > most + 1e-9:
                where = "any GPU" if field == self.resource_fields[2] else "any node"
                raise ctx.fail(field, f"asks for {asked:g} {what} per worker; the most "
                                      f"{where} of the cluster has is {most:g}")

    def trace(self, name: str, fmt: str, throughput: str = "linear", *,
              rebased: bool = True) -> Trace:
        """The collected jobs as a trace, rebased to the first submission unless told not to."""
        if not self.jobs:
            raise self._nothing()
        jobs = rebase(self.jobs) if rebased and self.options.rebase else self.jobs
        notes = [f"{self.path}: dropped {count} row{'s' if count != 1 else ''}: {reason}"
                 for reason, count in self.dropped.items()]
        return Trace(name=name, jobs=tuple(jobs), source=str(self.path), format=fmt,
                     throughput=throughput, skipped=len(self.warnings),
                     warnings=tuple(self.warnings + notes))

    def _nothing(self) -> InputError:
        """Why the file gave no job: no rows, every row invalid, or every row left out."""
        if self.options.limit is not None and self.options.limit < 1:
            return InputError(InputLocation(str(self.path)),
                              f"no jobs read: the limit is {self.options.limit}")
        if self.rows == 0:
            line, told = self.empty
            return InputError(InputLocation(str(self.path), line), f"{told}: nothing to simulate")
        where = InputLocation(str(self.path), self.first_row)
        if self.warnings:
            skipped = len(self.warnings)
            which = "the 1 invalid row was skipped (--skip-invalid):" if skipped == 1 else \
                f"all {skipped} invalid rows were skipped (--skip-invalid); the first:"
            return InputError(where, f"no valid job: {which} {self.warnings[0]}")
        reasons = "; ".join(f"{n} {reason}" for reason, n in self.dropped.items())
        return InputError(where, f"no job to simulate: every row was left out ({reasons})")


def _built(ctx: RowContext, build: Callable[[RowContext], JobSpec | None]) -> JobSpec | None:
    """``build(ctx)``; a job the spec itself refuses (e.g. a negative submit time after a
    reader's own checks) is a located error too, never a traceback."""
    try:
        return build(ctx)
    except ValueError as exc:
        raise ctx.fail(None, str(exc)) from None


JSON_EMPTY = (1, "no jobs (the file's JSON list is empty)")  # not "at most a header"


def collect(path: Path, options: ReaderOptions, rows: Iterable[RowContext],
            build: Callable[[RowContext], JobSpec | None], *,
            gpu_field: str = "num_gpus", id_field: str | None = None,
            resource_fields: tuple[str, str, str] | None = None,
            empty: tuple[int, str] | None = None) -> RowCollector:
    """Feed ``rows`` through ``build`` until ``options.limit`` jobs are collected (``empty``:
    the line and words for a file of no records, ``RowCollector.empty``)."""
    collector = RowCollector.start(path, options, gpu_field, id_field)
    if empty is not None:
        collector.empty = empty
    if resource_fields is not None:
        collector.resource_fields = resource_fields
    if options.limit is not None and options.limit < 1:
        return collector
    for ctx in rows:
        if not collector.add(ctx, build):
            break
    return collector


@dataclass(frozen=True)
class CsvRowReader:
    """A reader for a CSV with a header whose every row is one job (or a ``DropRow``):
    ``columns`` in the file's order, ``build`` makes the job, ``gpu_field`` is blamed for a
    request larger than the cluster. Register it with ``register_reader``."""

    name: str
    header: tuple[str, ...]
    build: Callable[[RowContext], JobSpec | None]
    gpu_field: str = "num_gpus"
    id_field: str | None = None

    @property
    def columns(self) -> frozenset[str]:
        return frozenset(self.header)

    def read(self, path: Path, options: ReaderOptions) -> Trace:
        rows = iter_csv_rows(path, self.header)
        collector = collect(path, options, rows, self.build, gpu_field=self.gpu_field,
                            id_field=self.id_field)
        return collector.trace(path.stem, self.name)
