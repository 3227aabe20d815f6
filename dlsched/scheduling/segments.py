"""Each job's runs on the cluster: one segment per start (or resize), from its start to the
moment its GPUs went back (finish, preemption, failure, resize), with the GPUs it held. The core
opens and closes them (``Scheduler._launch`` / ``_release``); ``report/tenant_output.py`` writes
them as ``segments.csv``. Closed segments are kept as columns (typed arrays; the GPUs and shares
of all segments end to end): ~50 bytes a segment instead of ~230 as objects."""

from __future__ import annotations

from array import array
from dataclasses import dataclass
from itertools import accumulate, chain
from operator import itemgetter
from struct import pack


@dataclass(frozen=True, slots=True)
class Segment:
    job_id: str
    start: float
    end: float | None  # None: still running when the run ended
    gpus: tuple[int, ...]
    shares: tuple[float, ...]


_FOLD_EVERY = 1024
# An open segment's (start, GPUs, shares)
_START, _GPUS, _SHARES = itemgetter(0), itemgetter(1), itemgetter(2)


class RunSegments:
    def __init__(self) -> None:
        self._ids: list[str] = []
        self._start, self._end = array("d"), array("d")
        self._gpus, self._shares = array("q"), array("d")
        self._bounds = array("q", [0])  # segment i's GPUs: _gpus[_bounds[i]:_bounds[i + 1]]
        self._open: dict[str, tuple[float, tuple[int, ...], tuple[float, ...]]] = {}
        # Segments closed since the last fold into the columns, as (job id, opening, end):
        # one append a segment; folded a batch at a time (``_fold``), so the columns stay the
        # run's memory (a contended Philly run closes ~10^6 segments).
        self._closing: list[tuple[str, tuple[float, tuple[int, ...], tuple[float, ...]],
                                  float]] = []

    def opened(self, job_id: str, now: float, gpus: tuple[int, ...],
               shares: tuple[float, ...]) -> None:
        self._open[job_id] = (now, gpus, shares)

    def ended(self, job_id: str, now: float) -> None:
        began = self._open.pop(job_id, None)
        if began is not None:
            closing = self._closing
            closing.append((job_id, began, now))
            if len(closing) >= _FOLD_EVERY:
                self._fold()

    def _fold(self) -> None:
        """Move the segments closed since the last fold into the columns, in order. The
        numbers go in as bytes ``struct.pack`` made from them (an array's own ``extend``
        parses each number as a call's argument; numpy's ``fromiter`` steps through an
        iterator a number at a time): the same values, ~2x cheaper than through numpy."""
        closing = self._closing
        if not closing:
            return
        ids, opened, ends = zip(*closing, strict=True)
        count = len(ids)
        self._ids.extend(ids)
        self._start.frombytes(pack(f"{count}d", *map(_START, opened)))
        self._end.frombytes(pack(f"{count}d", *ends))
        held = list(map(_GPUS, opened))
        bounds = list(accumulate(map(len, held), initial=self._bounds[-1]))
        flat = bounds[-1] - bounds[0]
        self._gpus.frombytes(pack(f"{flat}q", *chain.from_iterable(held)))
        self._shares.frombytes(pack(f"{flat}d", *chain.from_iterable(map(_SHARES, opened))))
        self._bounds.frombytes(pack(f"{count}q", *bounds[1:]))
        closing.clear()

    @property
    def closed(self) -> list[Segment]:
        """The closed segments in the order they closed."""
        self._fold()
        bounds, gpus, shares = self._bounds, self._gpus, self._shares
        return [Segment(job_id, start, end, tuple(gpus[bounds[i]:bounds[i + 1]]),
                        tuple(shares[bounds[i]:bounds[i + 1]]))
                for i, (job_id, start, end) in enumerate(zip(self._ids, self._start,
                                                             self._end, strict=True))]

    def columns(self) -> tuple[list[str], list[float], list[float | None],
                               list[tuple[int, ...]], list[float]]:
        """``all()`` as columns: job ids, starts, ends (None: open), GPUs and each segment's
        first share (1.0 without GPUs), without making a ``Segment`` per row."""
        self._fold()
        bounds, flat, flat_shares = self._bounds, self._gpus, self._shares
        ids = self._ids + list(self._open)
        starts = list(self._start) + [began[0] for began in self._open.values()]
        ends: list[float | None] = [*self._end, *([None] * len(self._open))]
        gpus = [tuple(flat[bounds[i]:bounds[i + 1]]) for i in range(len(self._ids))]
        gpus += [began[1] for began in self._open.values()]
        shares = [flat_shares[bounds[i]] if bounds[i + 1] > bounds[i] else 1.0
                  for i in range(len(self._ids))]
        shares += [float(began[2][0]) if began[2] else 1.0 for began in self._open.values()]
        # by start, then job id, then as they were (tuples compared in C: no key call a row)
        order = [i for _, _, i in sorted(zip(starts, ids, range(len(ids)), strict=True))]
        return ([ids[i] for i in order], [starts[i] for i in order], [ends[i] for i in order],
                [gpus[i] for i in order], [shares[i] for i in order])

    def all(self) -> list[Segment]:
        """Closed segments, then those still open, by start time then job id."""
        still = [Segment(j, s, None, g, sh) for j, (s, g, sh) in self._open.items()]
        return sorted(self.closed + still, key=lambda s: (s.start, s.job_id))
