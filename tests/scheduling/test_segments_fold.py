"""Closed run segments kept a batch at a time (issue 14): what is read is what was closed."""

from __future__ import annotations

import random

import pytest

from dlsched.scheduling import segments as segments_module
from dlsched.scheduling.segments import RunSegments, Segment

_BATCH = getattr(segments_module, "_FOLD_EVERY", 1024)  # closed segments folded at a time


@pytest.mark.parametrize("closed", [0, 1, _BATCH - 1,
                                    _BATCH, 2500],
                         ids=["none", "one", "just-below-a-batch", "one-batch", "batches"])
def test_closed_segments_read_back_as_closed(closed: int) -> None:
    chance = random.Random(closed)
    runs, expected = RunSegments(), []
    for n in range(closed + 3):  # the last three stay open
        gpus = tuple(chance.sample(range(512), chance.choice((1, 2, 4, 8))))
        shares = tuple(chance.choice((1.0, 0.5, 0.25)) for _ in gpus)
        start = chance.uniform(0, 1e6)
        runs.opened(f"j{n}", start, gpus, shares)
        if n < closed:
            end = start + chance.uniform(0, 1e4)
            runs.ended(f"j{n}", end)
            expected.append(Segment(f"j{n}", start, end, gpus, shares))
        if n == closed // 2:  # a read in between folds what is closed so far
            assert runs.closed == expected
    assert runs.closed == expected
    still = [Segment(f"j{n}", s, None, g, sh) for n, (s, g, sh) in
             ((n, runs._open[f"j{n}"]) for n in range(closed, closed + 3))]
    assert runs.all() == sorted(expected + still, key=lambda s: (s.start, s.job_id))
    ids, starts, ends, gpus, shares = runs.columns()
    assert list(zip(ids, starts, ends, gpus, shares, strict=True)) == [
        (s.job_id, s.start, s.end, s.gpus, s.shares[0]) for s in runs.all()]
