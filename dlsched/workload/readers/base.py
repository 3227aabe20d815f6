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
from pathlib import Path
from typing import Protocol

from dlsched.errors import InputError, InputLocation
from dlsched.workload.job import JobSpec
from dlsched.workload.trace import Trace


@dataclass(frozen=True)
class ReaderOptions:
    """``max_gpus``: the cluster's GPU count; a job asking for more is impossible."""

    skip_invalid: bool = False
    max_gpus: int | None = None
    limit: int | None = None


class TraceReader(Protocol):
    name: str
    columns: frozenset[str]

    def read(self, path: Path, options: ReaderOptions) -> Trace: ...


READERS: dict[str, TraceReader] = {}

_READER_MODULES = ("philly", "itp", "alibaba", "pollux", "gavel", "chronus", "helios")


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
    with open(path, newline="") as f:
        first = f.readline()
    delimiter = "\t" if "\t" in first else ","
    return [c.strip() for c in first.rstrip("\r\n").split(delimiter)]


def detect_format(path: Path) -> str:
    """The reader whose required columns match this file's header (most specific wins)."""
    _load_all()
    header = set(_header(path))
    matches = [r for r in READERS.values() if r.columns and r.columns <= header]
    if not matches:
        for r in READERS.values():  # header-less formats decide for themselves
            sniff = getattr(r, "sniff", None)
            if sniff is not None and sniff(path):
                return r.name
        known = ", ".join(sorted(READERS))
        raise InputError(InputLocation(str(path), 1), f"unknown trace format (known: {known}); "
                         f"columns were {sorted(header)}")
    return max(matches, key=lambda r: len(r.columns)).name


def read_trace(path: str | Path, fmt: str | None = None,
               options: ReaderOptions | None = None) -> Trace:
    _load_all()
    path = Path(path)
    if not path.exists():
        raise InputError(InputLocation(str(path)), "no such file")
    fmt = fmt or detect_format(path)
    if fmt not in READERS:
        raise InputError(InputLocation(str(path)), f"unknown format {fmt!r} "
                         f"(known: {', '.join(sorted(READERS))})")
    return READERS[fmt].read(path, options or ReaderOptions())


@dataclass
class RowContext:
    """One CSV row plus where it is; ``get`` parses a field or raises a located error.
    ``problem`` marks a row that could not even be split into fields."""

    path: str
    line: int
    row: dict[str, str]
    problem: str | None = None

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


def iter_csv_rows(path: Path, expected: Sequence[str], *, delimiter: str = ",",
                  allow_extra: frozenset[str] = frozenset()) -> Iterator[RowContext]:
    """Rows of a CSV file with a header, checking the header first.

    A missing expected column or an unknown extra column fails on line 1.
    """
    with open(path, newline="") as f:
        reader = csv.reader(f, delimiter=delimiter)
        try:
            header = [c.strip() for c in next(reader)]
        except StopIteration:
            raise InputError(InputLocation(str(path), 1), "empty file") from None
        missing = [c for c in expected if c not in header]
        if missing:
            raise InputError(InputLocation(str(path), 1, missing[0]), "missing column")
        unknown = [c for c in header if c not in expected and c not in allow_extra and c]
        if unknown:
            raise InputError(InputLocation(str(path), 1, unknown[0]), "unknown column")
        for index, values in enumerate(reader, start=2):
            if not values or all(not v.strip() for v in values):
                continue
            if len(values) != len(header):
                yield RowContext(str(path), index, {},
                                 f"expected {len(header)} fields, found {len(values)}")
                continue
            yield RowContext(str(path), index, dict(zip(header, values, strict=True)))


def iter_headerless_rows(path: Path, columns: Sequence[str], *,
                         delimiter: str = "\t") -> Iterator[RowContext]:
    """Rows of a header-less file, named by ``columns``; a row with another field count fails."""
    with open(path, newline="") as f:
        for index, line in enumerate(f, start=1):
            text = line.rstrip("\r\n")
            if not text.strip():
                continue
            values = text.split(delimiter)
            if len(values) != len(columns):
                yield RowContext(str(path), index, {},
                                 f"expected {len(columns)} fields, found {len(values)}")
                continue
            yield RowContext(str(path), index, dict(zip(columns, values, strict=True)))


def first_line(path: Path) -> str:
    """The first non-blank line of a text file ('' if none or unreadable as text)."""
    try:
        with open(path, newline="") as f:
            for line in f:
                if line.strip():
                    return line.rstrip("\r\n")
    except (OSError, UnicodeDecodeError):
        return ""
    return ""


_SPEC_FIELDS = tuple(f.name for f in dataclasses.fields(JobSpec))
_SUBMIT = _SPEC_FIELDS.index("submit_time")
_DEADLINE = _SPEC_FIELDS.index("deadline")


def rebase(jobs: Sequence[JobSpec]) -> list[JobSpec]:
    """Jobs shifted so the earliest submission is at 0; deadlines move with them."""
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
    if values[_DEADLINE] is not None:
        values[_DEADLINE] -= t0
    return JobSpec(*values)


class DropRow(Exception):
    """Raised by a row builder to leave a valid row out on purpose (counted by reason)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass
class RowCollector:
    """Builds jobs row by row; turns errors into counted warnings when asked.

    ``gpu_field`` names the column a too-large GPU request is blamed on. Rows a builder leaves
    out on purpose (it raises ``DropRow``, e.g. for CPU-only pods) are not errors and not
    ``skipped``; the trace's warnings end with one summary line per reason.
    """

    path: Path
    options: ReaderOptions
    jobs: list[JobSpec]
    warnings: list[str]
    gpu_field: str = "num_gpus"
    dropped: dict[str, int] = dataclasses.field(default_factory=dict)

    @classmethod
    def start(cls, path: Path, options: ReaderOptions, gpu_field: str = "num_gpus") -> RowCollector:
        return cls(path, options, [], [], gpu_field)

    def add(self, ctx: RowContext, build: Callable[[RowContext], JobSpec | None]) -> bool:
        """Build one job; False once ``limit`` jobs are collected."""
        try:
            if ctx.problem is not None:
                raise ctx.fail(None, ctx.problem)
            spec = build(ctx)
            if spec is not None:
                self._check(ctx, spec)
                self.jobs.append(spec)
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
                           f"asks for {spec.num_gpus} GPUs; the cluster has {cap}")

    def trace(self, name: str, fmt: str, throughput: str = "linear", *,
              rebased: bool = True) -> Trace:
        """The collected jobs as a trace, rebased to the first submission unless told not to."""
        jobs = rebase(self.jobs) if rebased else self.jobs
        notes = [f"{self.path}: dropped {count} rows: {reason}"
                 for reason, count in self.dropped.items()]
        return Trace(name=name, jobs=tuple(jobs), source=str(self.path), format=fmt,
                     throughput=throughput, skipped=len(self.warnings),
                     warnings=tuple(self.warnings + notes))


def collect(path: Path, options: ReaderOptions, rows: Iterable[RowContext],
            build: Callable[[RowContext], JobSpec | None], *,
            gpu_field: str = "num_gpus") -> RowCollector:
    """Feed ``rows`` through ``build`` until ``options.limit`` jobs are collected."""
    collector = RowCollector.start(path, options, gpu_field)
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

    @property
    def columns(self) -> frozenset[str]:
        return frozenset(self.header)

    def read(self, path: Path, options: ReaderOptions) -> Trace:
        rows = iter_csv_rows(path, self.header)
        collector = collect(path, options, rows, self.build, gpu_field=self.gpu_field)
        return collector.trace(path.stem, self.name)
