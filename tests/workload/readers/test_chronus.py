"""Chronus reader: minutes to seconds, deadlines by job type, real rows, bad input."""

from __future__ import annotations

from pathlib import Path

import pytest
from reader_checks import Writer, bad_third_line, expect_error

from dlsched.workload.readers import ReaderOptions, detect_format, read_trace
from dlsched.workload.readers.chronus import NO_GPU

HEADER = ("job_id,user,num_gpu,submit_time,iterations,model_name,duration,interval,"
          "expect_time_list,expect_value_list,best_effort,job_type")
GOOD = "0,vc_a,1,10,500,vgg16,30,5,40,10,0,strict"


@pytest.fixture
def mix2(shared_data: Path) -> Path:
    return shared_data / "traces/chronus/trace_job_Philly_MIX2.csv"


def test_rows_as_written(mix2: Path) -> None:
    trace = read_trace(mix2, options=ReaderOptions(limit=3))
    jobs = {j.job_id: j for j in trace.jobs}
    soft, strict = jobs["0"], jobs["1"]  # submitted at minutes 5601 and 7505
    assert (soft.submit_time, soft.deadline, soft.work) == (0, 159 * 60, 96 * 60)
    assert (soft.queue, soft.model, soft.priority, soft.num_gpus) == ("ed69ec", "mobilenet_v2",
                                                                      1, 1)
    assert (strict.submit_time, strict.deadline) == ((7505 - 5601) * 60, (7505 + 235 - 5601) * 60)
    assert jobs["2"].num_gpus == 4


def test_best_effort_has_no_deadline(shared_data: Path) -> None:
    trace = read_trace(shared_data / "traces/chronus/trace_job_Philly_MIX1.csv",
                       options=ReaderOptions(limit=3))
    best = {j.job_id: j for j in trace.jobs}["2"]
    assert (best.deadline, best.priority, best.queue) == (None, 0, "ee9e8c")


def test_zero_gpu_jobs_are_dropped_and_counted(write: Writer) -> None:
    path = write("c.csv", f"{HEADER}\n{GOOD}\n1,vc_a,0,12,500,vgg16,30,5,40,10,0,strict\n")
    trace = read_trace(path)
    assert len(trace) == 1 and trace.skipped == 0
    assert f"dropped 1 row: {NO_GPU}" in trace.warnings[0]


def test_detect_format(mix2: Path) -> None:
    assert detect_format(mix2) == "chronus"


BAD_ROWS = [
    pytest.param("1,vc_a,1,x,500,vgg16,30,5,40,10,0,strict", "submit_time", None,
                 id="bad-number"),
    pytest.param("1,vc_a,1,10,500,vgg16,-30,5,40,10,0,strict", "duration", None,
                 id="negative-duration"),
    pytest.param("1,vc_a,1,10,500,vgg16,30,5,40,10,0,urgent", "job_type", None,
                 id="unknown-type"),
    pytest.param("1,vc_a,1,10,500,vgg16,30,5,40,10,1,strict", "best_effort", None,
                 id="contradicting-flag"),
    pytest.param("1,vc_a,1,10,500,vgg16,30,5,40-x,10-8,0,soft", "expect_time_list", None,
                 id="bad-list"),
    pytest.param("1,vc_a,1,10,500,vgg16,30,5,40-50,10,0,soft", "expect_value_list", None,
                 id="list-lengths"),
    pytest.param("1,vc_a,1,10,500,vgg16,30,5,50-40,10-8,0,soft", "expect_time_list", None,
                 id="decreasing-times"),
    pytest.param("1,vc_a,16,10,500,vgg16,30,5,40,10,0,strict", "num_gpu",
                 ReaderOptions(max_gpus=8), id="too-many-gpus"),
]


@pytest.mark.parametrize("row, field, options", BAD_ROWS)
def test_bad_row(write: Writer, row: str, field: str, options: ReaderOptions | None) -> None:
    path = write("c.csv", f"{HEADER}\n{GOOD}\n{row}\n")
    bad_third_line(path, "chronus", field, options)


@pytest.mark.parametrize("header, row, field", [
    pytest.param(f"{HEADER},gpu_type", f"{GOOD},V100", "gpu_type", id="unknown-column"),
    pytest.param(HEADER.replace(",interval", ""), GOOD.replace(",5,40", ",40"), "interval",
                 id="missing-column"),
])
def test_bad_header(write: Writer, header: str, row: str, field: str) -> None:
    path = write("c.csv", f"{header}\n{row}\n")
    expect_error(path, "chronus", 1, field)
