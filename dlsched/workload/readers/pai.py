"""Alibaba PAI GPU cluster trace 2020 (``cluster-trace-gpu-v2020``; Weng et al., "MLaaS in the
Wild", NSDI'22), format ``alibaba-pai-2020``: a user's own download of its task table (too
large to ship with dlsched).

``pai_task_table.csv`` as downloaded has no header; its columns are ``job_name,task_name,
inst_num,status,start_time,end_time,plan_cpu,plan_mem,plan_gpu,gpu_type`` (the file with that
header line added reads the same). A job of PAI has tasks (roles: ``worker``, ``ps``,
``evaluator``, ``tensorflow``, ...), a task ``inst_num`` instances, and PAI launches a job's
tasks together. A job with GPU tasks becomes one gang job of all their instances:

- id ``job_name``; ``work`` = the last end minus the first launch of its GPU tasks (the gang
  holds its GPUs from the first launch to the last end) in reference seconds;
- ``submit_time``: the job's submission (``start_time`` of ``pai_job_table.csv`` when that
  file, as downloaded, sits beside the task table; its ``user`` becomes the job's queue), else
  its first launch; a job whose task launched before its recorded submission arrives then;
- ``plan_gpu`` is a percentage of one GPU per instance: up to 100, each instance is a worker
  asking for that share of a GPU (``gpu_share``); above it, each instance asks for
  ``plan_gpu / 100`` whole GPUs (rounded up); ``num_gpus`` = all instances x that. Tasks of
  one job that ask for different amounts per instance (a 50% evaluator beside 100% workers)
  give every instance the largest (counted in the trace's warnings): dlsched's workers are
  all alike;
- ``cpus_per_gpu`` and ``memory_gb_per_gpu``: the mean over the job's GPU instances of
  ``plan_cpu / 100`` (a percentage of a core) and ``plan_mem`` (GB), per GPU of an instance;
- ``gpu_type`` is the type PAI placed the task on (``MISC``: older generations), not one the
  user asked for: it is checked, not kept as a pin.

Dropped on purpose and counted in the trace's warnings: CPU-only tasks (``plan_gpu`` 0 or
empty: parameter servers, evaluators; a job of only those is no job here), tasks without a
start or an end (``Waiting``, or still ``Running`` when the trace was cut), and tasks that
ended when they started; a job keeps its GPU tasks that ran. ``--limit N`` reads the first
``N`` jobs the file names: reading stops at the first GPU task of the next job, so a task of
those ``N`` listed after it is not read (a table sorted by ``job_name`` loses none).
"""

from __future__ import annotations

import csv
import math
from collections.abc import Iterable
from dataclasses import dataclass, replace
from pathlib import Path

from dlsched.textinput import TextLines
from dlsched.wording import count_of
from dlsched.workload.job import JobSpec
from dlsched.workload.readers.base import (
    DropRow,
    ReaderOptions,
    RowCollector,
    RowContext,
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
MIXED = "whose GPU tasks ask for different GPUs per instance: each instance is given the largest"


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
        collector = RowCollector.start(path, options, "inst_num")
        collector.resource_fields = ("plan_cpu", "plan_mem", "plan_gpu")
        mixed = 0
        for gang in _gangs(rows, collector):
            mixed += gang.mixed
            collector.accept(gang.first, lambda _, gang=gang: gang.spec(jobs, options.max_gpus))
        trace = collector.trace(path.stem, self.name)
        notes = [f"{path}: {mixed} job{'s' if mixed != 1 else ''} {MIXED}"] if mixed else []
        if jobs:
            notes.append(f"{path}: submission times and users from {path.parent / JOB_TABLE}")
        return replace(trace, warnings=(*trace.warnings, *notes)) if notes else trace


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


@dataclass(frozen=True, slots=True)
class _Task:
    """One GPU task that ran: its instances, what each asks for, and when it ran."""

    name: str
    instances: int
    per_instance: int  # whole GPUs per instance (1 for a share)
    share: float
    cpu_percent: float  # per instance
    memory_gb: float  # per instance
    started: float
    ended: float


@dataclass
class _Gang:
    """A PAI job's GPU tasks, which PAI launches together: one dlsched job."""

    name: str
    first: RowContext  # its first task's row: where a problem with the whole job is told
    tasks: list[_Task]

    @property
    def mixed(self) -> bool:
        return len({(t.per_instance, t.share) for t in self.tasks}) > 1

    def spec(self, jobs: dict[str, tuple[float, str]], max_gpus: int | None) -> JobSpec:
        """The gang as one job; a gang of several tasks larger than the cluster is told on
        its first task's line, naming them (one task's is told as any job's)."""
        tasks = self.tasks
        per_instance = max(t.per_instance for t in tasks)
        instances = sum(t.instances for t in tasks)
        started, ended = min(t.started for t in tasks), max(t.ended for t in tasks)
        cpu = sum(t.instances * t.cpu_percent for t in tasks) / instances
        memory = sum(t.instances * t.memory_gb for t in tasks) / instances
        if max_gpus is not None and instances * per_instance > max_gpus and len(tasks) > 1:
            raise self.first.fail("inst_num", f"job {self.name}: its {len(tasks)} GPU tasks ("
                                  f"{', '.join(t.name for t in tasks)}) ask for "
                                  f"{count_of(instances * per_instance, 'GPU')}; the cluster "
                                  f"has {max_gpus}")
        submitted, user = jobs.get(self.name, (started, None))  # type: ignore[arg-type]
        return JobSpec(job_id=self.name, submit_time=min(submitted, started),
                       num_gpus=instances * per_instance, work=ended - started,
                       gpu_share=max(t.share for t in tasks), queue=user or "default",
                       cpus_per_gpu=cpu / 100 / per_instance,
                       memory_gb_per_gpu=memory / per_instance)


def _gangs(rows: Iterable[RowContext], collector: RowCollector) -> list[_Gang]:
    """The jobs of the task rows, in the order the file names them (up to the limit)."""
    gangs: dict[str, _Gang] = {}
    seen: dict[tuple[str, str], int] = {}  # (job, task) -> its line
    limit = collector.options.limit
    if limit is not None and limit < 1:
        return []
    for ctx in rows:
        name = (ctx.row.get("job_name") or "").strip()
        if limit is not None and len(gangs) >= limit and name not in gangs:
            if ctx.problem is None and _asks_for_gpus(ctx):
                break  # the next job's GPU task: the first ``limit`` jobs are read
            continue
        collector.count_row(ctx)
        collector.accept(ctx, lambda c: _add_task(c, gangs, seen))
    return list(gangs.values())


def _asks_for_gpus(ctx: RowContext) -> bool:
    try:
        return bool(float(ctx.row.get("plan_gpu") or 0))
    except ValueError:
        return True  # a bad row of a new job: past the limit all the same


def _add_task(ctx: RowContext, gangs: dict[str, _Gang],
              seen: dict[tuple[str, str], int]) -> None:
    """Parse one row; a GPU task that ran joins its job's gang (``DropRow`` otherwise)."""
    job_name, task_name = ctx.text("job_name"), ctx.text("task_name")
    key = (job_name, task_name)
    if key in seen:
        raise ctx.fail("task_name", f"task {job_name}/{task_name} is used twice: on line "
                                    f"{seen[key]} and on line {ctx.line}")
    seen[key] = ctx.line
    task = _task(ctx, task_name)
    gang = gangs.get(job_name)
    if gang is None:
        gangs[job_name] = _Gang(job_name, ctx, [task])
    else:
        gang.tasks.append(task)


def _task(ctx: RowContext, task_name: str) -> _Task:
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
    return _Task(task_name, instances, per_instance, share, cpu, memory, started, ended)


register_reader(PaiReader())
