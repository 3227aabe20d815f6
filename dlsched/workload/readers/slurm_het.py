"""Slurm heterogeneous jobs in ``sacct`` output: one row per component, ``1234+0``,
``1234+1``, ... (``slurm.py`` builds each as one job: ``het_job``)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from dlsched.wording import count_of
from dlsched.workload.readers.base import RowCollector, RowContext

_COMPONENT = re.compile(r"^(\d+(?:_\d+)?)\+\d+$")  # 1234+0 (not a step: 1234+0.batch)


@dataclass
class HetJobs:
    """The heterogeneous jobs read (their ids), and those whose GPU components asked for
    different types (or some a type, some none)."""

    merged: list[str] = field(default_factory=list)
    mixed: list[str] = field(default_factory=list)
    split: list[str] = field(default_factory=list)  # components in different queues
    queue_field: str = "partition"  # which sacct field is the queue (slurm.QUEUE_FIELDS)
    resources: bool = False  # the jobs ask AllocTRES' CPUs and memory (sacct_resources)

    def notes(self, path: Path) -> list[str]:
        """The trace's warnings about them: how they are replayed."""
        if not self.merged:
            return []
        notes = [f"{path}: {count_of(len(self.merged), 'heterogeneous job')} "
                 f"({_some(self.merged)}) replayed each as one job of its components' GPUs "
                 "summed, all started together (dlsched has no gang of unlike workers: "
                 "docs/what-if.md)"]
        if self.mixed:
            notes.append(f"{path}: {count_of(len(self.mixed), 'heterogeneous job')} "
                         f"({_some(self.mixed)}) asked different GPU types in different "
                         "components: each may run on any of them (untyped components: on "
                         "any type)")
        if self.split:
            one, several = _WORDS[self.queue_field]
            notes.append(f"{path}: {count_of(len(self.split), 'heterogeneous job')} "
                         f"({_some(self.split)}) asked different {several} in different "
                         f"components: each is queued in its GPU components' {one} with the "
                         "most GPUs (the first such on a tie)")
        return notes


# How the notes name each queue field (slurm.QUEUE_FIELDS): one, several.
_WORDS = {"partition": ("partition", "partitions"), "account": ("account", "accounts"),
          "qos": ("QOS", "QOS"), "user": ("user", "users")}


def het_queue(parts: list[tuple[str, int]], job_id: str, het: HetJobs) -> str:
    """A heterogeneous job's one queue (a dlsched job has one) from its components'
    (queue, GPUs), the queue being the field ``het.queue_field`` names (its partition unless
    told otherwise): that of its GPU components, or of the most GPUs among them, the first
    listed on a tie (a CPU-only launcher's does not count: the replay schedules GPUs). Where
    the components asked several ``het`` says so."""
    if len({queue for queue, _ in parts}) > 1:
        het.split.append(job_id)
    gpus: dict[str, int] = {}
    for queue, count in parts:
        if count:
            gpus[queue] = gpus.get(queue, 0) + count
    return max(gpus, key=lambda queue: gpus[queue]) if gpus else parts[0][0]


def _some(ids: list[str], most: int = 3) -> str:
    shown = ", ".join(ids[:most])
    return shown + (f" and {len(ids) - most} more" if len(ids) > most else "")


def het_groups(rows: Iterable[RowContext], collector: RowCollector
               ) -> Iterator[tuple[RowContext, list[RowContext] | None]]:
    """Each job's first row with its components' rows (None: a row of its own), every row
    counted. A heterogeneous job's component rows are told by their ids and gathered while
    rows of that job (its components, their steps) follow; a step row stays its own (the
    builder drops it)."""
    open_id: str | None = None
    parts: list[RowContext] = []
    for ctx in rows:
        collector.count_row(ctx)
        job_id = (ctx.row.get("JobID") or "").strip()
        match = _COMPONENT.match(job_id) if ctx.problem is None else None
        base = match.group(1) if match else None
        if parts and base != open_id and not job_id.startswith(f"{open_id}+"):
            yield parts[0], parts
            parts, open_id = [], None
        if base is not None:
            parts.append(ctx)
            open_id = base
        else:
            yield ctx, None
    if parts:
        yield parts[0], parts
