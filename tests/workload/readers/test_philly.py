"""Philly reader: real rows, the vectorised path against the row path, malformed input."""

from __future__ import annotations

from pathlib import Path

import pytest
from reader_checks import Writer, bad_third_line, expect_error

from dlsched.errors import InputError
from dlsched.workload.readers import ReaderOptions, detect_format, read_trace
from dlsched.workload.readers.philly import PhillyReader

HEADER = "timestamp,duration,num_gpus,gpu_time,cluster"
GOOD = "2017-10-09 07:01:55,66.0,1,66.0,11cb48"


@pytest.fixture
def philly(shared_data: Path) -> Path:
    return shared_data / "traces/philly/philly.csv"


def test_whole_file_reads_with_the_rows_as_written(philly: Path) -> None:
    # Its speed is measured by benchmarks/bench_philly.py, not here.
    trace = read_trace(philly)
    assert len(trace) == 82247 and trace.format == "philly" and trace.skipped == 0
    first = {j.job_id: j for j in trace.jobs}["philly-1"]  # line 2 of the file
    assert (first.num_gpus, first.work, first.queue, first.pool) == (1, 66.0, "11cb48", "11cb48")
    assert trace.jobs[0].submit_time == 0


@pytest.mark.parametrize("limit", [1, 50, 2500], ids=["one", "fifty", "head"])
def test_vectorised_path_equals_row_path(philly: Path, limit: int) -> None:
    options = ReaderOptions(limit=limit)
    reader = PhillyReader()
    assert reader.read(philly, options) == reader.read_rows(philly, options)


def test_blank_line_keeps_line_numbered_ids(write) -> None:
    path = write("p.csv", f"{HEADER}\n{GOOD}\n\n2017-10-09 08:00:00,10,2,20,vc\n")
    trace = read_trace(path)
    assert [j.job_id for j in trace.jobs] == ["philly-1", "philly-3"]


def test_detect_format(philly: Path) -> None:
    assert detect_format(philly) == "philly"


@pytest.mark.parametrize("text", ["", "\n\n", "  \n"])
def test_an_empty_file_is_told_as_empty_without_a_format(tmp_path: Path, text: str) -> None:
    """Not 'unknown trace format ... columns were ['']'."""
    path = tmp_path / "empty.csv"
    path.write_text(text)
    with pytest.raises(InputError, match="empty.csv:1: empty file: no header, no jobs"):
        read_trace(path)


ROW_CASES = [
    pytest.param("2017-10-09 07:01:55,abc,1,66.0,vc", "duration", None, id="bad-number"),
    pytest.param("2017-10-09 07:01:55,-5,1,66.0,vc", "duration", None, id="negative-duration"),
    pytest.param("2017-10-09 07:01:55,5,0,66.0,vc", "num_gpus", None, id="zero-gpus"),
    pytest.param("2017-10-09 07:01:55,5,1.5,66.0,vc", "num_gpus", None, id="fractional-gpus"),
    pytest.param("2017-13-09 07:01:55,5,1,66.0,vc", "timestamp", None, id="bad-date"),
    pytest.param("2017-10-09 07:01:55,5,1,66.0,", "cluster", None, id="missing-vc"),
    pytest.param("2017-10-09 07:01:55,5,16,66.0,vc", "num_gpus", ReaderOptions(max_gpus=8),
                 id="more-gpus-than-cluster"),
]


@pytest.mark.parametrize("row, field, options", ROW_CASES)
def test_bad_row_is_located_or_skipped(write: Writer, row: str, field: str,
                                       options: ReaderOptions | None) -> None:
    path = write("p.csv", f"{HEADER}\n{GOOD}\n{row}\n")
    bad_third_line(path, "philly", field, options)


@pytest.mark.parametrize("header, field", [
    pytest.param(f"{HEADER},extra", "extra", id="unknown-column"),
    pytest.param("timestamp,duration,num_gpus,cluster", "gpu_time", id="missing-column"),
])
def test_bad_header_fails_on_line_1(write: Writer, header: str, field: str) -> None:
    path = write("p.csv", f"{header}\n{GOOD}\n")
    expect_error(path, "philly", 1, field)
