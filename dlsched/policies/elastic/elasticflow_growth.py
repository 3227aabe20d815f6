"""ElasticFlow's use of leftover GPUs (Gu et al., ASPLOS'23 §4.3): after every admitted job has
its minimum satisfactory share, the remaining GPUs go, one size step at a time, to the job
whose throughput grows most per added GPU (the highest marginal return), among the allowed
(power-of-two) sizes, until GPUs run out or no job gains."""

from __future__ import annotations

import heapq

import numpy as np


def grow(counts: list[int], sizes: list[np.ndarray], rates: list[np.ndarray],
         free: int) -> list[int]:
    """Larger counts for jobs already holding GPUs; ``sizes[j]`` ascending with ``rates[j]``."""
    counts = list(counts)
    heap: list[tuple[float, int]] = []

    def push(job: int) -> None:
        step = _next_step(counts[job], sizes[job], rates[job])
        if step is not None:
            heapq.heappush(heap, (-step[1], job))

    for job, count in enumerate(counts):
        if count > 0:
            push(job)
    while heap and free > 0:
        _, job = heapq.heappop(heap)
        step = _next_step(counts[job], sizes[job], rates[job])
        if step is None:
            continue
        cost = step[0] - counts[job]
        if cost <= free:
            counts[job], free = step[0], free - cost
            push(job)
    return counts


def _next_step(count: int, sizes: np.ndarray, rates: np.ndarray) -> tuple[int, float] | None:
    """The next allowed size above ``count`` and its throughput gain per added GPU."""
    here = np.searchsorted(sizes, count)
    if here + 1 >= len(sizes) or sizes[here] != count:
        return None
    gain = (rates[here + 1] - rates[here]) / (sizes[here + 1] - count)
    return (int(sizes[here + 1]), float(gain)) if gain > 0 else None
