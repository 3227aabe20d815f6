"""dlsched's own history format (``dlsched-history``): the finished jobs of a ``dlsched serve``
database, as ``dlsched history export`` writes them (docs/what-if.md).

A CSV with a header. Required columns: ``job_id``, ``submit_time`` (seconds, UNIX time or any
origin: the trace is rebased to its first job), ``num_gpus`` (a gang of that many),
``duration`` (seconds the job ran: its work in reference seconds) and ``queue``. Optional:
``gpu_type`` (the type it asked for; empty: any), ``priority``, and what the service measured,
kept for comparison but not simulated: ``preemptions``, ``attempts``, ``first_start``,
``finish_time``, ``measured_jct``, ``status``, ``name``.
"""

from __future__ import annotations

from pathlib import Path

from dlsched.workload.job import JobSpec
from dlsched.workload.readers.base import (
    ReaderOptions,
    RowContext,
    collect,
    iter_csv_rows,
    register_reader,
)
from dlsched.workload.trace import Trace

REQUIRED = ("job_id", "submit_time", "num_gpus", "duration", "queue")
MEASURED = ("preemptions", "attempts", "first_start", "finish_time", "measured_jct", "status",
            "name")
OPTIONAL = ("gpu_type", "priority", *MEASURED)
COLUMNS = (*REQUIRED, *OPTIONAL)  # the order ``history export`` writes


def _job(ctx: RowContext) -> JobSpec:
    gpu_type = ctx.text("gpu_type", optional=True)
    for field in ("preemptions", "attempts"):
        ctx.integer(field, optional=True, minimum=0)
    for field in ("first_start", "finish_time", "measured_jct"):
        ctx.number(field, optional=True, minimum=0)
    return JobSpec(job_id=ctx.text("job_id"), submit_time=ctx.number("submit_time", minimum=0),
                   num_gpus=ctx.integer("num_gpus", minimum=1),
                   work=ctx.number("duration", positive=True), queue=ctx.text("queue"),
                   gpu_types=(gpu_type,) if gpu_type else (),
                   priority=ctx.integer("priority", optional=True) or 0)


class HistoryReader:
    name = "dlsched-history"
    columns = frozenset(REQUIRED)

    def read(self, path: Path, options: ReaderOptions) -> Trace:
        rows = iter_csv_rows(path, REQUIRED, allow_extra=frozenset(OPTIONAL))
        collector = collect(path, options, rows, _job, id_field="job_id")
        return collector.trace(path.stem, self.name)


register_reader(HistoryReader())
