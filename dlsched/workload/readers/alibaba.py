"""Alibaba GPU cluster trace 2023 ("openb" pod lists; Weng et al., "Beware of Fragmentation",
ATC'23), format ``alibaba-2023``.

Columns ``name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,
deletion_time,scheduled_time`` (times in seconds). A pod becomes one job:

- ``submit_time`` = ``creation_time``; ``work`` = ``deletion_time - scheduled_time`` in reference
  seconds. Pods still ``Running`` when the trace was cut carry its end (12,902,960 s) as their
  deletion time, so their work is a lower bound; it is kept as is.
- ``gpu_share`` = ``gpu_milli / 1000``: a pod with ``num_gpu`` 1 may ask for a fraction of one GPU
  (38% of pods do); a pod with several GPUs must use whole ones.
- ``cpus_per_gpu`` = ``cpu_milli / 1000 / num_gpu``, ``memory_gb_per_gpu`` =
  ``memory_mib / 1024 / num_gpu`` (GiB), both per GPU worker even when the pod shares its GPU.
- ``gpu_spec`` (e.g. ``V100M16|V100M32``) lists the GPU types the pod may use; empty means any.
- ``priority`` from the Kubernetes/Alibaba QoS class: ``LS`` (latency-sensitive) and
  ``Guaranteed`` 2, ``Burstable`` 1, ``BE`` (best effort) 0; higher is more important.

Two kinds of pods are dropped on purpose and counted in the trace's warnings (they are not
errors, so ``skipped`` stays 0): CPU-only pods (``num_gpu`` 0, 13% of the default list), which a
GPU scheduler does not place, and pods never scheduled (``Pending``, no ``scheduled_time``), which
have no measured run time. The ``multigpu*`` lists of the same release carry no times at all and
cannot drive a simulation: they fail on their header.
"""

from __future__ import annotations

import re
from pathlib import Path

from dlsched.errors import InputError, InputLocation
from dlsched.textinput import first_line
from dlsched.workload.job import JobSpec
from dlsched.workload.readers.base import (
    DropRow,
    ReaderOptions,
    RowContext,
    collect,
    iter_csv_rows,
    register_reader,
)
from dlsched.workload.trace import Trace

RESOURCE_COLUMNS = ("name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli")
TIME_COLUMNS = ("creation_time", "deletion_time", "scheduled_time")
COLUMNS = (*RESOURCE_COLUMNS, "gpu_spec", "qos", "pod_phase", *TIME_COLUMNS)

QOS_PRIORITY = {"LS": 2, "Guaranteed": 2, "Burstable": 1, "BE": 0}
POD_PHASES = dict.fromkeys(("Running", "Succeeded", "Failed", "Pending"), 0)  # for _choice
CPU_ONLY = "CPU-only pod (num_gpu 0)"
NEVER_SCHEDULED = "never scheduled (no scheduled_time)"
_GPU_TYPE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


class AlibabaReader:
    name = "alibaba-2023"
    # the resource columns alone identify the family, so the time-less lists are recognised
    # and refused with a clear message rather than "unknown format"
    columns = frozenset(RESOURCE_COLUMNS)

    def read(self, path: Path, options: ReaderOptions) -> Trace:
        _check_times(path)
        rows = iter_csv_rows(path, COLUMNS)
        collector = collect(path, options, rows, _job, gpu_field="num_gpu",
                            id_field="name",
                            resource_fields=("cpu_milli", "memory_mib", "gpu_milli"))
        return collector.trace(path.stem, self.name)


def _check_times(path: Path) -> None:
    try:
        header = [c.strip() for c in first_line(path).split(",")]
    except InputError:
        return  # not text: the row reader says where, naming the field
    missing = [c for c in TIME_COLUMNS if c not in header]
    if missing:
        raise InputError(InputLocation(str(path), 1, missing[0]),
                         "missing column: this pod list has no times (the FGD multigpu lists "
                         "only give resources), so it cannot drive a simulation")


def _job(ctx: RowContext) -> JobSpec:
    gpus = ctx.integer("num_gpu", minimum=0)
    if gpus == 0:
        raise DropRow(CPU_ONLY)
    share = _gpu_share(ctx, gpus)
    priority = _choice(ctx, "qos", QOS_PRIORITY)
    _choice(ctx, "pod_phase", POD_PHASES)
    submit = ctx.number("creation_time", minimum=0)
    scheduled = ctx.number("scheduled_time", optional=True, minimum=0)
    deleted = ctx.number("deletion_time", minimum=0)
    if scheduled is None:
        raise DropRow(NEVER_SCHEDULED)
    if scheduled < submit:
        raise ctx.fail("scheduled_time", f"{scheduled:g} is before creation_time {submit:g}")
    if deleted <= scheduled:
        raise ctx.fail("deletion_time", f"{deleted:g} is not after scheduled_time {scheduled:g}")
    return JobSpec(job_id=ctx.text("name"), submit_time=submit, num_gpus=gpus,
                   work=deleted - scheduled, gpu_share=share, gpu_types=_gpu_types(ctx),
                   priority=priority,
                   cpus_per_gpu=ctx.number("cpu_milli", minimum=0) / 1000 / gpus,
                   memory_gb_per_gpu=ctx.number("memory_mib", minimum=0) / 1024 / gpus)


def _gpu_share(ctx: RowContext, gpus: int) -> float:
    milli = ctx.integer("gpu_milli", minimum=1)
    if milli > 1000:
        raise ctx.fail("gpu_milli", f"must be <= 1000 (one whole GPU), got {milli}")
    if gpus > 1 and milli != 1000:
        raise ctx.fail("gpu_milli", f"a pod with {gpus} GPUs must use whole GPUs, got {milli}")
    return milli / 1000


def _gpu_types(ctx: RowContext) -> tuple[str, ...]:
    raw = ctx.text("gpu_spec", optional=True)
    if raw is None:
        return ()
    names = {name.strip() for name in raw.split("|")}
    bad = sorted(name for name in names if not _GPU_TYPE.match(name))
    if bad:
        raise ctx.fail("gpu_spec", f"not a GPU type list like 'V100M16|V100M32': {raw!r}")
    return tuple(sorted(names))


def _choice(ctx: RowContext, field: str, allowed: dict[str, int]) -> int:
    value = ctx.text(field)
    if value not in allowed:
        raise ctx.fail(field, f"unknown value {value!r} (known: {', '.join(sorted(allowed))})")
    return allowed[value]


register_reader(AlibabaReader())
