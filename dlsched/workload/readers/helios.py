"""SenseTime Helios traces (Hu et al., SC'21; HeliosData, CC-BY-4.0), format ``helios``.

Each cluster's ``cluster_log.csv`` (Venus, Earth, Saturn, Uranus): ``job_id,user,vc,gpu_num,
cpu_num,node_num,state,submit_time,start_time,end_time,duration,queue``, times as
``YYYY-MM-DD HH:MM:SS``, ``duration`` = end - start in seconds. The full traces are not bundled
(3.4 M jobs); point dlsched at a download. A job becomes:

- ``queue`` = its virtual cluster (``vc``), so the cluster's VCs are tenant queues
  (``dlsched tenants --sizes cluster_gpu_number.csv``: the VC GPU counts of the same release);
- ``submit_time`` from ``submit_time`` (rebased to the first job), ``num_gpus`` = ``gpu_num``,
  ``cpus_per_gpu`` = ``cpu_num / gpu_num``, ``work`` = ``duration`` in reference seconds (as in
  the Philly and ITP readers: the run time measured at the requested size);
- ``state`` is checked (COMPLETED, CANCELLED, FAILED, TIMEOUT, NODE_FAIL) but kept out of the
  job: a cancelled or failed job still held its GPUs for its duration.

Dropped on purpose and counted in the trace's warnings (not errors): CPU-only jobs (``gpu_num``
0, about half of each cluster's jobs) and jobs that never ran (``duration`` 0).
"""

from __future__ import annotations

from dlsched.workload.job import JobSpec
from dlsched.workload.readers.base import (
    CsvRowReader,
    DropRow,
    RowContext,
    date_time,
    register_reader,
)

COLUMNS = ("job_id", "user", "vc", "gpu_num", "cpu_num", "node_num", "state", "submit_time",
           "start_time", "end_time", "duration", "queue")
STATES = frozenset({"COMPLETED", "CANCELLED", "FAILED", "TIMEOUT", "NODE_FAIL"})
CPU_ONLY = "CPU-only job (gpu_num 0)"
NEVER_RAN = "never ran (duration 0)"


def _job(ctx: RowContext) -> JobSpec:
    gpus = ctx.integer("gpu_num", minimum=0)
    if gpus == 0:
        raise DropRow(CPU_ONLY)
    state = ctx.text("state")
    if state not in STATES:
        raise ctx.fail("state", f"expected one of {', '.join(sorted(STATES))}, got {state!r}")
    duration = ctx.number("duration", minimum=0)
    if duration == 0:
        raise DropRow(NEVER_RAN)
    cpus = ctx.integer("cpu_num", minimum=0)
    return JobSpec(job_id=f"helios-{ctx.text('job_id')}", submit_time=date_time(ctx, "submit_time"),
                   num_gpus=gpus, work=duration, queue=ctx.text("vc"),
                   cpus_per_gpu=cpus / gpus)


register_reader(CsvRowReader("helios", COLUMNS, _job, gpu_field="gpu_num",
                             id_field="job_id"))
