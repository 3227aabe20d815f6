"""A run's job records as columns, read once (issue 14 item 2): ``jobs.csv``, the summary and
the fairness metrics all read these arrays instead of walking 10^5 ``JobRecord`` objects field
by field, several times each. From a ``JobRecords`` (``SimConfig.keep_finished=False``) the
finished jobs' columns are taken as they are, without making a record per job.

Rows are in ``result.jobs`` order; an optional field that is ``None`` in the record is NaN
here (``FinishedJobs`` stores them so too). Sums and means over these columns add the same
numbers in the same order as the record-by-record code did, so the summary is the same to the
last bit.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from operator import attrgetter

import numpy as np

from dlsched.sim.finished import SIZES, JobRecords
from dlsched.sim.result import JobRecord

TEXTS = ("job_id", "queue", "status", "pending_reason")
FLOATS = ("submit_time", "first_start", "finish_time", "gpu_seconds", "deadline",
          "checkpoint_gpu_seconds", "run_seconds")
INTS = ("num_gpus", "preemptions", "resizes", "min_gpus", "max_gpus", "last_gpus")


@dataclass(frozen=True)
class JobTable:
    """The record fields the reports read, one column each (module docstring)."""

    job_id: list[str]
    queue: list[str]
    status: list[str]
    pending_reason: list[str]
    submit_time: np.ndarray
    first_start: np.ndarray  # NaN: never started
    finish_time: np.ndarray  # NaN: not ended
    gpu_seconds: np.ndarray
    deadline: np.ndarray  # NaN: none
    checkpoint_gpu_seconds: np.ndarray
    run_seconds: np.ndarray  # NaN: not recorded
    num_gpus: np.ndarray
    preemptions: np.ndarray
    resizes: np.ndarray
    # None (from finished jobs' columns, ``_from_columns``): no job may run at several sizes,
    # and the sizes, each job's ``num_gpus``, are not made (``FinishedJobs.sized``)
    min_gpus: np.ndarray | None  # 0: not recorded (a record made by hand)
    max_gpus: np.ndarray | None
    last_gpus: np.ndarray | None  # 0: never ran

    def __len__(self) -> int:
        return len(self.job_id)

    def finished(self, status: str = "finished") -> np.ndarray:
        """Mask of the jobs with that status and a finish time."""
        return (np.asarray(self.status, dtype=object) == status) & ~np.isnan(self.finish_time)


def job_table(jobs: Sequence[JobRecord]) -> JobTable:
    """``jobs`` (a run's records, in their order) as a ``JobTable``."""
    if isinstance(jobs, JobRecords):
        return _from_columns(jobs)
    values: dict[str, object] = {}
    for name in TEXTS:
        values[name] = list(map(attrgetter(name), jobs))
    for name in FLOATS:
        values[name] = np.array([math.nan if v is None else v
                                 for v in map(attrgetter(name), jobs)], dtype=np.float64)
    for name in INTS:
        values[name] = np.fromiter(map(attrgetter(name), jobs), dtype=np.int64,
                                   count=len(jobs))
    return JobTable(**values)  # type: ignore[arg-type]


def _from_columns(jobs: JobRecords) -> JobTable:
    """The finished rows' columns and the live records, in submission order."""
    finished, live = jobs.finished, jobs.live
    order = np.asarray(jobs._order, dtype=np.int64)
    columns = finished.columns
    values: dict[str, object] = {}
    for name in TEXTS:
        combined = np.empty(len(order), dtype=object)
        combined[:len(finished)] = columns[name]
        combined[len(finished):] = [getattr(r, name) for r in live]
        values[name] = combined[order].tolist()
    sized = finished.sized or any(r.min_gpus != r.max_gpus for r in live)
    for name in (*FLOATS, *INTS):
        if name in SIZES and not sized:
            values[name] = None  # each job's is its num_gpus (``JobTable``)
            continue
        kind = np.int64 if name in INTS else np.float64
        column = finished.column(name)
        done = np.frombuffer(column, dtype=kind) if len(finished) else np.zeros(0, kind)
        rest = [getattr(r, name) for r in live]
        if kind is np.float64:
            rest = [math.nan if v is None else v for v in rest]
        values[name] = np.concatenate((done, np.asarray(rest, dtype=kind)))[order]
    return JobTable(**values)  # type: ignore[arg-type]


def optional_floats(values: np.ndarray) -> list[float | None]:
    """A float column as Python numbers, NaN as None."""
    out = values.tolist()
    if np.isnan(values).any():
        return [None if v != v else v for v in out]
    return out
