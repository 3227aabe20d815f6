"""The cyclic garbage collector paused while a run builds and keeps ~10^5 live objects.

Reference counting still frees every object that is not in a reference cycle; the cyclic
collector, left on, rescans all live objects at each full collection, and a trace read, a
simulation or a run's reports allocate enough to trigger one every few hundred milliseconds
(~10% of a whole Philly run, and one ~0.2 s collection right after the simulation). None of
them makes cycles worth collecting before it ends; the collector resumes afterwards.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def gc_paused() -> Iterator[None]:
    """The cyclic collector off inside the block (nested blocks: the outermost resumes it)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
