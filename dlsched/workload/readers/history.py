"""dlsched's own history format (``dlsched-history``): the finished jobs of a ``dlsched serve``
database, as ``dlsched history export`` writes them (docs/what-if.md).

A CSV with a header. Required columns: ``job_id``, ``submit_time`` (seconds, UNIX time or any
origin: the trace is rebased to its first job), ``num_gpus`` (a gang of that many),
``duration`` (seconds the job ran: its work in reference seconds) and ``queue``. Optional:
``gpu_type`` (the type it asked for; empty: any), ``priority``, and what the service measured,
kept for comparison but not simulated: ``preemptions``, ``attempts``, ``first_start``,
``finish_time``, ``measured_jct``, ``status``, ``name``; then what each worker asked for beyond
a whole GPU (docs/sharing.md), simulated: ``gpu_share`` (in (0, 1]; empty: 1),
``gpu_memory_gb``, ``mig_profile`` (one worker on a MIG instance; its share is the profile's),
``cpus_per_gpu`` and ``memory_gb_per_gpu`` (empty: 0, not asked); then an elastic job's
bounds, simulated: ``min_gpus`` and ``max_gpus`` (empty: a rigid job of ``num_gpus``); then
its anti-affinity, simulated: ``max_per_node`` (empty: 0, no cap) and ``group``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from dlsched.mig.profiles import UnknownMigProfile, profile_share
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
SHARING = ("gpu_share", "gpu_memory_gb", "mig_profile", "cpus_per_gpu", "memory_gb_per_gpu")
ELASTIC = ("min_gpus", "max_gpus")
SPREAD = ("max_per_node", "group")
OPTIONAL = ("gpu_type", "priority", *MEASURED, *SHARING, *ELASTIC, *SPREAD)
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
                   priority=ctx.integer("priority", optional=True) or 0, **_sharing(ctx),
                   **_bounds(ctx),
                   max_per_node=ctx.integer("max_per_node", optional=True, minimum=0) or 0,
                   group=ctx.text("group", optional=True))


def _bounds(ctx: RowContext) -> dict[str, int | None]:
    """An elastic job's ``min_gpus`` / ``max_gpus`` (None where absent), around its size."""
    low = ctx.integer("min_gpus", optional=True, minimum=1)
    high = ctx.integer("max_gpus", optional=True, minimum=1)
    size = ctx.integer("num_gpus", minimum=1)
    assert size is not None
    if low is not None and low > size:
        raise ctx.fail("min_gpus", f"{low} is more than num_gpus {size}")
    if high is not None and high < size:
        raise ctx.fail("max_gpus", f"{high} is less than num_gpus {size}")
    return {"min_gpus": low, "max_gpus": high}


def _sharing(ctx: RowContext) -> dict[str, Any]:
    """The sharing fields of a row (the defaults where a column is absent or empty)."""
    asked: dict[str, Any] = {name: ctx.number(name, optional=True, minimum=0) or 0.0
                             for name in ("gpu_memory_gb", "cpus_per_gpu", "memory_gb_per_gpu")}
    share = ctx.number("gpu_share", optional=True, positive=True)
    if share is not None and share > 1:
        raise ctx.fail("gpu_share", f"must be in (0, 1], got {ctx.text('gpu_share')}")
    profile = ctx.text("mig_profile", optional=True)
    if profile is not None:
        try:
            share = profile_share(profile)
        except UnknownMigProfile as exc:
            raise ctx.fail("mig_profile", str(exc)) from None
        if ctx.integer("num_gpus", minimum=1) != 1:
            raise ctx.fail("mig_profile", "a MIG job runs one worker (num_gpus 1)")
    return {**asked, "gpu_share": 1.0 if share is None else share, "mig_profile": profile}


class HistoryReader:
    name = "dlsched-history"
    columns = frozenset(REQUIRED)

    def read(self, path: Path, options: ReaderOptions) -> Trace:
        rows = iter_csv_rows(path, REQUIRED, allow_extra=frozenset(OPTIONAL))
        collector = collect(path, options, rows, _job, id_field="job_id")
        return collector.trace(path.stem, self.name)


register_reader(HistoryReader())
