"""Alibaba GPU-disaggregated DLRM trace (2025) reader: rows by hand, scope rules, the real
file when the shared data is there, malformed input."""

from __future__ import annotations

from pathlib import Path

import pytest
from reader_checks import Writer, bad_third_line, expect_error

from dlsched.workload.job import JobKind
from dlsched.workload.readers import ReaderOptions, detect_format, read_trace
from dlsched.workload.readers.alibaba_dlrm import CPU_NODE, NO_RUN_TIME

FMT = "alibaba-dlrm-2025"
HEADER = ("instance_sn,role,app_name,cpu_request,cpu_limit,gpu_request,gpu_limit,rdma_request,"
          "rdma_limit,memory_request,memory_limit,disk_request,disk_limit,max_instance_per_node,"
          "creation_time,scheduled_time,deletion_time")
GOOD = "i1,HN,app_0,12,12,1,1,25,25,120.0,120.0,680.0,800.0,8,100.0,160.0,1160.0"
ROWS = [
    GOOD,
    "i0,HN,app_0,16,16,2,2,25,25,240.0,240.0,680.0,800.0,8,,,",  # the whole trace
    "i2,CN,app_130,64,64,0,0,1,1,320.0,320.0,255.0,300.0,-1,1435.0,1435.0,1560.0",
    "i3,HN,app_1,8,8,1,1,25,25,96.0,96.0,680.0,800.0,2,,,900.0",  # from before the trace
    "i4,HN,app_1,8,8,1,1,25,25,96.0,96.0,680.0,800.0,2,1500.0,1500.0,",  # past its end
    "i5,HN,app_1,8,8,1,1,25,25,96.0,96.0,680.0,800.0,2,300.0,300.0,300.0",  # no run time
]


def test_rows_by_hand(write: Writer) -> None:
    trace = read_trace(write("dlrm.csv", HEADER + "\n" + "\n".join(ROWS) + "\n"))
    assert trace.format == FMT and trace.skipped == 0
    jobs = {j.job_id: j for j in trace.jobs}
    assert sorted(jobs) == ["i0", "i1", "i3", "i4"]
    # i1: created at 100, scheduled at 160, deleted at 1160: 1,000 s of work
    assert (jobs["i1"].submit_time, jobs["i1"].work, jobs["i1"].num_gpus) == (100.0, 1000.0, 1)
    assert (jobs["i1"].cpus_per_gpu, jobs["i1"].memory_gb_per_gpu) == (12.0, 120.0)
    assert jobs["i1"].kind is JobKind.SERVICE and jobs["i1"].priority == 2
    assert jobs["i1"].model == "app_0"
    # the app's anti-affinity: at most 8 (app_0) or 2 (app_1) instances of it on a node
    assert (jobs["i1"].group, jobs["i1"].max_per_node) == ("app_0", 8)
    assert (jobs["i3"].group, jobs["i3"].max_per_node) == ("app_1", 2)
    # no times at all: there for the whole trace, which ends at the file's latest time (1,560:
    # the CPU-node instance's deletion; dropped rows count too)
    assert (jobs["i0"].submit_time, jobs["i0"].work) == (0.0, 1560.0)
    assert jobs["i0"].cpus_per_gpu == 8.0 and jobs["i0"].memory_gb_per_gpu == 120.0
    assert (jobs["i3"].submit_time, jobs["i3"].work) == (0.0, 900.0)
    assert (jobs["i4"].submit_time, jobs["i4"].work) == (1500.0, 60.0)
    assert any(f"dropped 1 row: {CPU_NODE}" in w for w in trace.warnings)
    assert any(f"dropped 1 row: {NO_RUN_TIME}" in w for w in trace.warnings)


def test_an_instance_created_at_the_traces_end_without_a_deletion_runs_nothing(
        write: Writer) -> None:
    # i4 is created at the file's latest time and outlives the trace: no run time is known
    late = ROWS[4].replace("1500.0,1500.0,", "2000.0,2000.0,")
    trace = read_trace(write("dlrm.csv", f"{HEADER}\n{GOOD}\n{late}\n"))
    assert [j.job_id for j in trace.jobs] == ["i1"]
    assert any(NO_RUN_TIME in w for w in trace.warnings)


def test_the_real_trace(shared_data: Path) -> None:
    path = shared_data / "traces/alibaba-dlrm-2025/disaggregated_DLRM_trace.csv"
    assert detect_format(path) == FMT
    trace = read_trace(path)
    # 7,386 HN instances, 16 of them deleted the second they were scheduled
    assert len(trace) == 7386 - 16 and trace.skipped == 0
    assert any(f"dropped 16485 rows: {CPU_NODE}" in w for w in trace.warnings)
    assert {j.num_gpus for j in trace.jobs} == {1}
    assert max(j.submit_time + j.work for j in trace.jobs) <= 2677541.0


BAD_ROWS = [
    pytest.param(GOOD.replace(",HN,", ",GN,"), "role", None, id="unknown-role"),
    pytest.param(GOOD.replace(",1,1,25,", ",x,1,25,"), "gpu_request", None, id="bad-number"),
    pytest.param(GOOD.replace(",1,1,25,", ",0.5,1,25,"), "gpu_request", None,
                 id="fractional-gpu"),
    pytest.param(GOOD.replace("100.0,160.0,", "200.0,160.0,"), "scheduled_time", None,
                 id="scheduled-before-created"),
    pytest.param(GOOD.replace("100.0,160.0,", ",160.0,"), "creation_time", None,
                 id="only-one-start-time"),
    pytest.param(GOOD.replace(",1160.0", ",150.0"), "deletion_time", None,
                 id="deleted-before-scheduled"),
    pytest.param(GOOD.replace(",8,100.0", ",-2,100.0"), "max_instance_per_node", None,
                 id="bad-density-limit"),
    pytest.param(GOOD.replace(",25,25,", ",-1,25,"), "rdma_request", None,
                 id="negative-rdma"),
    pytest.param(GOOD.replace("i1,HN,app_0,12,", "i1,HN,app_0,96,"), "cpu_request",
                 ReaderOptions(max_cpus=64), id="more-cpus-than-any-node"),
    pytest.param(GOOD.replace(",1,1,25,", ",8,8,25,"), "gpu_request", ReaderOptions(max_gpus=4),
                 id="too-many-gpus"),
]


@pytest.mark.parametrize("row, field, options", BAD_ROWS)
def test_bad_row(write: Writer, row: str, field: str, options: ReaderOptions | None) -> None:
    path = write("dlrm.csv", f"{HEADER}\n{GOOD.replace('i1,', 'i9,')}\n{row}\n")
    bad_third_line(path, FMT, field, options)


def test_a_repeated_instance_is_an_error_on_its_second_line(write: Writer) -> None:
    path = write("dlrm.csv", f"{HEADER}\n{GOOD}\n{GOOD}\n")
    expect_error(path, FMT, 3, "instance_sn")


def test_a_missing_column_is_named(write: Writer) -> None:
    path = write("dlrm.csv", HEADER.replace(",disk_limit", "") + "\n"
                 + GOOD.replace(",800.0,8,", ",8,") + "\n")
    expect_error(path, FMT, 1, "disk_limit")
