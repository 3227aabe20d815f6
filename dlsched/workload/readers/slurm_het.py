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
        return notes


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
