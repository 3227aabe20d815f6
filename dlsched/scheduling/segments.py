"""Each job's runs on the cluster: one segment per start (or resize), from its start to the
moment its GPUs went back (finish, preemption, failure, resize), with the GPUs it held. The core
opens and closes them (``Scheduler._launch`` / ``_release``); ``report/tenant_output.py`` writes
them as ``segments.csv``. Closed segments are kept as columns (typed arrays; the GPUs of all
segments end to end, and one share a segment where all its GPUs' shares are equal, as every
segment of a run without fractions has): ~50 bytes a segment instead of ~230 as objects.

An open segment is its start alone (``starts``): its GPUs and shares are those its job holds
(``holders``, the core's running jobs: a job's allocation changes only where a segment ends
and the next opens). A contended Philly run opens and closes ~10^6 segments (issue 14): no
tuple a start, and the closed ones are folded without packing a share a GPU."""

from __future__ import annotations

from array import array
from collections.abc import Mapping
from dataclasses import dataclass
from itertools import accumulate, chain
from struct import pack
from typing import Protocol


@dataclass(frozen=True, slots=True)
class Segment:
    job_id: str
    start: float
    end: float | None  # None: still running when the run ended
    gpus: tuple[int, ...]
    shares: tuple[float, ...]


_FOLD_EVERY = 1024
_FULL = 1.0  # a whole GPU's share
_ONE = pack("d", _FULL)


class Holder(Protocol):
    """What an open segment's GPUs and shares are read from (``Job``)."""

    allocation: tuple[int, ...]
    shares: tuple[float, ...]


class RunSegments:
    def __init__(self, holders: Mapping[str, Holder] | None = None) -> None:
        self._ids: list[str] = []
        self._start, self._end = array("d"), array("d")
        self._gpus = array("q")
        self._bounds = array("q", [0])  # segment i's GPUs: _gpus[_bounds[i]:_bounds[i + 1]]
        # Segment i's share of each of its GPUs (1.0 without GPUs), unless ``_mixed`` holds
        # its shares (they differ, or are zeros: a sign ``==`` does not see)
        self._share = array("d")
        self._mixed: dict[int, tuple[float, ...]] = {}
        # Open segments: job id -> start (``opened``; the core writes it itself, a dict
        # write a start). Their GPUs and shares are their holders' (by job id).
        self.starts: dict[str, float] = {}
        self._holders: Mapping[str, Holder] = {} if holders is None else holders
        # Segments closed since the last fold into the columns, as (job id, start, end,
        # GPUs, shares): one append a segment; folded a batch at a time (``_fold``), so the
        # columns stay the run's memory (a contended Philly run closes ~10^6 segments).
        self._closing: list[tuple[str, float, float, tuple[int, ...], tuple[float, ...]]] = []

    def opened(self, job_id: str, now: float) -> None:
        """A segment of ``job_id`` opens at ``now`` (its holder holds its GPUs from now)."""
        self.starts[job_id] = now

    def ended(self, job_id: str, now: float, gpus: tuple[int, ...],
              shares: tuple[float, ...]) -> None:
        """The job's open segment closes at ``now``: it held ``gpus`` with ``shares`` (the
        holder's, read before it gives them back)."""
        start = self.starts.pop(job_id, None)
        if start is not None:
            closing = self._closing
            closing.append((job_id, start, now, gpus, shares))
            if len(closing) >= _FOLD_EVERY:
                self._fold()

    def _fold(self) -> None:
        """Move the segments closed since the last fold into the columns, in order. The
        numbers go in as bytes ``struct.pack`` made from them (an array's own ``extend``
        parses each number as a call's argument; numpy's ``fromiter`` steps through an
        iterator a number at a time): the same values, ~2x cheaper than through numpy.
        Where every share is whole (a run without fractions) each segment's share is 1.0,
        told by one ``count`` over them all."""
        closing = self._closing
        if not closing:
            return
        ids, starts, ends, held, shares = zip(*closing, strict=True)
        count = len(ids)
        first = len(self._ids)
        self._ids.extend(ids)
        self._start.frombytes(pack(f"{count}d", *starts))
        self._end.frombytes(pack(f"{count}d", *ends))
        bounds = list(accumulate(map(len, held), initial=self._bounds[-1]))
        flat = bounds[-1] - bounds[0]
        self._gpus.frombytes(pack(f"{flat}q", *chain.from_iterable(held)))
        self._bounds.frombytes(pack(f"{count}q", *bounds[1:]))
        if list(chain.from_iterable(shares)).count(_FULL) == flat:
            self._share.frombytes(_ONE * count)
        else:
            self._fold_shares(first, shares)
        closing.clear()

    def _fold_shares(self, first: int, shares: tuple[tuple[float, ...], ...]) -> None:
        """Each segment's share, its shares kept whole in ``_mixed`` where they differ."""
        column, mixed = self._share, self._mixed
        for index, row in enumerate(shares, first):
            head = float(row[0]) if row else _FULL
            column.append(head)
            if head == 0.0 or row.count(head) != len(row):
                mixed[index] = tuple(map(float, row))

    def _shares_of(self, index: int, size: int) -> tuple[float, ...]:
        """Closed segment ``index``'s shares, one for each of its ``size`` GPUs."""
        row = self._mixed.get(index)
        return (self._share[index],) * size if row is None else row

    @property
    def closed(self) -> list[Segment]:
        """The closed segments in the order they closed."""
        self._fold()
        bounds, gpus, shares_of = self._bounds, self._gpus, self._shares_of
        return [Segment(job_id, start, end, tuple(gpus[bounds[i]:bounds[i + 1]]),
                        shares_of(i, bounds[i + 1] - bounds[i]))
                for i, (job_id, start, end) in enumerate(zip(self._ids, self._start,
                                                             self._end, strict=True))]

    def _open(self) -> list[tuple[str, float, tuple[int, ...], tuple[float, ...]]]:
        """The open segments: (job id, start, GPUs, shares), in the order they opened."""
        holders = self._holders
        return [(job_id, start, holders[job_id].allocation, holders[job_id].shares)
                for job_id, start in self.starts.items()]

    def columns(self) -> tuple[list[str], list[float], list[float | None],
                               list[tuple[int, ...]], list[float]]:
        """``all()`` as columns: job ids, starts, ends (None: open), GPUs and each segment's
        first share (1.0 without GPUs), without making a ``Segment`` per row."""
        self._fold()
        bounds, flat = self._bounds, self._gpus
        still = self._open()
        ids = self._ids + [row[0] for row in still]
        starts = list(self._start) + [row[1] for row in still]
        ends: list[float | None] = [*self._end, *([None] * len(still))]
        gpus = [tuple(flat[bounds[i]:bounds[i + 1]]) for i in range(len(self._ids))]
        gpus += [row[2] for row in still]
        shares = list(self._share)
        shares += [float(row[3][0]) if row[3] else 1.0 for row in still]
        # by start, then job id, then as they were (tuples compared in C: no key call a row)
        order = [i for _, _, i in sorted(zip(starts, ids, range(len(ids)), strict=True))]
        return ([ids[i] for i in order], [starts[i] for i in order], [ends[i] for i in order],
                [gpus[i] for i in order], [shares[i] for i in order])

    def all(self) -> list[Segment]:
        """Closed segments, then those still open, by start time then job id."""
        still = [Segment(j, s, None, g, sh) for j, s, g, sh in self._open()]
        return sorted(self.closed + still, key=lambda s: (s.start, s.job_id))
