"""ITP raw and ElasticFlow readers: real rows, detection, malformed input."""

from __future__ import annotations

from pathlib import Path

import pytest
from reader_checks import Writer, expect_error, skip_counts

from dlsched.workload.readers import ReaderOptions, detect_format, read_trace

ITP_HEADER = "job_id,submission_time,duration,num_gpu"
EF_HEADER = "job_id,submission_time,num_iteration,model_name,deadline,batch_size,num_gpu,duration"
EF_GOOD = "a,100,3249,deepspeech2,700,32,1,1075"


def test_raw_rows_as_written(shared_data: Path) -> None:
    path = shared_data / "traces/itp/raw/cluster01.csv"
    trace = read_trace(path, "itp")
    assert len(trace) == 1595 and trace.format == "itp"
    first, second = trace.jobs[0], trace.jobs[1]
    assert first.job_id == "965d744f-0445-c1a8-12af-97e4c536c66e"
    assert (first.submit_time, first.num_gpus, first.work) == (0, 64, 2429)
    assert second.job_id == "fb10987f-20ac-3703-eb67-146a77a6e17c"
    assert (second.submit_time, second.num_gpus, second.work) == (2000581 - 1932025, 1, 1532)


def test_elasticflow_keeps_deadline_on_the_rebased_clock(shared_data: Path) -> None:
    trace = read_trace(shared_data / "traces/itp/elasticflow/195job.csv")
    assert trace.format == "elasticflow" and len(trace) == 195
    job = {j.job_id: j for j in trace.jobs}["bdd640fb-0667-1ad1-1c80-317fa3b1799d"]
    assert (job.submit_time, job.deadline) == (0, 3716178 - 3715485)
    assert (job.model, job.batch_size, job.num_gpus, job.work) == ("deepspeech2", 32, 1, 1075)


def test_elasticflow_head_of_a_big_cluster(shared_data: Path) -> None:
    trace = read_trace(shared_data / "traces/itp/elasticflow/cluster04.csv",
                       options=ReaderOptions(limit=100))
    assert len(trace) == 100 and all(j.deadline > j.submit_time for j in trace.jobs)


@pytest.mark.parametrize("relative, fmt", [
    pytest.param("traces/itp/raw/cluster05.csv", "itp", id="raw"),
    pytest.param("traces/itp/elasticflow/cluster05.csv", "elasticflow", id="elasticflow"),
    pytest.param("traces/itp/elasticflow/195job.csv", "elasticflow", id="testbed"),
])
def test_detect_format(shared_data: Path, relative: str, fmt: str) -> None:
    assert detect_format(shared_data / relative) == fmt


ITP_ROWS = [
    pytest.param("b,10,abc,1", "duration", None, id="bad-number"),
    pytest.param("b,10,-3,1", "duration", None, id="negative-duration"),
    pytest.param("b,10,30,0", "num_gpu", None, id="zero-gpus"),
    pytest.param("b,-1,30,1", "submission_time", None, id="negative-submit"),
    pytest.param(",10,30,1", "job_id", None, id="missing-id"),
    pytest.param("b,10,30,64", "num_gpu", ReaderOptions(max_gpus=32), id="too-many-gpus"),
]


@pytest.mark.parametrize("row, field, options", ITP_ROWS)
def test_raw_bad_row(write: Writer, row: str, field: str,
                     options: ReaderOptions | None) -> None:
    path = write("itp.csv", f"{ITP_HEADER}\na,0,20,1\n{row}\n")
    expect_error(path, "itp", 3, field, options)
    skip_counts(path, "itp", 1, options)


EF_ROWS = [
    pytest.param("b,100,10,bert,50,32,1,20", "deadline", id="deadline-before-submit"),
    pytest.param("b,100,0,bert,500,32,1,20", "num_iteration", id="zero-iterations"),
    pytest.param("b,100,10,bert,500,x,1,20", "batch_size", id="bad-batch-size"),
    pytest.param("b,100,10,,500,32,1,20", "model_name", id="missing-model"),
]


@pytest.mark.parametrize("row, field", EF_ROWS)
def test_elasticflow_bad_row(write: Writer, row: str, field: str) -> None:
    path = write("ef.csv", f"{EF_HEADER}\n{EF_GOOD}\n{row}\n")
    expect_error(path, "elasticflow", 3, field)
    skip_counts(path, "elasticflow", 1)


@pytest.mark.parametrize("header, row, field", [
    pytest.param(f"{ITP_HEADER},user", "a,0,20,1,u", "user", id="unknown-column"),
    pytest.param("job_id,submission_time,num_gpu", "a,0,1", "duration", id="missing-column"),
])
def test_raw_bad_header(write: Writer, header: str, row: str, field: str) -> None:
    path = write("itp.csv", f"{header}\n{row}\n")
    expect_error(path, "itp", 1, field)


def test_short_row_names_its_line(write: Writer) -> None:
    path = write("itp.csv", f"{ITP_HEADER}\na,0,20,1\nb,5,7\n")
    expect_error(path, "itp", 3, None)
