"""Alibaba PAI GPU cluster trace 2020 (``cluster-trace-gpu-v2020``; Weng et al., "MLaaS in the
Wild", NSDI'22), format ``alibaba-pai-2020``: a user's own download of its task table (too
large to ship with dlsched).

``pai_task_table.csv`` as downloaded has no header; its columns are ``job_name,task_name,
inst_num,status,start_time,end_time,plan_cpu,plan_mem,plan_gpu,gpu_type`` (the file with that
header line added reads the same). A job of PAI has tasks (roles: ``worker``, ``ps``,
``tensorflow``, ...), a task ``inst_num`` instances. A GPU task becomes one job:

- id ``job_name/task_name``; ``work`` = ``end_time - start_time`` (the task's run) in reference
  seconds;
- ``submit_time``: the job's submission (``start_time`` of ``pai_job_table.csv`` when that
  file, as downloaded, sits beside the task table; its ``user`` becomes the job's queue), else
  the task's launch; a task that launched before its job's recorded submission arrives at its
  launch;
- ``plan_gpu`` is a percentage of one GPU per instance: up to 100, each of the ``inst_num``
  workers asks for that share of a GPU (``gpu_share``); above it, each instance asks for
  ``plan_gpu / 100`` whole GPUs (rounded up), ``num_gpus`` = ``inst_num`` x that;
- ``cpus_per_gpu`` = ``plan_cpu / 100`` and ``memory_gb_per_gpu`` = ``plan_mem`` per GPU of an
  instance (``plan_cpu`` is a percentage of a core, ``plan_mem`` GB);
- ``gpu_type`` is the type PAI placed the task on (``MISC``: older generations), not one the
  user asked for: it is checked, not kept as a pin.

Dropped on purpose and counted in the trace's warnings: CPU-only tasks (``plan_gpu`` 0 or
empty: parameter servers, evaluators), tasks without a start or an end (``Waiting``, or still
``Running`` when the trace was cut), and tasks that ended when they started. A job's tasks are
separate jobs here (PAI launches them together; dlsched does not gang them).
"""

from __future__ import annotations

import csv
import math
from dataclasses import replace
from pathlib import Path

from dlsched.textinput import TextLines
from dlsched.workload.job import JobSpec
from dlsched.workload.readers.base import (
    DropRow,
    ReaderOptions,
    RowContext,
    collect,
    first_line,
    iter_csv_rows,
    register_reader,
)
from dlsched.workload.trace import Trace

COLUMNS = ("job_name", "task_name", "inst_num", "status", "start_time", "end_time", "plan_cpu",
           "plan_mem", "plan_gpu", "gpu_type")
JOB_TABLE = "pai_job_table.csv"  # job_name,inst_id,user,status,start_time,end_time
CPU_ONLY = "CPU-only task (plan_gpu 0 or empty)"
NOT_RUN = "no start or no end time (waiting, or running when the trace was cut)"
NO_RUN_TIME = "ended when it started (no run time)"


class PaiReader:
    name = "alibaba-pai-2020"
    columns = frozenset(("job_name", "task_name", "inst_num", "plan_gpu", "gpu_type"))

    def sniff(self, path: Path) -> bool:
        """The task table as downloaded: ten comma-separated fields, the third and the fifth
        to ninth numbers (or empty)."""
        values = first_line(path).rstrip("\r\n").split(",")
        if len(values) != len(COLUMNS) or not values[0].strip():
            return False
        try:
            for index in (2, 4, 5, 6, 7, 8):
                float(values[index] or "0")
        except ValueError:
            return False
        return True

    def read(self, path: Path, options: ReaderOptions) -> Trace:
        jobs = _job_table(path.parent / JOB_TABLE)
        headed = first_line(path).split(",")[0].strip() == COLUMNS[0]
        rows = iter_csv_rows(path, COLUMNS, headerless=not headed)
        collector = collect(path, options, rows, lambda ctx: _job(ctx, jobs),
                            gpu_field="inst_num",
                            resource_fields=("plan_cpu", "plan_mem", "plan_gpu"))
        trace = collector.trace(path.stem, self.name)
        if jobs:
            note = f"{path}: submission times and users from {path.parent / JOB_TABLE}"
            return replace(trace, warnings=(*trace.warnings, note))
        return trace


def _job_table(path: Path) -> dict[str, tuple[float, str]]:
    """job name -> (submission time, user) from PAI's job table, when the file is there;
    rows it cannot read are left out (their tasks arrive at their launch)."""
    if not path.is_file():
        return {}
    out: dict[str, tuple[float, str]] = {}
    try:
        for row in csv.reader(TextLines(path)):
            if len(row) < 5:
                continue
            try:
                submitted = float(row[4])
            except ValueError:
                continue  # a header line, or an empty time
            if math.isfinite(submitted):
                out[row[0].strip()] = (submitted, row[2].strip())
    except csv.Error:
        pass  # a damaged job table: the tasks' own launch times serve
    return out


def _job(ctx: RowContext, jobs: dict[str, tuple[float, str]]) -> JobSpec:
    job_name, task = ctx.text("job_name"), ctx.text("task_name")
    instances = ctx.integer("inst_num", minimum=1)
    ctx.text("status")
    ctx.text("gpu_type", optional=True)
    percent = ctx.number("plan_gpu", optional=True, minimum=0)
    cpu = ctx.number("plan_cpu", optional=True, minimum=0) or 0.0
    memory = ctx.number("plan_mem", optional=True, minimum=0) or 0.0
    started = ctx.number("start_time", optional=True, minimum=0)
    ended = ctx.number("end_time", optional=True, minimum=0)
    if not percent:
        raise DropRow(CPU_ONLY)
    if started is None or ended is None:
        raise DropRow(NOT_RUN)
    if ended < started:
        raise ctx.fail("end_time", f"{ended:g} is before start_time {started:g}")
    if ended == started:
        raise DropRow(NO_RUN_TIME)
    per_instance = max(1, math.ceil(percent / 100 - 1e-9))
    share = percent / 100 if percent <= 100 else 1.0
    submitted, user = jobs.get(job_name, (started, None))  # type: ignore[arg-type]
    return JobSpec(job_id=f"{job_name}/{task}", submit_time=min(submitted, started),
                   num_gpus=instances * per_instance, work=ended - started, gpu_share=share,
                   queue=user or "default", cpus_per_gpu=cpu / 100 / per_instance,
                   memory_gb_per_gpu=memory / per_instance)


register_reader(PaiReader())
