"""Goodput and statistical efficiency over time, per job (Pollux OSDI'21 §3, Fig. 2-3).

A run under a progress-dependent model (the ``goodput`` model re-rated each round) keeps one
``GoodputPoint`` per job each time its rate changes: from then on the job trains at that global
batch with that statistical efficiency and goodput. ``goodput.csv`` lists them, sorted by job
then time; ``job_series`` groups them for the HTML report's plot.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from dlsched.sim.result import GoodputPoint, SimulationResult

GOODPUT_COLUMNS = ("job_id", "time", "num_gpus", "progress", "batch", "efficiency", "goodput")


def goodput_rows(result: SimulationResult) -> list[tuple[Any, ...]]:
    """One row per point in ``GOODPUT_COLUMNS`` order, by job id then time."""
    points = sorted(result.goodput_series, key=lambda p: (p.job_id, p.time))
    return [(p.job_id, float(p.time), int(p.num_gpus), float(p.progress), float(p.batch),
             float(p.efficiency), float(p.goodput)) for p in points]


def job_series(result: SimulationResult) -> dict[str, list[GoodputPoint]]:
    """Each job's points in time order, jobs by id."""
    by_job: dict[str, list[GoodputPoint]] = defaultdict(list)
    for point in sorted(result.goodput_series, key=lambda p: (p.job_id, p.time)):
        by_job[point.job_id].append(point)
    return dict(sorted(by_job.items()))
