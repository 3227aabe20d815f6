"""The Philly reader's vectorised path and its row-by-row path give the same jobs or the same
error, whatever the file (issue 12 item 4: the fast path once accepted pre-1970 times the row
path refused). A hypothesis property over files built from awkward values."""

from __future__ import annotations

import tempfile
from datetime import datetime
from pathlib import Path

from hypothesis import example, given, settings
from hypothesis import strategies as st

from dlsched.errors import InputError
from dlsched.workload.readers import ReaderOptions
from dlsched.workload.readers.philly import COLUMNS, PhillyReader

TIMES = st.one_of(
    st.datetimes().map(lambda t: t.strftime("%Y-%m-%d %H:%M:%S").rjust(19, "0")),
    st.sampled_from(["2017-10-09 07:01:55", "1969-12-31 23:59:59", "1677-09-21 00:12:43",
                     "2017-10-09T07:01:55", "2017-10-09 7:01:55 ", "2017-10-09 07:01:55+01:00",
                     "2017-02-30 00:00:00", "2017-10-09", "20171009T070155", " 2017-10-09 07:01:5",
                     '"2017-10-09 07:01:55"', "2017-10-09 07:01:60", "0001-01-01 00:00:00"]),
)
NUMBERS = st.one_of(
    st.integers(-3, 10**6).map(str), st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.sampled_from(["1", " 2", "3 ", "1_000", "1e3", "+5", "0x10", "\u0661\u0662", "nan",
                     "-0", "1e16", "4.0", "4.5", "", '"7"', "1e400"]),
)
QUEUES = st.one_of(st.sampled_from(["vc1", "6214e9", " vc2 ", "", "v c", '"vc,1"', "é"]),
                   st.text(max_size=6))


CLEAN = (st.datetimes(min_value=datetime(1970, 1, 2), max_value=datetime(2100, 1, 1))
         .map(lambda t: t.strftime("%Y-%m-%d %H:%M:%S")),
         st.floats(0.5, 1e6).map(lambda x: f"{x:.1f}"), st.integers(1, 8).map(str),
         st.integers(0, 10**6).map(str), st.sampled_from(["vc1", "6214e9", "11cb48"]))
AWKWARD = (TIMES, NUMBERS, NUMBERS, NUMBERS, QUEUES)


@st.composite
def philly_files(draw: st.DrawFn) -> bytes:
    """Clean files (the fast path's) and files one awkward value or line away from clean."""
    count = draw(st.integers(0, 5))
    odd = draw(st.none() | st.tuples(st.integers(0, max(count - 1, 0)), st.integers(0, 4)))
    rows = [",".join(draw(AWKWARD[c] if odd == (r, c) else CLEAN[c]) for c in range(5))
            for r in range(count)]
    if draw(st.integers(0, 4)) == 0:
        rows.insert(draw(st.integers(0, len(rows))), draw(st.sampled_from(["", " ", "a,b"])))
    text = ",".join(COLUMNS) + "\n" + "\n".join(rows) + draw(st.sampled_from(["", "\n", "\n\n"]))
    if draw(st.integers(0, 4)) == 0:
        text = text.replace("\n", "\r\n")
    bom = "\ufeff" if draw(st.integers(0, 4)) == 0 else ""
    return (bom + text).encode("utf-8", "surrogatepass")


def _outcome(read, path: Path, options: ReaderOptions) -> object:
    try:
        return read(path, options).jobs
    except InputError as exc:
        return str(exc)


ROW = "timestamp,duration,num_gpus,gpu_time,cluster\n{},1.0,1,0,vc1\n"


@settings(max_examples=150)
@example(data=ROW.format("2017-10-09 07:01:60").encode(), limit=None, skip=False, cap=None)
@example(data=ROW.format("2017-02-30 00:00:00").encode(), limit=None, skip=False, cap=None)
@example(data=ROW.format("1969-12-31 23:59:59").encode(), limit=None, skip=True, cap=None)
@example(data=ROW.format("2017-10-09 24:00:00").encode(), limit=None, skip=False, cap=None)
@given(data=philly_files(), limit=st.sampled_from([None, 1, 3]),
       skip=st.booleans(), cap=st.sampled_from([None, 4]))
def test_fast_path_equals_row_path(data: bytes, limit: int | None, skip: bool,
                                   cap: int | None) -> None:
    reader = PhillyReader()
    options = ReaderOptions(skip_invalid=skip, max_gpus=cap, limit=limit)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "philly.csv"
        path.write_bytes(data)
        assert _outcome(reader.read, path, options) == _outcome(reader.read_rows, path, options)
