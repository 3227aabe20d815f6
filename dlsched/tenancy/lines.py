"""Each cluster queue's waiting line, kept from cycle to cycle.

A cluster queue orders its jobs by priority (higher first), then by the wrapped policy's own
QueueSort key (``ordering.py``). When that key is static (FIFO, SJF: it depends on the job
alone), a line changes between cycles only where jobs arrived, started or were preempted: each
line is a sorted list of keys beside its jobs, a job joins and leaves it by bisection, and a
job's position is a bisection too, so a cycle costs O(changes · log n), not O(waiting jobs)
(``benchmarks/bench_tenancy_cycle.py``; issue 14). The changes are told as they happen
(``joined``: the core's ``on_waiting``; ``left``: the tenant layer's Reserve); when the told
changes do not account for the waiting jobs (a job left otherwise), the lines are diffed
against the waiting jobs. With a dynamic key (Tiresias' attained service) every line is rebuilt
each cycle.

``positions`` (job id -> (cluster queue, 0-based position)) and ``least`` (per queue, the least
a job asks of each resource, for ``skip.closes_queue``, computed when asked) follow the lines.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from dlsched.workload.job import Job

WithinKey = Callable[[Job], Any]


class _Positions(Mapping[str, tuple[str, int]]):
    """job id -> (cluster queue, position), read from the lines' keys (static) or indexes."""

    def __init__(self, lines: WaitingLines) -> None:
        self._lines = lines

    def __getitem__(self, job_id: str) -> tuple[str, int]:
        found = self.get(job_id)
        if found is None:
            raise KeyError(job_id)
        return found

    def get(self, job_id: str, default: Any = None) -> Any:  # type: ignore[override]
        lines = self._lines
        cq = lines.queue_of_id.get(job_id)
        if cq is None:
            return default
        if lines.static:
            return cq, bisect.bisect_left(lines.keys[cq], lines.entries[job_id])
        return cq, lines.index[cq][job_id]

    def __contains__(self, job_id: object) -> bool:
        return job_id in self._lines.queue_of_id

    def __iter__(self) -> Iterator[str]:
        return iter(self._lines.queue_of_id)

    def __len__(self) -> int:
        return len(self._lines.queue_of_id)


class _Least(Mapping[str, dict[str, float]]):
    """Per queue, the least any of its jobs asks of each resource its head asks for (0 when
    a job does not ask for it); computed when asked, kept until the queue changes."""

    def __init__(self, lines: WaitingLines) -> None:
        self._lines = lines
        self.known: dict[str, dict[str, float]] = {}

    def __getitem__(self, cq: str) -> dict[str, float]:
        found = self.known.get(cq)
        if found is None:
            line = self._lines.lines[cq]  # KeyError: no such queue waiting
            request = self._lines.request
            found = dict(request(line[0]))
            for job in line[1:]:
                asked = request(job)
                for resource in found:
                    found[resource] = min(found[resource], asked.get(resource, 0.0))
            self.known[cq] = found
        return found

    def __iter__(self) -> Iterator[str]:
        return iter(self._lines.lines)

    def __len__(self) -> int:
        return len(self._lines.lines)


class WaitingLines:
    """Per cluster queue, its waiting jobs in order (module docstring)."""

    def __init__(self, queue_of: Callable[[Job], str],
                 request: Callable[[Job], Mapping[str, float]], static: bool) -> None:
        self.queue_of, self.request, self.static = queue_of, request, static
        self.lines: dict[str, list[Job]] = {}
        self.keys: dict[str, list[Any]] = {}  # static: cq -> the line's sort entries
        self.entries: dict[str, Any] = {}  # static: job id -> its sort entry
        self.index: dict[str, dict[str, int]] = {}  # dynamic: cq -> job id -> position
        self.queue_of_id: dict[str, str] = {}
        self.least = _Least(self)
        self.positions: Mapping[str, tuple[str, int]] = _Positions(self)
        self._within: dict[str, Any] = {}  # a static key, once per job
        self._joined: list[Job] = []  # told since the last update
        self._told = False  # a core tells every join (then no job joins untold)
        self._left: list[str] = []
        # Told of each job that joins (job, cq, entry) or leaves (job) a static line.
        self.on_join: Callable[[Job, str, Any], None] | None = None
        self.on_leave: Callable[[Job, str, Any], None] | None = None

    def joined(self, job: Job) -> None:
        """``job`` starts waiting (the core's ``on_waiting``)."""
        if self.static:
            self._joined.append(job)
            self._told = True

    def left(self, job_id: str) -> None:
        """``job_id`` stops waiting (it starts)."""
        if self.static:
            self._left.append(job_id)

    def update(self, waiting: Sequence[Job], within: WithinKey) -> None:
        """Bring the lines up to ``waiting``; ``within`` is the policy's key for this cycle."""
        if not self.static:
            self._within = {}
            self._rebuild(waiting, within)
            return
        members = self.queue_of_id
        joined, left = self._joined, self._left
        self._joined, self._left = [], []
        trust = self._told  # every join told: with equal counts, no job left untold either
        if joined or left:
            gone = [i for i in dict.fromkeys(left) if i in members]
            new = list({j.job_id: j for j in joined if j.job_id not in members}.values())
            if len(members) - len(gone) + len(new) == len(waiting):
                for job_id in gone:
                    self._remove(job_id)
                for job in new:
                    self._insert(job, within)
            else:
                trust = False  # told changes not applied: diff
        if len(members) == len(waiting) and (
                trust or all(j.job_id in members for j in waiting)):
            return
        current = {j.job_id: j for j in waiting}  # told changes missed some: diff
        for job_id in [i for i in members if i not in current]:
            self._remove(job_id)
        for job_id, job in current.items():
            if job_id not in members:
                self._insert(job, within)

    def refile(self, jobs: Sequence[Job], within: WithinKey) -> None:
        """Waiting jobs whose static key changed while they wait (Tiresias' starvation
        promotion: the policy's ``key_changes``) move to their new place."""
        if not self.static:
            return
        for job in jobs:
            if job.job_id in self.queue_of_id:
                self._remove(job.job_id)
                self._insert(job, within)

    def _insert(self, job: Job, within: WithinKey) -> None:
        job_id = job.job_id
        cq = self.queue_of_id[job_id] = self.queue_of(job)
        key = self._within[job_id] = within(job)
        entry = self.entries[job_id] = (-job.spec.priority, key)
        keys = self.keys.get(cq)
        if keys is None:
            keys = self.keys[cq] = []
            self.lines[cq] = []
        at = bisect.bisect_right(keys, entry)
        keys.insert(at, entry)
        self.lines[cq].insert(at, job)
        self.least.known.pop(cq, None)
        if self.on_join is not None:
            self.on_join(job, cq, entry)

    def _remove(self, job_id: str) -> None:
        cq = self.queue_of_id.pop(job_id)
        entry = self.entries.pop(job_id)
        self._within.pop(job_id, None)
        keys, line = self.keys[cq], self.lines[cq]
        at = bisect.bisect_left(keys, entry)
        while line[at].job_id != job_id:  # equal entries (a key without the job id)
            at += 1
        job = line[at]
        del keys[at], line[at]
        self.least.known.pop(cq, None)
        if not line:
            del self.keys[cq], self.lines[cq]
        if self.on_leave is not None:
            self.on_leave(job, cq, entry)

    def _rebuild(self, waiting: Sequence[Job], within: WithinKey) -> None:
        groups: dict[str, list[Job]] = {}
        members = self.queue_of_id = {}
        for job in waiting:
            cq = members[job.job_id] = self.queue_of(job)
            groups.setdefault(cq, []).append(job)
        self.lines, self.index = {}, {}
        self.least.known = {}
        keys = self._within
        for cq, line in groups.items():
            for job in line:
                keys[job.job_id] = within(job)
            line.sort(key=lambda j: (-j.spec.priority, keys[j.job_id]))
            self.lines[cq] = line
            self.index[cq] = {job.job_id: position for position, job in enumerate(line)}

    def within(self, job: Job) -> Any:
        return self._within[job.job_id]
