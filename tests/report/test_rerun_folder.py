"""A run into a folder an earlier run wrote leaves only its own files there: the optional
files it does not write (the other jobs format, goodput.csv, the tenant audit files, a
services run's services.json and report.html) go."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

import dlsched
from dlsched.cli import app

EXAMPLES = Path(__file__).parents[2] / "examples"
TENANTS = EXAMPLES / "tenants" / "philly-vcs.yaml"


def test_notebook_jobs_are_this_runs_after_a_parquet_run(tmp_path: Path) -> None:
    """``simulate(...).jobs`` read the fifo run's jobs.parquet left in the folder, not the
    srtf run's jobs.csv."""
    pytest.importorskip("pyarrow")
    dlsched.simulate("pollux-1", "pollux-64", "fifo", limit=10, jobs_format="parquet",
                     out=tmp_path)
    run = dlsched.simulate("pollux-1", "pollux-64", "srtf", limit=10, out=tmp_path)
    assert set(run.jobs["policy"]) == {"srtf"}
    assert not (tmp_path / "jobs.parquet").exists()


def test_csv_after_parquet_removes_the_csv(tmp_path: Path) -> None:
    pytest.importorskip("pyarrow")
    dlsched.simulate("pollux-1", "pollux-64", "fifo", limit=10, out=tmp_path)
    dlsched.simulate("pollux-1", "pollux-64", "fifo", limit=10, jobs_format="parquet",
                     out=tmp_path)
    assert not (tmp_path / "jobs.csv").exists()


def test_a_run_without_tenants_removes_the_tenant_files(tmp_path: Path) -> None:
    dlsched.simulate("philly-sample", "philly", "fifo", limit=20, tenants=str(TENANTS),
                     out=tmp_path)
    assert (tmp_path / "tenant_quotas.csv").exists()
    dlsched.simulate("philly-sample", "philly", "fifo", limit=20, out=tmp_path)
    left = [p.name for p in tmp_path.iterdir() if p.name.endswith(".csv")]
    assert sorted(left) == ["jobs.csv", "segments.csv", "timeline.csv"]


def test_a_run_without_goodput_removes_goodput_csv(tmp_path: Path) -> None:
    dlsched.simulate("pollux-1", "pollux-64", "pollux", limit=10, throughput="goodput",
                     out=tmp_path)
    assert (tmp_path / "goodput.csv").exists()
    dlsched.simulate("pollux-1", "pollux-64", "fifo", limit=10, out=tmp_path)
    assert not (tmp_path / "goodput.csv").exists()


def test_a_run_without_services_removes_the_services_report(tmp_path: Path) -> None:
    """`simulate --services` then a plain `simulate` on the same --out left services.json and
    the services' report.html beside the new run's jobs.csv."""
    services = EXAMPLES / "services" / "services.yaml"
    first = CliRunner().invoke(app, ["simulate", "--services", str(services), "--trace",
                                     "philly-sample", "--limit", "20", "--out", str(tmp_path)])
    assert first.exit_code == 0, first.output
    assert (tmp_path / "services.json").exists() and (tmp_path / "report.html").exists()
    dlsched.simulate("philly-sample", "philly", "fifo", limit=20, out=tmp_path)
    assert not (tmp_path / "services.json").exists()
    assert not (tmp_path / "report.html").exists()
