"""Alibaba GPU 2023 pod-list reader: real rows, scope rules, malformed input."""

from __future__ import annotations

from pathlib import Path

import pytest
from reader_checks import Writer, bad_third_line, expect_error

from dlsched.workload.readers import ReaderOptions, detect_format, read_trace
from dlsched.workload.readers.alibaba import CPU_ONLY, NEVER_SCHEDULED

FMT = "alibaba-2023"
HEADER = ("name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,"
          "deletion_time,scheduled_time")
GOOD = "p0,8000,16384,2,1000,,BE,Succeeded,10,500,20"


@pytest.fixture
def pods(shared_data: Path) -> Path:
    return shared_data / "traces/alibaba-gpu-2023"


def test_default_list_rows_as_written(pods: Path) -> None:
    trace = read_trace(pods / "openb_pod_list_default.csv", options=ReaderOptions(limit=3))
    whole, shared = trace.jobs[0], trace.jobs[1]
    assert whole.job_id == "openb-pod-0000" and whole.submit_time == 0
    assert (whole.work, whole.gpu_share, whole.priority) == (12537496, 1.0, 2)
    assert (whole.cpus_per_gpu, whole.memory_gb_per_gpu) == (12.0, 16.0)
    assert shared.job_id == "openb-pod-0001" and shared.gpu_share == pytest.approx(0.46)
    assert (shared.submit_time, shared.work) == (427061, 12902960 - 427061)


def test_scope_drops_are_counted_not_skipped(pods: Path) -> None:
    trace = read_trace(pods / "openb_pod_list_default.csv")
    assert len(trace) == 8152 - 1088 - 861 and trace.skipped == 0
    assert any(f"dropped 1088 rows: {CPU_ONLY}" in w for w in trace.warnings)
    assert any(f"dropped 861 rows: {NEVER_SCHEDULED}" in w for w in trace.warnings)


def test_gpu_spec_becomes_allowed_types(pods: Path) -> None:
    trace = read_trace(pods / "openb_pod_list_gpuspec33.csv")
    job = {j.job_id: j for j in trace.jobs}["openb-pod-0598"]  # V100M16|V100M32|V100M32
    assert job.gpu_types == ("V100M16", "V100M32")


@pytest.mark.parametrize("name, fmt", [
    pytest.param("openb_pod_list_default.csv", FMT, id="default"),
    pytest.param("openb_pod_list_gpushare40.csv", FMT, id="gpushare"),
    pytest.param("openb_pod_list_multigpu20.csv", FMT, id="multigpu-timeless"),
])
def test_detect_format(pods: Path, name: str, fmt: str) -> None:
    assert detect_format(pods / name) == fmt


def test_timeless_multigpu_list_is_refused_on_its_header(pods: Path) -> None:
    expect_error(pods / "openb_pod_list_multigpu20.csv", None, 1, "creation_time")


BAD_ROWS = [
    pytest.param("p1,8000,16384,x,1000,,BE,Running,10,500,20", "num_gpu", None, id="bad-number"),
    pytest.param("p1,8000,16384,1,1000,,BE,Running,10,5,20", "deletion_time", None,
                 id="negative-duration"),
    pytest.param("p1,8000,16384,1,1000,,BE,Running,30,500,20", "scheduled_time", None,
                 id="scheduled-before-created"),
    pytest.param("p1,8000,16384,1,0,,BE,Running,10,500,20", "gpu_milli", None,
                 id="zero-share"),
    pytest.param("p1,8000,16384,2,500,,BE,Running,10,500,20", "gpu_milli", None,
                 id="shared-multi-gpu"),
    pytest.param("p1,8000,16384,1,1000,,Gold,Running,10,500,20", "qos", None, id="unknown-qos"),
    pytest.param("p1,8000,16384,1,1000,A|,BE,Running,10,500,20", "gpu_spec", None,
                 id="bad-gpu-spec"),
    pytest.param("p1,-1,16384,1,1000,,BE,Running,10,500,20", "cpu_milli", None,
                 id="negative-cpu"),
    pytest.param("p1,8000,16384,8,1000,,BE,Running,10,500,20", "num_gpu",
                 ReaderOptions(max_gpus=4), id="too-many-gpus"),
    pytest.param("p1,96000,16384,1,500,,BE,Running,10,500,20", "cpu_milli",
                 ReaderOptions(max_cpus=64), id="more-cpus-than-any-node"),
    pytest.param("p1,8000,600000,1,1000,,BE,Running,10,500,20", "memory_mib",
                 ReaderOptions(max_memory_gb=512), id="more-memory-than-any-node"),
]


@pytest.mark.parametrize("row, field, options", BAD_ROWS)
def test_bad_row(write: Writer, row: str, field: str, options: ReaderOptions | None) -> None:
    path = write("pods.csv", f"{HEADER}\n{GOOD}\n{row}\n")
    bad_third_line(path, FMT, field, options)


@pytest.mark.parametrize("header, row, field", [
    pytest.param(f"{HEADER},node", f"{GOOD},n1", "node", id="unknown-column"),
    pytest.param(HEADER.replace(",qos", ""), GOOD.replace(",BE", ""), "qos",
                 id="missing-column"),
])
def test_bad_header(write: Writer, header: str, row: str, field: str) -> None:
    path = write("pods.csv", f"{header}\n{row}\n")
    expect_error(path, FMT, 1, field)
