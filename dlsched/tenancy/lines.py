"""Each cluster queue's waiting line, kept from cycle to cycle.

A cluster queue orders its jobs by priority (higher first), then by the wrapped policy's own
QueueSort key (``ordering.py``). When that key is static (FIFO, SJF: it depends on the job
alone), a line changes between cycles only where jobs arrived, started or were preempted, so
``WaitingLines.update`` re-sorts only the queues whose members changed: a cycle over 10,000
pending jobs in 100 queues, of which one job finished, sorts one queue, not 10,000 jobs
(``benchmarks/bench_tenancy_cycle.py``). With a dynamic key (Tiresias' attained service) every
line is rebuilt each cycle.

``positions`` (job id -> (cluster queue, 0-based position)) and ``least`` (per queue, the least
a job asks of each resource, for ``skip.closes_queue``) follow the lines.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from dlsched.workload.job import Job

WithinKey = Callable[[Job], Any]


class _Positions(Mapping[str, tuple[str, int]]):
    """job id -> (cluster queue, position), read from the lines' indexes."""

    def __init__(self, lines: WaitingLines) -> None:
        self._lines = lines

    def __getitem__(self, job_id: str) -> tuple[str, int]:
        cq = self._lines.queue_of_id.get(job_id)
        if cq is None:
            raise KeyError(job_id)
        return cq, self._lines.index[cq][job_id]

    def get(self, job_id: str, default: Any = None) -> Any:  # type: ignore[override]
        cq = self._lines.queue_of_id.get(job_id)
        return default if cq is None else (cq, self._lines.index[cq][job_id])

    def __contains__(self, job_id: object) -> bool:
        return job_id in self._lines.queue_of_id

    def __iter__(self) -> Iterator[str]:
        return iter(self._lines.queue_of_id)

    def __len__(self) -> int:
        return len(self._lines.queue_of_id)


class WaitingLines:
    """Per cluster queue, its waiting jobs in order (module docstring)."""

    def __init__(self, queue_of: Callable[[Job], str],
                 request: Callable[[Job], Mapping[str, float]], static: bool) -> None:
        self.queue_of, self.request, self.static = queue_of, request, static
        self.lines: dict[str, list[Job]] = {}
        self.index: dict[str, dict[str, int]] = {}  # cq -> job id -> position
        self.queue_of_id: dict[str, str] = {}
        self.least: dict[str, dict[str, float]] = {}
        self.positions: Mapping[str, tuple[str, int]] = _Positions(self)
        self._within: dict[str, Any] = {}  # a static key, once per job

    def update(self, waiting: Sequence[Job], within: WithinKey) -> None:
        """Bring the lines up to ``waiting``; ``within`` is the policy's key for this cycle."""
        if not self.static:
            self._within = {}
            self._rebuild(waiting, within)
            return
        members = self.queue_of_id
        if len(members) == len(waiting) and all(j.job_id in members for j in waiting):
            return
        current = {j.job_id: j for j in waiting}
        dirty: dict[str, bool] = {}  # cq -> whether jobs joined it (else some only left)
        for job_id in [i for i in members if i not in current]:
            dirty.setdefault(members.pop(job_id), False)
            self._within.pop(job_id, None)
        for job_id, job in current.items():
            if job_id not in members:
                cq = members[job_id] = self.queue_of(job)
                dirty[cq] = True
                self.lines.setdefault(cq, []).append(job)
        for cq, joined in dirty.items():
            line = [j for j in self.lines.get(cq, ()) if members.get(j.job_id) == cq]
            self._settle(cq, line, within, joined)

    def _rebuild(self, waiting: Sequence[Job], within: WithinKey) -> None:
        groups: dict[str, list[Job]] = {}
        members = self.queue_of_id = {}
        for job in waiting:
            cq = members[job.job_id] = self.queue_of(job)
            groups.setdefault(cq, []).append(job)
        self.lines, self.index, self.least = {}, {}, {}
        for cq, line in groups.items():
            self._settle(cq, line, within, True)

    def _settle(self, cq: str, line: list[Job], within: WithinKey, joined: bool) -> None:
        """Sort one queue's line (unless jobs only left it: the rest keep their order) and
        refresh its index and least request."""
        if not line:
            self.lines.pop(cq, None)
            self.index.pop(cq, None)
            self.least.pop(cq, None)
            return
        if joined:
            keys = self._within
            for job in line:
                if job.job_id not in keys:
                    keys[job.job_id] = within(job)
            line.sort(key=lambda j: (-j.spec.priority, keys[j.job_id]))
        self.lines[cq] = line
        self.index[cq] = {job.job_id: position for position, job in enumerate(line)}
        least = dict(self.request(line[0]))
        for job in line[1:]:
            asked = self.request(job)
            for resource in least:
                least[resource] = min(least[resource], asked.get(resource, 0.0))
        self.least[cq] = least

    def within(self, job: Job) -> Any:
        return self._within[job.job_id]
