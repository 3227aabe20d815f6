"""Gavel job traces (Narayanan et al., OSDI'20): tab-separated, one job a line, no header.

``gavel`` (``physical_cluster/*.trace``), 10 fields: job type, command, working directory,
num-steps argument, needs-data-dir flag, total steps, scale factor, priority weight, SLO, arrival
time. ``gavel-philly`` (``msr/seed=N/<vc>.trace``), Gavel's older 7-field form: job type,
command, num-steps argument, needs-data-dir flag, total steps, arrival time, scale factor.

A job type such as ``ResNet-18 (batch size 64)`` gives ``model`` ResNet-18 and ``batch_size`` 64
(``A3C`` and ``CycleGAN`` have no batch size). Work is ``total_steps`` in ``ITERATIONS``; the
scale factor is the GPU count; speed comes from Gavel's measured throughputs (``Trace.throughput``
``gavel``). The priority weight must be a whole number (it becomes ``priority``; Gavel's traces
use 1). A negative SLO means none; Gavel turns a positive one into a deadline of SLO x the job's
estimated duration, which needs a throughput model, so it is refused rather than dropped. Job ids
are ``<file stem>-<row index>``; for ``gavel-philly`` the file stem is the virtual cluster and
becomes the job's queue.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from pathlib import Path

from dlsched.slots import slot_builder
from dlsched.workload.job import JobSpec, WorkUnit
from dlsched.workload.readers.base import (
    MAX_MAGNITUDE,
    ReaderOptions,
    RowCollector,
    RowContext,
    checked_row,
    first_line,
    headerless_values,
    register_reader,
)
from dlsched.workload.trace import Trace

PHYSICAL_COLUMNS = ("job_type", "command", "working_directory", "num_steps_arg",
                    "needs_data_dir", "total_steps", "scale_factor", "priority_weight", "SLO",
                    "arrival_time")
PHILLY_COLUMNS = ("job_type", "command", "num_steps_arg", "needs_data_dir", "total_steps",
                  "arrival_time", "scale_factor")
_NUMERIC = ("total_steps", "scale_factor", "arrival_time")
_JOB_TYPE = re.compile(r"^(?P<model>.+?) \(batch size (?P<batch>\d+)\)$")


def parse_job_type(job_type: str) -> tuple[str, int | None]:
    """``"ResNet-18 (batch size 64)"`` -> ``("ResNet-18", 64)``; ``"A3C"`` -> ``("A3C", None)``."""
    match = _JOB_TYPE.match(job_type)
    if match is None:
        return job_type, None
    return match["model"], int(match["batch"])


@functools.cache
def _measured() -> frozenset[tuple[str, int | None]]:
    """Every job type of Gavel's bundled throughput table (any source), model case-folded:
    a job of another type could not run under the ``gavel`` model the trace asks for."""
    from dlsched.perf.gavel_table import SOURCES, job_types  # the table module imports us

    return frozenset((model.casefold(), batch) for source in SOURCES
                     for model, batch in job_types(source))


def _common(ctx: RowContext) -> dict[str, object]:
    for name in ("command", "num_steps_arg"):
        ctx.text(name)
    flag = ctx.integer("needs_data_dir")
    if flag not in (0, 1):
        raise ctx.fail("needs_data_dir", f"must be 0 or 1, got {flag}")
    model, batch_size = parse_job_type(ctx.text("job_type"))
    if (model.casefold(), batch_size) not in _measured():
        raise ctx.fail("job_type", f"Gavel measured no job type {ctx.text('job_type')!r}; its "
                                   "throughputs (the trace's model) know e.g. 'ResNet-18 (batch "
                                   "size 64)', 'Transformer (batch size 128)', 'A3C'")
    return {"submit_time": ctx.number("arrival_time", minimum=0),
            "num_gpus": ctx.integer("scale_factor", minimum=1),
            "work": float(ctx.integer("total_steps", minimum=1)),
            "work_unit": WorkUnit.ITERATIONS, "model": model, "batch_size": batch_size}


def _physical_job(ctx: RowContext) -> JobSpec:
    common = _common(ctx)
    ctx.text("working_directory")
    weight = ctx.number("priority_weight", positive=True)
    if weight != int(weight):
        raise ctx.fail("priority_weight", f"must be a whole number, got {weight:g}")
    if ctx.number("SLO") > 0:
        raise ctx.fail("SLO", "SLO multipliers are not supported (need a duration estimate)")
    return JobSpec(job_id=f"{Path(ctx.path).stem}-{ctx.line - 1}", priority=int(weight),
                   **common)


def _philly_job(ctx: RowContext) -> JobSpec:
    vc = Path(ctx.path).stem
    return JobSpec(job_id=f"{vc}-{ctx.line - 1}", queue=vc, **_common(ctx))


def _sniff(path: Path, columns: tuple[str, ...]) -> bool:
    values = first_line(path).split("\t")
    if len(values) != len(columns) or not values[0].strip():
        return False
    row = dict(zip(columns, values, strict=True))
    try:
        return all(float(row[name]) >= 0 for name in _NUMERIC)
    except ValueError:
        return False


# ``JobSpec(job_id, submit_time, num_gpus, work, work_unit, model, batch_size, priority)``
# without its ``__post_init__``: the fast rows below pass its test of the common spec
_PHYSICAL_SPEC = slot_builder(JobSpec, ("job_id", "submit_time", "num_gpus", "work",
                                        "work_unit", "model", "batch_size", "priority"))


class _CleanRows:
    """``_physical_job`` of a row whose every check passes, without a ``RowContext``: a row of
    a clean line (``headerless_values``) whose values all read as the checks want, else
    None and the row goes through ``_physical_job`` itself (same job or same error). Each job
    type string is parsed and looked up in the measured table once."""

    def __init__(self, stem: str, max_gpus: int | None) -> None:
        self.stem = stem
        self.max_gpus = MAX_MAGNITUDE if max_gpus is None else min(max_gpus, MAX_MAGNITUDE)
        self.types: dict[str, tuple[str, int | None] | None] = {}

    def job(self, values: list[str], line: int) -> JobSpec | None:
        if len(values) != len(PHYSICAL_COLUMNS):
            return None
        job_type, command, directory, steps_arg, data_dir, total, scale, weight, slo, \
            arrival = values
        kind = self.types.get(job_type, False)
        if kind is False:
            kind = self.types[job_type] = _measured_type(job_type)
        if kind is None or not (command.strip() and steps_arg.strip() and directory.strip()):
            return None
        try:  # float() skips the same surrounding whitespace as ``RowContext.text`` strips
            submit, gpus, steps = float(arrival), float(scale), float(total)
            flag, priority, multiplier = float(data_dir), float(weight), float(slo)
        except ValueError:
            return None
        # comparisons are False for NaN; each bound is the one ``RowContext.number`` checks
        if not (0 <= submit <= MAX_MAGNITUDE and 1 <= gpus <= self.max_gpus
                and 1 <= steps <= MAX_MAGNITUDE and 0 < priority <= MAX_MAGNITUDE
                and -MAX_MAGNITUDE <= multiplier <= 0 and (flag == 0 or flag == 1)):
            return None
        if gpus != int(gpus) or steps != int(steps) or priority != int(priority):
            return None
        model, batch_size = kind
        return _PHYSICAL_SPEC(f"{self.stem}-{line - 1}", submit, int(gpus), steps,
                              WorkUnit.ITERATIONS, model, batch_size, int(priority))


def _measured_type(job_type: str) -> tuple[str, int | None] | None:
    """``parse_job_type`` of a job type Gavel measured, else None (``_common`` refuses it)."""
    stripped = job_type.strip()
    if not stripped:
        return None
    model, batch_size = parse_job_type(stripped)
    return (model, batch_size) if (model.casefold(), batch_size) in _measured() else None


def _read(path: Path, options: ReaderOptions, columns: tuple[str, ...],
          build: Callable[[RowContext], JobSpec], fmt: str,
          clean: _CleanRows | None = None) -> Trace:
    """The jobs of each non-blank line, ``clean``'s where it vouches for the row."""
    collector = RowCollector.start(path, options, "scale_factor")
    where = str(path)
    for line, values, suspect in (headerless_values(path, columns)
                                  if options.limit is None or options.limit >= 1 else ()):
        spec = None if suspect or clean is None else clean.job(values, line)
        if spec is not None:
            more = collector.add_built(line, spec)
        else:
            more = collector.add(checked_row(where, line, columns, values, suspect), build)
        if not more:
            break
    return collector.trace(path.stem, fmt, throughput="gavel")


class GavelReader:
    name = "gavel"
    columns: frozenset[str] = frozenset()  # header-less: detect_format asks sniff()

    def sniff(self, path: Path) -> bool:
        return _sniff(path, PHYSICAL_COLUMNS)

    def read(self, path: Path, options: ReaderOptions) -> Trace:
        return _read(path, options, PHYSICAL_COLUMNS, _physical_job, self.name,
                     _CleanRows(path.stem, options.max_gpus))


class GavelPhillyReader:
    name = "gavel-philly"
    columns: frozenset[str] = frozenset()

    def sniff(self, path: Path) -> bool:
        return _sniff(path, PHILLY_COLUMNS)

    def read(self, path: Path, options: ReaderOptions) -> Trace:
        return _read(path, options, PHILLY_COLUMNS, _philly_job, self.name)


register_reader(GavelReader())
register_reader(GavelPhillyReader())
