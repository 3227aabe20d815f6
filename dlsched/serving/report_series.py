"""A simulated service's outcome as the report's series (``report/service_plots.py``)."""

from __future__ import annotations

import csv
from collections import defaultdict
from pathlib import Path

import numpy as np

from dlsched.report.service_plots import (
    GRID,
    ServiceSeries,
    SharedCluster,
    Step,
    intervals_count,
    step_sum,
)
from dlsched.serving.metrics import meets, per_request
from dlsched.serving.run import ServiceOutcome


def series_of(outcome: ServiceOutcome) -> ServiceSeries:
    log = outcome.log
    finished = log.finish[~np.isnan(log.finish)]
    end = max(float(log.arrival.max()) if len(log.arrival) else 0.0,
              float(finished.max()) if len(finished) else 0.0, 1e-9)
    grid = np.linspace(0.0, end, GRID)
    steps = [_steps(r) for r in outcome.replicas]
    batch = step_sum([(t, b) for t, b, _ in steps], grid)
    blocks = step_sum([(t, k) for t, _, k in steps], grid)
    capacity = sum(getattr(r, "blocks", 0) for r in outcome.replicas)
    slots = outcome.slots
    held = intervals_count([s.requested for s in slots], [s.held_until(end) for s in slots])
    ready = intervals_count([s.ready for s in slots], [s.held_until(end) for s in slots])
    return ServiceSeries(outcome.spec.name, log.arrival, per_request(log)["latency"],
                         meets(log, outcome.spec.slo), (grid, batch), held, ready,
                         (grid, blocks / capacity) if capacity else None)


def _steps(replica: object) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    series = getattr(replica, "series", [])
    if not series:
        empty = np.zeros(0)
        return empty, empty, empty
    t, b, k = (np.array(c, dtype=float) for c in zip(*series, strict=True))
    return t, b, k


def shared_cluster(segments_csv: Path) -> SharedCluster | None:
    """From a run's ``segments.csv``: GPUs held by service replicas and by training jobs
    over time, and the training jobs' preemptions (every segment but a job's last ends in
    one); None when no training job ran."""
    if not segments_csv.exists():
        return None
    rows = list(csv.DictReader(segments_csv.open()))
    runs: dict[str, list[tuple[float, float, float]]] = defaultdict(list)
    for r in rows:
        gpus = float(r["num_gpus"]) * float(r["gpu_share"] or 1.0)
        runs[r["job_id"]].append((float(r["start"]), float(r["end"]), gpus))
    service = [s for j, segs in runs.items() if j.startswith("service:") for s in segs]
    training = {j: sorted(segs) for j, segs in runs.items() if not j.startswith("service:")}
    if not training:
        return None
    flat = [s for segs in training.values() for s in segs]
    preempted = sorted(segs[i][1] for segs in training.values() for i in range(len(segs) - 1))
    return SharedCluster(_held(service), _held(flat), tuple(preempted))


def _held(segments: list[tuple[float, float, float]]) -> Step:
    return intervals_count([s for s, _, _ in segments], [e for _, e, _ in segments],
                           [g for _, _, g in segments])
