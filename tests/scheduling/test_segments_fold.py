"""Closed run segments kept a batch at a time (issue 14): what is read is what was closed."""

from __future__ import annotations

import random
from dataclasses import dataclass

import pytest

from dlsched.scheduling import segments as segments_module
from dlsched.scheduling.segments import RunSegments, Segment

_BATCH = getattr(segments_module, "_FOLD_EVERY", 1024)  # closed segments folded at a time


@dataclass
class _Holder:  # a running job, as far as its segment reads it
    allocation: tuple[int, ...]
    shares: tuple[float, ...]


def _run(closed: int, shares_of, seed: int) -> tuple[RunSegments, list[Segment]]:
    """``closed`` segments opened and closed (three more left open), their shares drawn by
    ``shares_of``; a read in between."""
    chance = random.Random(seed)
    holders: dict[str, _Holder] = {}
    runs, expected = RunSegments(holders), []
    for n in range(closed + 3):  # the last three stay open
        gpus = tuple(chance.sample(range(512), chance.choice((0, 1, 2, 4, 8))))
        shares = shares_of(chance, len(gpus))
        start = chance.uniform(0, 1e6)
        holders[f"j{n}"] = _Holder(gpus, shares)
        runs.opened(f"j{n}", start)
        if n < closed:
            end = start + chance.uniform(0, 1e4)
            runs.ended(f"j{n}", end, gpus, shares)
            del holders[f"j{n}"]
            expected.append(Segment(f"j{n}", start, end, gpus, shares))
        if n == closed // 2:  # a read in between folds what is closed so far
            assert runs.closed == expected
    return runs, expected


def _mixed(chance: random.Random, size: int) -> tuple[float, ...]:
    return tuple(chance.choice((1.0, 0.5, 0.25, 1.0, 1.0)) for _ in range(size))


def _whole(chance: random.Random, size: int) -> tuple[float, ...]:
    return (1.0,) * size


@pytest.mark.parametrize("closed", [0, 1, _BATCH - 1,
                                    _BATCH, 2500],
                         ids=["none", "one", "just-below-a-batch", "one-batch", "batches"])
@pytest.mark.parametrize("shares_of", [_mixed, _whole], ids=["mixed", "whole"])
def test_closed_segments_read_back_as_closed(closed: int, shares_of) -> None:
    runs, expected = _run(closed, shares_of, closed)
    assert runs.closed == expected
    holders = runs._holders
    still = [Segment(f"j{n}", runs.starts[f"j{n}"], None, holders[f"j{n}"].allocation,
                     holders[f"j{n}"].shares) for n in range(closed, closed + 3)]
    assert runs.all() == sorted(expected + still, key=lambda s: (s.start, s.job_id))
    ids, starts, ends, gpus, shares = runs.columns()
    assert list(zip(ids, starts, ends, gpus, shares, strict=True)) == [
        (s.job_id, s.start, s.end, s.gpus, s.shares[0] if s.shares else 1.0)
        for s in runs.all()]


def test_a_closed_segment_keeps_one_share_unless_they_differ() -> None:
    """Segments of whole GPUs keep one share each, not one a GPU (issue 14: the fold of a
    contended run packed ~5 shares a segment); shares that differ, and zeros (whose sign
    ``==`` does not tell), are kept as they were."""
    odd = [(1.0, 0.5), (0.0, 0.0), (-0.0,), (0.5, 0.5), (1, 1), ()]
    holders: dict[str, _Holder] = {}
    runs = RunSegments(holders)
    for n in range(_BATCH + len(odd)):
        shares = odd[n - _BATCH] if n >= _BATCH else (1.0,) * (1 + n % 8)
        runs.opened(f"j{n}", float(n))
        runs.ended(f"j{n}", n + 1.0, tuple(range(len(shares))), shares)
    closed = runs.closed
    assert len(runs._share) == len(closed)  # one a segment
    assert [repr(s.shares) for s in closed[_BATCH:]] == [
        "(1.0, 0.5)", "(0.0, 0.0)", "(-0.0,)", "(0.5, 0.5)", "(1.0, 1.0)", "()"]
    assert all(s.shares == (1.0,) * len(s.gpus) for s in closed[:_BATCH])
