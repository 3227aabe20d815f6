"""The latest progress reports of recent jobs, in memory: what the dashboard plots as a job's
throughput over time. The database keeps only each job's last report (``last_progress``);
this keeps up to ``per_job`` reports of each of the ``jobs`` most recently reported jobs, and
is empty again after a restart."""

from __future__ import annotations

from collections import OrderedDict, deque
from typing import Any


class ProgressLog:
    def __init__(self, per_job: int = 500, jobs: int = 2000) -> None:
        self.per_job, self.jobs = per_job, jobs
        self._reports: OrderedDict[str, deque[dict[str, Any]]] = OrderedDict()

    def add(self, job_id: str, report: dict[str, Any]) -> None:
        kept = self._reports.pop(job_id, None)
        if kept is None:
            kept = deque(maxlen=self.per_job)
        kept.append(report)
        self._reports[job_id] = kept  # most recently reported last
        while len(self._reports) > self.jobs:
            self._reports.popitem(last=False)

    def reports(self, job_id: str) -> list[dict[str, Any]]:
        return list(self._reports.get(job_id, ()))
