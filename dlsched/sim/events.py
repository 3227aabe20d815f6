"""A small deterministic event core (after SimPy's): a heap of (time, priority, seq, event).

Events at the same time run by priority (lower first), then in the order they were scheduled
(``seq`` from ``itertools.count``), so a run never depends on hash order or float noise in ids.
"""

from __future__ import annotations

import enum
import heapq
import itertools
from collections.abc import Iterator
from typing import Any, NamedTuple


class Priority(enum.IntEnum):
    """Same-time order: completions free GPUs before arrivals ask for them; timers last."""

    FINISH = 0
    FAILURE = 1
    ARRIVAL = 2
    TIMER = 3


class Event(NamedTuple):
    """What happens (``kind``), to what (``payload``), and for which attempt (``token``).

    Immutable. A named tuple rather than a frozen dataclass: a Philly run makes ~2 x 10^5 of
    them and a tuple is several times cheaper to build."""

    kind: Priority
    payload: Any = None
    token: int = 0


class EventQueue:
    def __init__(self) -> None:
        self._heap: list[tuple[float, int, int, Event]] = []
        self._seq = itertools.count()

    @property
    def heap(self) -> list[tuple[float, int, int, Event]]:
        """The heap itself, (time, kind, seq, event) entries: the simulator's loop reads and
        pops it with ``heapq`` (a method call per event costs ~5% of a Philly run)."""
        return self._heap

    @property
    def numbering(self) -> Iterator[int]:
        """The counter that numbers entries (``seq``): a caller that pushes onto ``heap``
        itself (``SimExecutor.start``, one a start) numbers its entries from it."""
        return self._seq

    def schedule(self, time: float, event: Event) -> None:
        heapq.heappush(self._heap, (time, event.kind, next(self._seq), event))

    def peek(self) -> float:
        """Time of the next event (infinity when empty)."""
        return self._heap[0][0] if self._heap else _INFINITY

    def pop(self) -> tuple[float, Event]:
        time, _, _, event = heapq.heappop(self._heap)
        return time, event

    def pop_at(self, time: float, before: int = 1 << 30) -> Event | None:
        """The next event if it is due at ``time`` (and, with ``before``, has a priority below
        it), removed from the queue; else None."""
        heap = self._heap
        if heap and heap[0][0] == time and heap[0][1] < before:
            return heapq.heappop(heap)[3]
        return None

    def __len__(self) -> int:
        return len(self._heap)

    def __bool__(self) -> bool:
        return bool(self._heap)


_INFINITY = float("inf")
