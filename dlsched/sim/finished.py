"""Records of jobs that ended, kept as columns, so that a long run's memory follows the jobs
alive rather than every job seen (issue 14 item 3).

With ``SimConfig.keep_finished=False`` the simulator takes each job out of the core's table
when it reaches a terminal state (finished, failed, cancelled): its ``JobRecord``, which no
longer changes, goes into ``FinishedJobs`` (typed arrays for numbers, shared strings for the
few distinct queue, status and reason texts), and the ``Job`` is freed. At the end
``JobRecords`` presents those rows and the records of the jobs still in the core as one
sequence of ``JobRecord`` in submission order, made on access: the same records, in the same
order, as a run that kept every job.

A job's sizes (``min_gpus``, ``max_gpus``, ``last_gpus``) are columns only once a record
needs them: while every record is a rigid job's (its range is its size, and it last ran at its
size, or never ran: 0), they are derived from ``num_gpus`` and ``first_start`` when read. A run
without elastic jobs (nor jobs resized by a failure) so keeps no column of them: three int64
columns were 24 bytes a job, ~80 MB at 3.4 M jobs (``benchmarks/bench_scale.py``).
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Iterator, Sequence
from dataclasses import fields
from operator import attrgetter
from typing import overload

import numpy as np

from dlsched.sim.result import JobRecord
from dlsched.slots import slot_builder

_NAMES = tuple(f.name for f in fields(JobRecord))
_OPTIONAL = frozenset(("first_start", "finish_time", "deadline", "run_seconds"))  # None: NaN
_INTS = frozenset(("num_gpus", "preemptions", "resizes", "failures", "min_gpus", "max_gpus",
                   "last_gpus"))
_TEXTS = frozenset(("queue", "status", "pending_reason"))
SIZES = ("min_gpus", "max_gpus", "last_gpus")  # columns only once a record needs them
_NUM_AT, _FIRST_AT = _NAMES.index("num_gpus"), _NAMES.index("first_start")
_SIZE_AT = tuple(_NAMES.index(name) for name in SIZES)
_NAN = math.nan
_TEXT, _OPTIONAL_VALUE, _OTHER = "text", "optional", "other"
_CHUNK = 4096  # rows kept before they go to the columns
# Only the optional columns may hold None: the others are not scanned for it.
_KINDS = tuple(_TEXT if name in _TEXTS else _OPTIONAL_VALUE if name in _OPTIONAL else _OTHER
               for name in _NAMES)
_VALUES = attrgetter(*_NAMES)  # a record's fields as one tuple
_record = slot_builder(JobRecord)  # JobRecord(*values), without its frozen __init__


class FinishedJobs:
    """Terminal jobs' records as columns, in the order they ended, each with the job's
    submission number (``seq``). Records come in as rows and go to the columns a chunk at a
    time (one ``extend`` per column instead of one ``append`` per value)."""

    def __init__(self) -> None:
        self._seq = array("q")
        self._columns: dict[str, list | array] = {}
        for name in _NAMES:
            if name in SIZES:
                continue  # ``sized``
            if name == "job_id" or name in _TEXTS:
                self._columns[name] = []
            else:
                self._columns[name] = array("q" if name in _INTS else "d")
        self._texts: dict[str, str] = {}  # one shared object per distinct text
        self._seqs: list[int] = []  # rows not yet in the columns
        self._rows: list[tuple] = []

    def add(self, seq: int, record: JobRecord) -> None:
        self.add_values(seq, _VALUES(record))

    def add_values(self, seq: int, values: tuple) -> None:
        """A record given as its fields, in ``JobRecord``'s order (``result.final_values``)."""
        self._seqs.append(seq)
        self._rows.append(values)
        if len(self._rows) >= _CHUNK:
            self._flush()

    def _flush(self) -> None:
        rows = self._rows
        if not rows:
            return
        fields = list(zip(*rows, strict=True))
        if "last_gpus" not in self._columns and not _rigid(fields):
            self._size_columns()
        self._seq.extend(self._seqs)
        texts, columns = self._texts, self._columns
        for name, kind, values in zip(_NAMES, _KINDS, fields, strict=True):
            if name not in columns:
                continue  # a size, derived (``sized``)
            if kind is _TEXT:
                values = [texts.setdefault(value, value) for value in values]
            elif kind is _OPTIONAL_VALUE and None in values:
                values = [_NAN if value is None else value for value in values]
            columns[name].extend(values)
        self._seqs, self._rows = [], []

    @property
    def sized(self) -> bool:
        """Whether the sizes are columns (a record that is not a rigid job's came: module
        docstring); otherwise ``column`` derives them."""
        return "last_gpus" in self.columns

    def _size_columns(self) -> None:
        """Make the sizes columns, with the derived values of the rows already in."""
        for name in SIZES:
            self._columns[name] = self._rigid_sizes(name)

    def _rigid_sizes(self, name: str) -> array:
        """A size column of the rows in the columns, each a rigid job's: its size, or for
        ``last_gpus``, its size if it ran (a start time: not NaN), else 0."""
        sizes = self._columns["num_gpus"]
        if name != "last_gpus":
            return array("q", sizes)
        return array("q", [gpus if start == start else 0
                           for gpus, start in zip(sizes, self._columns["first_start"],
                                                  strict=True)])

    def column(self, name: str) -> list | array:
        """A field's column: stored, or a size derived now (``sized``)."""
        columns = self.columns
        return columns[name] if name in columns else self._rigid_sizes(name)

    @property
    def seq(self) -> array:
        self._flush()
        return self._seq

    @property
    def columns(self) -> dict[str, list | array]:
        self._flush()
        return self._columns

    def __len__(self) -> int:
        return len(self._seq) + len(self._rows)

    def row(self, index: int) -> JobRecord:
        columns = self.columns
        values = []
        for name in _NAMES:
            if name not in columns:  # a rigid job's size (``sized``)
                gpus = columns["num_gpus"][index]
                ran = columns["first_start"][index] == columns["first_start"][index]
                values.append(gpus if name != "last_gpus" or ran else 0)
                continue
            value = columns[name][index]
            if name in _OPTIONAL and value != value:  # NaN: None
                value = None
            values.append(value)
        return _record(*values)


def _rigid(fields: list[tuple]) -> bool:
    """Whether every row of a chunk (given as its fields' tuples) has a rigid job's sizes:
    ``min_gpus`` = ``max_gpus`` = ``num_gpus``, and ``last_gpus`` that too if it ran, else 0
    (tuple comparisons: one pass in C per field, but where a job never ran)."""
    sizes, low, high, last = (fields[_NUM_AT], *(fields[at] for at in _SIZE_AT))
    if low != sizes or high != sizes:
        return False
    starts = fields[_FIRST_AT]
    if None not in starts:
        return last == sizes
    return last == tuple(gpus if start is not None else 0
                         for gpus, start in zip(sizes, starts, strict=True))


class JobRecords(Sequence[JobRecord]):
    """Every job's record in submission order: the finished ones' rows and the ``live``
    records (jobs still waiting or running at the end, each with its submission number), made
    on access."""

    def __init__(self, finished: FinishedJobs, live: Sequence[tuple[int, JobRecord]]) -> None:
        self.finished = finished
        self.live = [record for _, record in live]
        seqs = np.concatenate((np.frombuffer(finished.seq, dtype=np.int64) if len(finished)
                               else np.zeros(0, np.int64),
                               np.asarray([seq for seq, _ in live], dtype=np.int64)))
        # Rows of ``finished`` as themselves, live records as len(finished) + their index.
        self._order = np.argsort(seqs, kind="stable").tolist()

    def __len__(self) -> int:
        return len(self._order)

    @overload
    def __getitem__(self, index: int) -> JobRecord: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[JobRecord]: ...

    def __getitem__(self, index: int | slice) -> JobRecord | Sequence[JobRecord]:
        if isinstance(index, slice):
            return tuple(self._at(i) for i in self._order[index])
        return self._at(self._order[index])

    def _at(self, where: int) -> JobRecord:
        done = len(self.finished)
        return self.finished.row(where) if where < done else self.live[where - done]

    def __iter__(self) -> Iterator[JobRecord]:
        done, live = len(self.finished), self.live
        columns = [self.finished.column(name) for name in _NAMES]
        optional = [name in _OPTIONAL for name in _NAMES]
        for where in self._order:
            if where >= done:
                yield live[where - done]
                continue
            values = [column[where] for column in columns]
            for i, is_optional in enumerate(optional):
                if is_optional and values[i] != values[i]:
                    values[i] = None
            yield _record(*values)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Sequence) and not isinstance(other, str):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other,
                                                                            strict=True))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

