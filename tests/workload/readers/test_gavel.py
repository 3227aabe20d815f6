"""Gavel readers (header-less): real rows, sniffing, malformed input."""

from __future__ import annotations

from pathlib import Path

import pytest
from reader_checks import Writer, expect_error, skip_counts

from dlsched.workload.job import WorkUnit
from dlsched.workload.readers import ReaderOptions, detect_format, read_trace
from dlsched.workload.readers.gavel import parse_job_type

T = "\t"
PHYSICAL_GOOD = T.join(["ResNet-18 (batch size 128)", "python3 main.py", "cifar10", "--num_steps",
                        "1", "1000", "2", "1", "-1.000000", "0"])
PHILLY_GOOD = T.join(["LM (batch size 20)", "python main.py", "--steps", "1", "5000",
                      "10.000000", "1"])


def _physical(**changes: str) -> str:
    names = ["job_type", "command", "working_directory", "num_steps_arg", "needs_data_dir",
             "total_steps", "scale_factor", "priority_weight", "SLO", "arrival_time"]
    values = dict(zip(names, PHYSICAL_GOOD.split(T), strict=True)) | changes
    return T.join(values[n] for n in names)


def test_physical_cluster_rows_as_written(shared_data: Path) -> None:
    trace = read_trace(shared_data / "traces/gavel/physical_cluster/max_min_fairness.trace")
    assert trace.format == "gavel" and trace.throughput == "gavel" and len(trace) == 96
    job = {j.job_id: j for j in trace.jobs}["max_min_fairness-0"]
    assert (job.model, job.batch_size, job.num_gpus) == ("ResNet-18", 128, 4)
    assert (job.work, job.work_unit, job.submit_time) == (925982, WorkUnit.ITERATIONS, 0)


def test_msr_philly_rows_as_written(shared_data: Path) -> None:
    trace = read_trace(shared_data / "traces/gavel/msr-philly/seed0/6214e9.trace",
                       options=ReaderOptions(limit=3))
    assert trace.format == "gavel-philly" and trace.throughput == "gavel"
    first, second = trace.jobs[0], trace.jobs[1]
    assert (first.job_id, first.model, first.batch_size) == ("6214e9-0", "Transformer", 128)
    assert (first.work, first.num_gpus, first.queue) == (20851471, 1, "6214e9")
    assert (second.model, second.batch_size, second.submit_time) == ("Recommendation", 8192,
                                                                     266564)


@pytest.mark.parametrize("relative, fmt", [
    pytest.param("traces/gavel/physical_cluster/small_test.trace", "gavel", id="physical"),
    pytest.param("traces/gavel/msr-philly/seed0/ee9e8c.trace", "gavel-philly", id="msr-philly"),
])
def test_detect_format_sniffs(shared_data: Path, relative: str, fmt: str) -> None:
    assert detect_format(shared_data / relative) == fmt


@pytest.mark.parametrize("job_type, expected", [
    pytest.param("ResNet-50 (batch size 64)", ("ResNet-50", 64), id="with-batch"),
    pytest.param("A3C", ("A3C", None), id="no-batch"),
])
def test_parse_job_type(job_type: str, expected: tuple[str, int | None]) -> None:
    assert parse_job_type(job_type) == expected


PHYSICAL_ROWS = [
    pytest.param(_physical(total_steps="many"), "total_steps", None, id="bad-number"),
    pytest.param(_physical(arrival_time="-4"), "arrival_time", None, id="negative-arrival"),
    pytest.param(_physical(scale_factor="0"), "scale_factor", None, id="zero-gpus"),
    pytest.param(_physical(needs_data_dir="2"), "needs_data_dir", None, id="bad-flag"),
    pytest.param(_physical(priority_weight="1.5"), "priority_weight", None, id="odd-weight"),
    pytest.param(_physical(SLO="2.0"), "SLO", None, id="slo-unsupported"),
    pytest.param(_physical(scale_factor="16"), "scale_factor", ReaderOptions(max_gpus=8),
                 id="too-many-gpus"),
]


@pytest.mark.parametrize("row, field, options", PHYSICAL_ROWS)
def test_physical_bad_row(write: Writer, row: str, field: str,
                          options: ReaderOptions | None) -> None:
    path = write("x.trace", f"{PHYSICAL_GOOD}\n{row}\n")
    expect_error(path, "gavel", 2, field, options)
    skip_counts(path, "gavel", 1, options)


@pytest.mark.parametrize("row", [
    pytest.param(PHYSICAL_GOOD + T + "extra", id="extra-field"),
    pytest.param(T.join(PHYSICAL_GOOD.split(T)[:9]), id="missing-field"),
])
def test_wrong_field_count_names_its_line(write: Writer, row: str) -> None:
    path = write("x.trace", f"{PHYSICAL_GOOD}\n{row}\n")
    expect_error(path, "gavel", 2, None)


def test_msr_philly_bad_row(write: Writer) -> None:
    bad = PHILLY_GOOD.replace("5000", "-5000")
    path = write("vc.trace", f"{PHILLY_GOOD}\n{bad}\n")
    expect_error(path, "gavel-philly", 2, "total_steps")
    trace = skip_counts(path, "gavel-philly", 1)
    assert trace.jobs[0].queue == "vc"


def test_unrecognised_headerless_file_is_refused(write: Writer) -> None:
    path = write("x.trace", "just\tsome\twords\n")
    expect_error(path, None, 1, None)
