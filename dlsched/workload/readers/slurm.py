"""Slurm accounting (format ``slurm-sacct``): the jobs a Slurm cluster ran, as ``sacct`` lists
them, for what-if replay (docs/what-if.md).

Write the file with::

    SLURM_TIME_FORMAT=%FT%T%z sacct --allocations --parsable2 --allusers \\
          --starttime 2026-11-01 --endtime 2026-11-08 \\
          --format=JobID,JobName,User,Account,Partition,Submit,Start,End,State,AllocTRES \\
          > week.sacct

``--parsable2`` separates fields with ``|`` and prints a header. Required fields: ``JobID``,
``Submit``, ``Start``, ``End`` (ISO times, ``2026-11-02T10:00:00``, read as UTC; with
``SLURM_TIME_FORMAT=%FT%T%z`` in sacct's environment they carry their offset, and a job across
a daylight-saving change keeps its true length),
``State`` and ``AllocTRES`` (``...,gres/gpu=4,...`` or ``gres/gpu:a100=4``: the GPUs, and their
type when named; the GRES spelling ``gres/gpu:a100:4`` reads the same). Optional:
``Partition`` (the job's queue; else ``default``), any other field (ignored). A job's work is
``End - Start`` seconds at its GPU count. With ``ReaderOptions.sacct_resources``
(``--sacct-resources``) ``AllocTRES``' ``cpu=`` and ``mem=`` become its CPUs and host memory
per GPU (``cpus_per_gpu``, ``memory_gb_per_gpu``): on a cluster whose nodes give CPUs and
memory (``sinfo``'s) a job holds what Slurm gave it. Off by default: a tenant file's queues
must then give ``cpu`` and ``memory`` quotas too (a resource a flavor does not list admits no
job that asks for it, as in Kueue).

Slurm sites set quotas and fair share per account (``sacctmgr`` associations), sometimes per
QOS: ``ReaderOptions.sacct_queue`` (``--sacct-queue account``) makes ``Account`` the queue
instead, or ``QOS`` or ``User`` (``QUEUE_FIELDS``); the file must then have that field (a
missing one fails on line 1, naming it), and an empty cell is ``default``.

A heterogeneous job (``1234+0``, ``1234+1``, ...) is one job ``1234`` of its components'
GPUs summed, queued in its GPU components' partition (or account, ...) of the most GPUs
(``het_job``; a warning says so). Left out, and counted by reason: job steps
(``123.batch``; ``--allocations`` omits them), jobs that never started (``Start`` is
``Unknown`` or ``None``) or are still running or pending
(or have no ``End`` yet, as ``COMPLETING`` or ``CONFIGURING`` ones), jobs without GPUs, and
jobs that ran 0 seconds. Jobs that ended otherwise (``FAILED``,
``TIMEOUT``, ``CANCELLED by ...`` after starting, ``NODE_FAIL``, ``PREEMPTED``) are kept: they
held their GPUs for that long.
"""

from __future__ import annotations

import functools
import re
from dataclasses import replace
from pathlib import Path

from dlsched.errors import InputError, InputLocation
from dlsched.workload.job import JobSpec
from dlsched.workload.readers.base import (
    SACCT,
    SACCT_DEFAULT_QUEUE,
    DropRow,
    ReaderOptions,
    RowCollector,
    RowContext,
    date_time,
    first_line,
    iter_csv_rows,
    register_reader,
)
from dlsched.workload.readers.recorded import Recorded
from dlsched.workload.readers.slurm_het import HetJobs, het_groups, het_queue
from dlsched.workload.trace import Trace

REQUIRED = ("JobID", "Submit", "Start", "End", "State", "AllocTRES")
NOT_STARTED = frozenset({"Unknown", "None", ""})
UNFINISHED = ("RUNNING", "PENDING", "REQUEUED", "RESIZING", "SUSPENDED")
_GPU = re.compile(r"^gres/gpu(?::([^=]+))?=(.*)$")
# The GRES spelling squeue, scontrol and ReqGRES use (``gres/gpu:a100:4``, ``gres/gpu:4``).
_GRES = re.compile(r"^gres/gpu(?::([^=:]+))?:(\d+)$")
# The sacct field that is a job's queue, by the name ``--sacct-queue`` gives it.
QUEUE_FIELDS = {SACCT_DEFAULT_QUEUE: "Partition", "account": "Account", "qos": "QOS",
                "user": "User"}


def gpus_of(ctx: RowContext, field: str) -> tuple[int, str | None]:
    """GPUs and their type from a TRES list (``cpu=8,gres/gpu:a100=4,gres/gpu=4,mem=64G``):
    the typed entry names the type; the plain one, if present, is the count. An entry in
    the GRES spelling (``gres/gpu:a100:4``) reads as ``gres/gpu:a100=4``."""
    raw = ctx.text(field, optional=True) or ""
    total, typed, kind = None, 0, None
    for item in (part.strip() for part in raw.split(",") if part.strip()):
        if (gres := _GRES.match(item)) is not None:
            item = f"gres/gpu{':' + gres.group(1) if gres.group(1) else ''}={gres.group(2)}"
        if "=" not in item:
            raise ctx.fail(field, f"not a TRES list (name=count,...): {raw!r}")
        match = _GPU.match(item)
        if match is None:
            continue
        if not match.group(2).isdigit():
            raise ctx.fail(field, f"not a GPU count: {item!r}")
        if match.group(1) is None:
            total = int(match.group(2))
        else:
            typed += int(match.group(2))
            kind = kind or match.group(1)
    return (typed if total is None else total), kind


# sacct's TRES memory: a number and a unit (K, M, G, T, P; none is M), e.g. ``mem=187.50G``
_MEMORY = re.compile(r"^(\d+(?:\.\d+)?)([KMGTP]?)$")
_GIB = {"K": 1 / 1024**2, "M": 1 / 1024, "": 1 / 1024, "G": 1.0, "T": 1024.0, "P": 1024.0**2}


def host_of(ctx: RowContext, field: str) -> tuple[float, float]:
    """The CPUs and host memory (GiB) of a TRES list (``cpu=8,...,mem=64G``); 0 for what it
    does not name. Units as sacct writes them: memory in M unless suffixed K, G, T or P."""
    cpus = memory = 0.0
    for item in (part.strip() for part in (ctx.text(field, optional=True) or "").split(",")):
        name, _, value = item.partition("=")
        if name == "cpu":
            if not value.isdigit():
                raise ctx.fail(field, f"not a CPU count: {item!r}")
            cpus = float(value)
        elif name == "mem":
            match = _MEMORY.match(value)
            if match is None:
                raise ctx.fail(field, f"not an amount of memory (64G, 500M): {item!r}")
            memory = float(match.group(1)) * _GIB[match.group(2)]
    return cpus, memory


def _job(ctx: RowContext, recorded: Recorded | None = None,
         queue_field: str = "Partition", resources: bool = False) -> JobSpec:
    job_id = ctx.text("JobID")
    submit, start, end, gpus, kind = _span(ctx)
    if gpus == 0:
        raise DropRow("no GPUs")
    if end == start:
        raise DropRow("ran 0 seconds")
    if recorded is not None:
        recorded.add(job_id, submit, start, end)
    cpus, memory = host_of(ctx, "AllocTRES") if resources else (0.0, 0.0)
    return JobSpec(job_id=job_id, submit_time=submit, num_gpus=gpus, work=end - start,
                   queue=ctx.text(queue_field, optional=True) or "default",
                   gpu_types=(kind,) if kind else (), cpus_per_gpu=cpus / gpus,
                   memory_gb_per_gpu=memory / gpus)


def het_job(ctx: RowContext, parts: list[RowContext], recorded: Recorded,
            het: HetJobs) -> JobSpec:
    """A heterogeneous job (rows ``1234+0``, ``1234+1``, ...) as one gang job: dlsched has no
    gang of unlike workers, so its components' GPUs are summed, placed as one job and start
    together, as Slurm starts a heterogeneous job's components. It is left out if any
    component is (not finished, never started). Work: the first start to the last end.
    Its GPU type: the components' one type; GPU components of several types, or typed and
    untyped ones, give it their types or none, and ``het`` says so (``HetJobs.notes``).
    Its queue: the partition (or the field ``het.queue_field`` names) of its GPU components,
    or where they asked several, the one of most GPUs (``het_queue``). Its CPUs and memory
    per GPU: its GPU components' summed over their GPUs (a CPU-only launcher's ran on
    another node)."""
    spans = [_span(part) for part in parts]
    gpus = sum(span[3] for span in spans)
    if gpus == 0:
        raise DropRow("no GPUs")
    submit = min(span[0] for span in spans)
    start, end = min(span[1] for span in spans), max(span[2] for span in spans)
    if end == start:
        raise DropRow("ran 0 seconds")
    kinds = sorted({span[4] or "" for span in spans if span[3]})
    job_id = ctx.text("JobID").split("+", 1)[0]
    het.merged.append(job_id)
    if len(kinds) > 1:
        het.mixed.append(job_id)
    recorded.add(job_id, submit, start, end)
    field = QUEUE_FIELDS[het.queue_field]
    queue = het_queue([(part.text(field, optional=True) or "default", span[3])
                       for part, span in zip(parts, spans, strict=True)], job_id, het)
    hosts = [host_of(part, "AllocTRES") for part, span in zip(parts, spans, strict=True)
             if span[3] and het.resources]
    return JobSpec(job_id=job_id, submit_time=submit, num_gpus=gpus, work=end - start,
                   queue=queue, gpu_types=tuple(kinds) if "" not in kinds else (),
                   cpus_per_gpu=sum(h[0] for h in hosts) / gpus,
                   memory_gb_per_gpu=sum(h[1] for h in hosts) / gpus)


def _span(ctx: RowContext) -> tuple[float, float, float, int, str | None]:
    """A row's submission, start and end (UNIX seconds), GPUs and their type; DropRow for a
    step or a job that did not run to an end."""
    if "." in ctx.text("JobID"):
        raise DropRow("job step (sacct --allocations leaves these out)")
    state = ctx.text("State")
    if state.split()[0] in UNFINISHED:
        raise DropRow(f"not finished ({state.split()[0]})")
    if (ctx.text("Start", optional=True) or "") in NOT_STARTED:
        raise DropRow("never started")
    if (ctx.text("End", optional=True) or "") in NOT_STARTED:  # COMPLETING, CONFIGURING, ...
        raise DropRow(f"not finished ({state.split()[0]}, no End)")
    submit, start, end = (date_time(ctx, f) for f in ("Submit", "Start", "End"))
    gpus, kind = gpus_of(ctx, "AllocTRES")
    if start < submit:
        raise ctx.fail("Start", "before Submit" + _zone_hint(ctx, "Submit", "Start"))
    if end < start:
        raise ctx.fail("End", "before Start" + _zone_hint(ctx, "Start", "End"))
    return submit, start, end, gpus, kind


# sacct writes local times without an offset (read as UTC): a job across a daylight-saving
# change runs an hour more or less, or ends "before" it started. With this, times carry it.
ZONED = "SLURM_TIME_FORMAT=%FT%T%z"


def _zone_hint(ctx: RowContext, first: str, then: str) -> str:
    """Why two local times may be out of order, when neither names its offset."""
    if any(_OFFSET.search(ctx.text(field) or "") for field in (first, then)):
        return ""
    return (f" (local times without an offset, across a daylight-saving change? run sacct "
            f"with {ZONED} to write them with theirs)")


_OFFSET = re.compile(r"(Z|[+-]\d\d:?\d\d)$")


def queue_field(path: Path, header: list[str], choice: str) -> str:
    """The field of ``header`` that ``choice`` (``--sacct-queue``) makes the queue; an
    InputError for an unknown choice, or a field other than ``Partition`` the file lacks
    (``Partition`` stays optional: without it every job is in ``default``)."""
    field = QUEUE_FIELDS.get(choice)
    if field is None:
        raise InputError(InputLocation(str(path)), f"sacct_queue {choice!r} (--sacct-queue) is "
                         f"not one of {', '.join(QUEUE_FIELDS)}")
    if choice != SACCT_DEFAULT_QUEUE and field not in header:
        raise InputError(InputLocation(str(path), 1, field), f"missing field: --sacct-queue "
                         f"{choice} makes each job's queue its {field}; add {field} to "
                         "sacct's --format (docs/what-if.md)")
    return field


class SacctReader:
    name = SACCT
    columns: frozenset[str] = frozenset()  # no comma header: ``sniff`` recognises it

    @staticmethod
    def sniff(path: Path) -> bool:
        header = first_line(path).split("|")
        return len(header) > 1 and "JobID" in header

    def read(self, path: Path, options: ReaderOptions) -> Trace:
        header = [c.strip() for c in first_line(path).split("|")]
        queue = queue_field(path, header, options.sacct_queue)
        extra = frozenset(c for c in header if c not in REQUIRED)
        rows = iter_csv_rows(path, REQUIRED, delimiter="|", allow_extra=extra)
        recorded = Recorded()
        het = HetJobs(queue_field=options.sacct_queue, resources=options.sacct_resources)
        collector = RowCollector.start(path, options, gpu_field="AllocTRES", id_field="JobID")
        single = functools.partial(_job, recorded=recorded, queue_field=queue,
                                   resources=options.sacct_resources)
        for first, parts in ([] if options.limit is not None and options.limit < 1
                             else het_groups(rows, collector)):
            build = single if parts is None else functools.partial(
                het_job, parts=parts, recorded=recorded, het=het)
            if not collector.accept(first, build):
                break
        trace = collector.trace(path.stem, self.name)
        trace = replace(trace, warnings=(*trace.warnings, *het.notes(path)))
        return recorded.noted(trace, path)


register_reader(SacctReader())
