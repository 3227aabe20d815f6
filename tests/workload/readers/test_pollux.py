"""Pollux/Sia workload reader: work from the application profiles, real rows, bad input."""

from __future__ import annotations

import csv
import math
from pathlib import Path

import numpy as np
import pytest
from reader_checks import Writer, bad_third_line, expect_error

from dlsched.workload.readers import ReaderOptions, detect_format, read_trace
from dlsched.workload.readers.pollux_profile import compact_placement, load_profile

HEADER = "name,time,application,num_replicas,batch_size"
GOOD = "cifar10-0,107,cifar10,6,2048"


def _rows(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def test_cifar10_work_by_hand_from_the_original_profiles(shared_data: Path) -> None:
    """cifar10 at batch 2048 on 6 T4s: 3178 steps (validation-2048's last row) x the step time
    of placement "24" at 342 images per GPU, interpolated between the measured 257 and 363."""
    profile = shared_data / "profiles/pollux/cifar10"
    steps = int(_rows(profile / "validation-2048.csv")[-1]["iteration"])
    curve = [r for r in _rows(profile / "placements.csv") if r["placement"] == "24"]
    local = [float(r["local_bsz"]) for r in curve]
    step = float(np.interp(math.ceil(2048 / 6), local, [float(r["step_time"]) for r in curve]))
    trace = read_trace(shared_data / "traces/pollux-workloads/workloads/workload-1.csv",
                       options=ReaderOptions(limit=2))
    job = trace.jobs[0]
    assert (job.job_id, job.submit_time, job.num_gpus) == ("cifar10-0", 0, 6)
    assert (job.model, job.batch_size, steps) == ("cifar10", 2048, 3178)
    assert job.work == pytest.approx(steps * step)
    assert trace.jobs[1].submit_time == 110 - 107 and trace.throughput == "pollux"


def test_bundled_profile_equals_the_original_profiles(shared_data: Path) -> None:
    original = load_profile(shared_data / "profiles/pollux")
    assert load_profile() == original
    assert original.max_local_bsz["yolov3"] == 8 and original.iterations[("bert", 384)] == 480


@pytest.mark.parametrize("replicas, placement", [(1, "1"), (4, "4"), (6, "24"), (16, "4444")])
def test_compact_placement(replicas: int, placement: str) -> None:
    assert compact_placement(replicas) == placement


@pytest.mark.parametrize("relative", [
    pytest.param("traces/pollux-workloads/workloads-realistic/workload-3.csv", id="realistic"),
    pytest.param("traces/sia-workloads/saturn/workload-1.csv", id="sia-saturn"),
    pytest.param("traces/sia-workloads/newtrace/workload-1.csv", id="sia-newtrace"),
])
def test_every_job_gets_positive_work(shared_data: Path, relative: str) -> None:
    trace = read_trace(shared_data / relative)
    assert detect_format(shared_data / relative) == "pollux"
    assert trace.skipped == 0 and all(j.work > 0 for j in trace.jobs)


BAD_ROWS = [
    pytest.param("j1,x,cifar10,6,2048", "time", None, id="bad-number"),
    pytest.param("j1,-5,cifar10,6,2048", "time", None, id="negative-time"),
    pytest.param("j1,5,cifar10,0,2048", "num_replicas", None, id="zero-gpus"),
    pytest.param("j1,5,resnet,6,2048", "application", None, id="unknown-app"),
    pytest.param("j1,5,cifar10,6,3000", "batch_size", None, id="unprofiled-batch"),
    pytest.param("j1,5,cifar10,17,2048", "num_replicas", None, id="unprofiled-scale"),
    pytest.param("j1,5,cifar10,16,2048", "num_replicas", ReaderOptions(max_gpus=8),
                 id="too-many-gpus"),
]


@pytest.mark.parametrize("row, field, options", BAD_ROWS)
def test_bad_row(write: Writer, row: str, field: str, options: ReaderOptions | None) -> None:
    path = write("w.csv", f"{HEADER}\n{GOOD}\n{row}\n")
    bad_third_line(path, "pollux", field, options)


@pytest.mark.parametrize("header, row, field", [
    pytest.param(f"{HEADER},user", f"{GOOD},u", "user", id="unknown-column"),
    pytest.param("name,time,application,num_replicas", "j,1,cifar10,6", "batch_size",
                 id="missing-column"),
])
def test_bad_header(write: Writer, header: str, row: str, field: str) -> None:
    path = write("w.csv", f"{header}\n{row}\n")
    expect_error(path, "pollux", 1, field)
