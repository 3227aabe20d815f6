"""A small deterministic event core (after SimPy's): a heap of (time, priority, seq, event).

Events at the same time run by priority (lower first), then in the order they were scheduled
(``seq`` from ``itertools.count``), so a run never depends on hash order or float noise in ids.
"""

from __future__ import annotations

import enum
import heapq
import itertools
from dataclasses import dataclass
from typing import Any


class Priority(enum.IntEnum):
    """Same-time order: completions free GPUs before arrivals ask for them; timers last."""

    FINISH = 0
    FAILURE = 1
    ARRIVAL = 2
    TIMER = 3


@dataclass(frozen=True, slots=True)
class Event:
    kind: Priority
    payload: Any = None
    token: int = 0


class EventQueue:
    def __init__(self) -> None:
        self._heap: list[tuple[float, int, int, Event]] = []
        self._seq = itertools.count()

    def schedule(self, time: float, event: Event) -> None:
        heapq.heappush(self._heap, (time, int(event.kind), next(self._seq), event))

    def peek(self) -> float:
        """Time of the next event (infinity when empty)."""
        return self._heap[0][0] if self._heap else float("inf")

    def pop(self) -> tuple[float, Event]:
        time, _, _, event = heapq.heappop(self._heap)
        return time, event

    def pop_at(self, time: float) -> Event | None:
        """The next event if it is due at ``time``, removed from the queue; else None."""
        heap = self._heap
        if heap and heap[0][0] == time:
            return heapq.heappop(heap)[3]
        return None

    def __len__(self) -> int:
        return len(self._heap)

    def __bool__(self) -> bool:
        return bool(self._heap)
