"""Alibaba GPU-disaggregated DLRM serving trace 2025 (``cluster-trace-gpu-v2025``; Yang et
al., "GPU-Disaggregated Serving for Deep Learning Recommendation Models at Scale", NSDI'25),
format ``alibaba-dlrm-2025``.

Columns ``instance_sn,role,app_name,cpu_request,cpu_limit,gpu_request,gpu_limit,rdma_request,
rdma_limit,memory_request,memory_limit,disk_request,disk_limit,max_instance_per_node,
creation_time,scheduled_time,deletion_time`` (times in seconds from the trace's start; cores,
GPUs, GiB). Every instance is a long-running, latency-sensitive inference instance. An instance
with GPUs (role ``HN``, a heterogeneous GPU node's instance) becomes one job:

- ``submit_time`` = ``creation_time``; ``work`` = ``deletion_time - scheduled_time`` in
  reference seconds. An empty ``creation_time`` and ``scheduled_time`` mean the instance
  existed before the trace began: it arrives at 0 and runs from 0. An empty ``deletion_time``
  means it outlived the trace: it runs to the trace's end (the latest time in the file), a
  lower bound, as ``alibaba-2023`` keeps its pods still running when that trace was cut.
- ``num_gpus`` = ``gpu_request`` (whole GPUs); ``cpus_per_gpu`` = ``cpu_request / gpus``,
  ``memory_gb_per_gpu`` = ``memory_request / gpus`` (GiB); priority 2 (latency-sensitive, as
  ``alibaba-2023``'s ``LS`` class); kind ``service``; the app group (``app_name``) as its
  model name, so reports group an app's instances.
- ``max_instance_per_node`` (an app's anti-affinity: how many of its instances one node may
  hold; 2 or 4 for most GPU instances, -1 for none) becomes ``max_per_node`` of the job's
  ``group`` (its app): the scheduler never puts more of the app's instances on one node.
- Not modelled (read and checked, not kept): the limits (equal to the requests in this trace),
  ``rdma_request`` (a share of a node's RDMA NIC) and ``disk_request``.

Two kinds of rows are dropped on purpose and counted in the trace's warnings: CPU-node
instances (role ``CN``, no GPU: 16,485 of the 23,871), which a GPU scheduler does not place, and
instances deleted when they were scheduled (no run time).
"""

from __future__ import annotations

import csv
import math
from pathlib import Path

from dlsched.textinput import TextLines
from dlsched.workload.job import JobKind, JobSpec
from dlsched.workload.readers.base import (
    DropRow,
    ReaderOptions,
    RowContext,
    collect,
    iter_csv_rows,
    register_reader,
)
from dlsched.workload.trace import Trace

TIME_COLUMNS = ("creation_time", "scheduled_time", "deletion_time")
COLUMNS = ("instance_sn", "role", "app_name", "cpu_request", "cpu_limit", "gpu_request",
           "gpu_limit", "rdma_request", "rdma_limit", "memory_request", "memory_limit",
           "disk_request", "disk_limit", "max_instance_per_node", *TIME_COLUMNS)
ROLES = ("CN", "HN")
CPU_NODE = "CPU-node instance (role CN, no GPU)"
NO_RUN_TIME = "deleted when it was scheduled (no run time)"
LATENCY_SENSITIVE = 2  # alibaba-2023's priority of the LS class


class AlibabaDlrmReader:
    name = "alibaba-dlrm-2025"
    columns = frozenset(("instance_sn", "role", "gpu_request", "rdma_request",
                         "max_instance_per_node"))

    def read(self, path: Path, options: ReaderOptions) -> Trace:
        end = trace_end(path)
        rows = iter_csv_rows(path, COLUMNS)
        collector = collect(path, options, rows, lambda ctx: _job(ctx, end),
                            gpu_field="gpu_request", id_field="instance_sn",
                            resource_fields=("cpu_request", "memory_request", "gpu_request"))
        return collector.trace(path.stem, self.name)


def trace_end(path: Path) -> float:
    """The latest time the file gives (an instance without ``deletion_time`` runs to it);
    fields that are not numbers are left to the row reader, which names them."""
    latest = 0.0
    try:
        for row in csv.DictReader(TextLines(path)):
            for field in TIME_COLUMNS:
                try:
                    value = float(row.get(field) or "nan")
                except (TypeError, ValueError):
                    continue
                if math.isfinite(value) and value > latest:
                    latest = value
    except csv.Error:  # the row reader reports it with its line
        pass
    return latest


def _job(ctx: RowContext, end: float) -> JobSpec:
    role = ctx.text("role")
    if role not in ROLES:
        raise ctx.fail("role", f"unknown role {role!r} (known: {', '.join(ROLES)})")
    for field in ("cpu_limit", "gpu_limit", "rdma_request", "rdma_limit", "memory_limit",
                  "disk_request", "disk_limit"):
        ctx.number(field, minimum=0)
    per_node = ctx.integer("max_instance_per_node", minimum=-1)
    gpus = ctx.integer("gpu_request", minimum=0)
    cpus = ctx.number("cpu_request", minimum=0)
    memory = ctx.number("memory_request", minimum=0)
    created, scheduled = _start(ctx)
    deleted = ctx.number("deletion_time", optional=True, minimum=0)
    if gpus == 0:
        raise DropRow(CPU_NODE)
    stop = end if deleted is None else deleted
    if stop < scheduled:
        raise ctx.fail("deletion_time", f"{stop:g} is before scheduled_time {scheduled:g}")
    if stop == scheduled:
        raise DropRow(NO_RUN_TIME)
    app = ctx.text("app_name")
    return JobSpec(job_id=ctx.text("instance_sn"), submit_time=created, num_gpus=gpus,
                   work=stop - scheduled, priority=LATENCY_SENSITIVE, kind=JobKind.SERVICE,
                   model=app, cpus_per_gpu=cpus / gpus, memory_gb_per_gpu=memory / gpus,
                   group=app, max_per_node=max(per_node, 0))


def _start(ctx: RowContext) -> tuple[float, float]:
    """(created, scheduled): both empty is an instance from before the trace (0, 0)."""
    created = ctx.number("creation_time", optional=True, minimum=0)
    scheduled = ctx.number("scheduled_time", optional=True, minimum=0)
    if created is None and scheduled is None:
        return 0.0, 0.0
    if created is None or scheduled is None:
        field = "creation_time" if created is None else "scheduled_time"
        raise ctx.fail(field, "missing value (only an instance from before the trace has "
                              "neither creation_time nor scheduled_time)")
    if scheduled < created:
        raise ctx.fail("scheduled_time", f"{scheduled:g} is before creation_time {created:g}")
    return created, scheduled


register_reader(AlibabaDlrmReader())
