"""The CPUs this process may run on (its affinity mask on Linux, else the machine's count)."""

from __future__ import annotations

import os


def available_cpus() -> int:
    """The CPUs this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1
