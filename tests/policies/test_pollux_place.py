"""Pollux placement (``policies/elastic/pollux_place.py``): interference avoidance and shrinking."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from dlsched.policies.elastic.pollux_place import Request, place

# A distributed job already running with 2 workers on each of nodes 0 and 1 (4 GPUs each).
SPANNING = Request(4, 4, Counter({0: 2, 1: 2}))


@pytest.mark.parametrize(("request_", "capacity", "expected"), [
    # Rule 5 (the artifact's repair): no node has 4 free and both nodes with room hold a
    # distributed job, so the elastic job shrinks onto one of them instead of waiting.
    (Request(4, 1, Counter()), [4, 4], (0, 0)),
    (Request(4, 2, Counter()), [4, 4], (0, 0)),
    (Request(4, 1, Counter()), [4, 5], (1, 1, 1)),
    # Within its bounds only: it needs 3 and no node has 3 free.
    (Request(4, 3, Counter()), [4, 4], ()),
    # A rigid job runs at its size or not at all.
    (Request(4, 4, Counter()), [4, 4], ()),
    # Free nodes without a distributed job are used first (rule 3, unchanged).
    (Request(4, 1, Counter()), [4, 4, 2, 2], (2, 2, 3, 3)),
], ids=["elastic-shrinks", "elastic-low-2", "most-room", "low-too-high", "rigid", "free-nodes"])
def test_job_beside_distributed_jobs(request_: Request, capacity: list[int],
                                     expected: tuple[int, ...]) -> None:
    got = place([SPANNING, request_], np.array(capacity, dtype=np.int64))
    assert got[0] == (0, 0, 1, 1)
    assert got[1] == expected


def test_shrunk_job_does_not_take_a_gpu_twice() -> None:
    requests = [SPANNING, Request(4, 1, Counter()), Request(4, 1, Counter())]
    got = place(requests, np.array([4, 4], dtype=np.int64))
    used = Counter(node for nodes in got for node in nodes)
    assert used == Counter({0: 4, 1: 4})
    assert got[1:] == [(0, 0), (1, 1)]
