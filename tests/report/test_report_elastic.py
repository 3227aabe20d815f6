"""Elastic and deadline metrics: deadline satisfaction, resizes, GPU-hours, goodput.csv."""

from __future__ import annotations

import csv
from dataclasses import replace
from pathlib import Path

import pytest
from report_builders import hand_result, job

from dlsched.cluster.cluster import Cluster, Node
from dlsched.report.metrics import deadline_satisfaction, summarize
from dlsched.report.output import write_run
from dlsched.scheduling.registry import build_policy
from dlsched.sim import SimConfig, simulate
from dlsched.sim.result import GoodputPoint
from dlsched.workload.job import JobSpec
from dlsched.workload.trace import Trace

# a, b meet their deadlines (b exactly at it); c finishes late; d was rejected at admission
# (failed); e is still running at the end; f has no deadline and does not count: 2 of 5.
DEADLINE_JOBS = [
    job("a", 0, 0, 90, deadline=100, resizes=2),
    job("b", 0, 10, 100, deadline=100),
    job("c", 0, 0, 60, deadline=50, resizes=3),
    job("d", 0, None, 5, deadline=80, status="failed"),
    job("e", 0, 0, None, deadline=200),
    job("f", 0, 0, 10),
]


@pytest.mark.parametrize(
    ("jobs", "expected"),
    [
        (DEADLINE_JOBS, (5, 0.4)),
        (DEADLINE_JOBS[:2], (2, 1.0)),
        (DEADLINE_JOBS[2:4], (2, 0.0)),
        ([job("f", 0, 0, 10)], (0, None)),
    ],
    ids=["mixed", "all-met", "late-and-rejected", "no-deadlines"],
)
def test_deadline_satisfaction_by_hand(jobs: list, expected: tuple) -> None:
    assert deadline_satisfaction(hand_result(jobs, end_time=300)) == expected


def test_summary_counts_resizes_and_deadlines() -> None:
    summary = summarize(hand_result(DEADLINE_JOBS, end_time=300))
    assert (summary.resizes, summary.deadline_jobs) == (5, 5)
    assert summary.deadline_satisfaction == pytest.approx(0.4)
    data = summary.to_dict()
    assert (data["resizes"], data["deadline_jobs"], data["deadline_satisfaction"]) == (5, 5, 0.4)


def test_gpu_hours_charge_a_job_still_running_at_the_end() -> None:
    """4 GPUs held from 0 until the run stops at 90 s: 360 GPU-seconds = 0.1 GPU-hours."""
    cluster = Cluster("one", (Node("n0", "V100", 4),))
    result = simulate(cluster, Trace("t", (JobSpec("a", 0, 4, 1000),)), build_policy("fifo"),
                      SimConfig(restart_overhead=0, max_time=90))
    assert result.jobs[0].gpu_seconds == pytest.approx(360.0)
    assert summarize(result).gpu_hours == pytest.approx(0.1)


def test_goodput_csv_lists_each_jobs_series(tmp_path: Path) -> None:
    series = (GoodputPoint(60.0, "b", 4, 1000.0, 256.0, 0.5, 80.0),
              GoodputPoint(0.0, "b", 2, 0.0, 128.0, 1.0, 50.0),
              GoodputPoint(0.0, "a", 1, 0.0, 64.0, 1.0, 20.0))
    result = replace(hand_result(DEADLINE_JOBS, end_time=300), goodput_series=series)
    write_run(result, tmp_path)
    with open(tmp_path / "goodput.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert [(r["job_id"], float(r["time"]), int(r["num_gpus"])) for r in rows] == [
        ("a", 0.0, 1), ("b", 0.0, 2), ("b", 60.0, 4)]
    assert [float(r["efficiency"]) for r in rows] == [1.0, 1.0, 0.5]
    assert [float(r["goodput"]) for r in rows] == [20.0, 50.0, 80.0]
    assert rows[0]["policy"] == "hand"
    write_run(hand_result(DEADLINE_JOBS, end_time=300), tmp_path / "plain")
    assert not (tmp_path / "plain" / "goodput.csv").exists()


def test_jobs_csv_has_resizes_and_deadline(tmp_path: Path) -> None:
    write_run(hand_result(DEADLINE_JOBS, end_time=300), tmp_path)
    with open(tmp_path / "jobs.csv", newline="") as f:
        rows = {r["job_id"]: r for r in csv.DictReader(f)}
    assert (rows["a"]["resizes"], float(rows["a"]["deadline"])) == ("2", 100.0)
    assert rows["f"]["deadline"] == ""
