"""Wall-clock time for the scheduler core: seconds since the service's epoch.

The epoch is stored in the database, so a restarted service continues one timeline: jobs keep
their submission times and waiting times stay right across restarts.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager


class WallClock:
    """``now()`` = ``time.time() - epoch``, never decreasing (a clock step backwards, e.g. by
    NTP, holds the time still until the wall clock catches up).

    ``frozen()`` holds the time still while the core handles one event or cycle, as the
    simulator's clock does: the core reads ``now`` several times per cycle (the snapshot, then
    when applying starts) and its policies rely on those readings being equal.
    """

    def __init__(self, epoch: float | None = None) -> None:
        self.epoch = time.time() if epoch is None else epoch
        self._last = 0.0
        self._frozen: float | None = None
        self._lock = threading.Lock()

    def now(self) -> float:
        with self._lock:
            if self._frozen is not None:
                return self._frozen
            self._last = max(self._last, time.time() - self.epoch)
            return self._last

    @contextmanager
    def frozen(self) -> Iterator[float]:
        """Nested uses keep the outermost time. Call it holding the service lock."""
        outer = self._frozen
        at = self.now()
        self._frozen = at
        try:
            yield at
        finally:
            self._frozen = outer

    def to_unix(self, seconds: float | None) -> float | None:
        """A time on this clock as a UNIX timestamp (what the API shows)."""
        return None if seconds is None else self.epoch + seconds
