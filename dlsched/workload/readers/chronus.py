"""Chronus traces (Gao et al., "Chronus: A Novel Deadline-aware Scheduler for Deep Learning
Training Jobs", SoCC'21): Philly jobs with deadlines, format ``chronus``.

Columns ``job_id,user,num_gpu,submit_time,iterations,model_name,duration,interval,
expect_time_list,expect_value_list,best_effort,job_type``. Times are in minutes (Chronus's
simulator counts 60 units an hour; the traces span 14 days = 20,160 minutes) and become seconds.

- ``user`` is the Philly virtual cluster (``vc_6214e9``); without ``vc_`` it is the queue, named
  as in the ``philly`` and ``gavel-philly`` traces.
- ``duration`` (minutes at ``num_gpu`` GPUs) is the work in reference seconds.
- ``job_type`` ``strict`` has one deadline; ``soft`` lists several (``expect_time_list`` with
  decreasing ``expect_value_list``, e.g. ``159-189-229-289`` / ``10-8-5-2``); ``best`` has none
  (its ``expect_time_list`` just repeats ``submit_time``). Deadlines are relative to submission;
  a job's ``deadline`` is submission + the first (full-value) expected time, the one Chronus
  reports misses against. Deadline jobs get ``priority`` 1, best-effort ones 0.
- ``iterations`` and ``interval`` are checked but not kept (work is the duration).

Jobs with ``num_gpu`` 0 (about 0.6%) are dropped and counted in the warnings, as Chronus's own
reader skips them.
"""

from __future__ import annotations

from dlsched.workload.job import JobSpec
from dlsched.workload.readers.base import CsvRowReader, DropRow, RowContext, register_reader

COLUMNS = ("job_id", "user", "num_gpu", "submit_time", "iterations", "model_name", "duration",
           "interval", "expect_time_list", "expect_value_list", "best_effort", "job_type")
MINUTE = 60.0
JOB_TYPES = ("strict", "soft", "best")
NO_GPU = "no GPU (num_gpu 0; Chronus skips these)"


def _job(ctx: RowContext) -> JobSpec:
    gpus = ctx.integer("num_gpu", minimum=0)
    if gpus == 0:
        raise DropRow(NO_GPU)
    submit = ctx.number("submit_time", minimum=0) * MINUTE
    ctx.integer("iterations", minimum=1)
    ctx.number("interval", minimum=0)
    job_type = _job_type(ctx)
    deadline = None if job_type == "best" else submit + _first_expected(ctx) * MINUTE
    queue = ctx.text("user").removeprefix("vc_")
    return JobSpec(job_id=ctx.text("job_id"), submit_time=submit, num_gpus=gpus,
                   work=ctx.number("duration", positive=True) * MINUTE, queue=queue,
                   model=ctx.text("model_name"), deadline=deadline,
                   priority=0 if job_type == "best" else 1)


def _job_type(ctx: RowContext) -> str:
    job_type = ctx.text("job_type")
    if job_type not in JOB_TYPES:
        raise ctx.fail("job_type", f"unknown job type {job_type!r} (known: {JOB_TYPES})")
    best_effort = ctx.integer("best_effort")
    if best_effort != (job_type == "best"):
        raise ctx.fail("best_effort", f"{best_effort} contradicts job_type {job_type!r}")
    return job_type


def _first_expected(ctx: RowContext) -> float:
    times = _int_list(ctx, "expect_time_list")
    values = _int_list(ctx, "expect_value_list")
    if len(times) != len(values):
        raise ctx.fail("expect_value_list", f"{len(values)} values for {len(times)} times")
    if any(t <= 0 for t in times) or times != sorted(times):
        raise ctx.fail("expect_time_list", f"expected times must be > 0 and increasing, "
                                           f"got {ctx.text('expect_time_list')!r}")
    return float(times[0])


def _int_list(ctx: RowContext, field: str) -> list[int]:
    raw = ctx.text(field)
    try:
        return [int(part) for part in raw.split("-")]
    except ValueError:
        raise ctx.fail(field, f"not a '-'-separated list of integers: {raw!r}") from None


register_reader(CsvRowReader("chronus", COLUMNS, _job, gpu_field="num_gpu",
                             id_field="job_id"))
