"""Shanghai AI Lab's Acme traces (Hu et al., "Characterization of Large Language Model
Development in the Datacenter", NSDI'24; InternLM/AcmeTrace), format ``acme``: a user's own
download of ``trace_seren.csv`` or ``trace_kalos.csv`` (not bundled).

Columns ``job_id,user,node_num,gpu_num,cpu_num,type,state,submit_time,start_time,end_time,
duration,queue,gpu_time``; Kalos adds ``mem_per_pod_GB,shared_mem_per_pod,fail_time,
stop_time``. Times are ISO date-times with an offset (``2023-03-01 00:18:22+08:00``);
``duration`` = end - start in seconds, ``queue`` the seconds it waited. A job becomes:

- ``submit_time`` from ``submit_time`` (rebased to the first job); ``work`` = ``duration`` in
  reference seconds (the run measured at its size, as the Helios and Philly readers take it);
- ``num_gpus`` = ``gpu_num``, ``cpus_per_gpu`` = ``cpu_num / gpu_num``; on Kalos
  ``memory_gb_per_gpu`` = ``mem_per_pod_GB`` over a pod's GPUs (``gpu_num / node_num``, one pod
  a node);
- ``queue`` = its workload type (``Pretrain``, ``SFT``, ``Evaluation``, ``Debug``, ``MLLM``,
  ``Other``), the classes the paper studies, so quotas can be set per class with ``--tenants``;
- ``state`` is checked (COMPLETED, CANCELLED, FAILED, TIMEOUT, NODE_FAIL) and kept out of the
  job: a cancelled or failed job held its GPUs for its duration.

Dropped on purpose and counted in the trace's warnings: CPU-only jobs (``gpu_num`` 0) and jobs
that never ran (``duration`` 0, or no ``start_time``).
"""

from __future__ import annotations

from pathlib import Path

from dlsched.workload.job import JobSpec
from dlsched.workload.readers.base import (
    DropRow,
    ReaderOptions,
    RowContext,
    collect,
    date_time,
    iter_csv_rows,
    register_reader,
)
from dlsched.workload.trace import Trace

COLUMNS = ("job_id", "user", "node_num", "gpu_num", "cpu_num", "type", "state", "submit_time",
           "start_time", "end_time", "duration", "queue", "gpu_time")
KALOS = frozenset(("mem_per_pod_GB", "shared_mem_per_pod", "fail_time", "stop_time"))
STATES = frozenset({"COMPLETED", "CANCELLED", "FAILED", "TIMEOUT", "NODE_FAIL"})
CPU_ONLY = "CPU-only job (gpu_num 0)"
NEVER_RAN = "never ran (duration 0 or no start_time)"


class AcmeReader:
    name = "acme"
    columns = frozenset(("job_id", "node_num", "gpu_num", "type", "gpu_time", "submit_time"))

    def read(self, path: Path, options: ReaderOptions) -> Trace:
        rows = iter_csv_rows(path, COLUMNS, allow_extra=KALOS)
        collector = collect(path, options, rows, _job, gpu_field="gpu_num", id_field="job_id",
                            resource_fields=("cpu_num", "mem_per_pod_GB", "gpu_num"))
        return collector.trace(path.stem, self.name)


def _job(ctx: RowContext) -> JobSpec:
    gpus = ctx.integer("gpu_num", minimum=0)
    nodes = ctx.integer("node_num", minimum=0)
    cpus = ctx.number("cpu_num", minimum=0)
    state = ctx.text("state")
    if state not in STATES:
        raise ctx.fail("state", f"expected one of {', '.join(sorted(STATES))}, got {state!r}")
    kind = ctx.text("type")
    submitted = date_time(ctx, "submit_time")
    duration = ctx.number("duration", minimum=0)
    pod_memory = ctx.number("mem_per_pod_GB", optional=True, minimum=0)
    if gpus == 0:
        raise DropRow(CPU_ONLY)
    if duration == 0 or ctx.text("start_time", optional=True) is None:
        raise DropRow(NEVER_RAN)
    if date_time(ctx, "start_time") < submitted:
        raise ctx.fail("start_time", "before submit_time")
    per_pod = gpus / nodes if nodes else gpus
    return JobSpec(job_id=ctx.text("job_id"), submit_time=submitted, num_gpus=gpus,
                   work=duration, queue=kind, cpus_per_gpu=cpus / gpus,
                   memory_gb_per_gpu=(pod_memory or 0.0) / per_pod)


register_reader(AcmeReader())
