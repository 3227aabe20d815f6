"""A simulated service's outcome as the report's series (``report/service_plots.py``)."""

from __future__ import annotations

import numpy as np

from dlsched.report.service_plots import GRID, ServiceSeries, intervals_count, step_sum
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
