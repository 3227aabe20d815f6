"""``dlsched sweep`` / ``dlsched.sweep``: the results table, the intervals over seeds, local
processes giving the same table as a serial run, and a killed sweep resumed without redoing
the runs it finished."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

import dlsched
from dlsched.cli import app
from dlsched.sweeps.table import confidence

GRID = {"traces": ["synthetic:philly-sample"], "clusters": ["pollux-64"],
        "policies": ["fifo", "srtf"], "seeds": [0, 1, 2],
        "options": {"synthetic_jobs": 12, "synthetic_rate": 600}}


def test_processes_give_the_serial_table_and_the_intervals(tmp_path: Path) -> None:
    serial = dlsched.sweep(**GRID, out=tmp_path / "serial", workers=1)
    parallel = dlsched.sweep(**GRID, out=tmp_path / "parallel", workers=2, plots=False)
    metrics = ["policy", "seed", "key", "jct_mean", "makespan", "utilization"]
    pd.testing.assert_frame_equal(serial[metrics], parallel[metrics])
    assert len(serial) == 6 and serial.attrs["executed"] == 6
    assert (tmp_path / "serial" / "plots" / "jct_mean.png").exists()
    assert (tmp_path / "serial" / "runs" / serial["key"][0] / "jobs.csv").exists()
    ci = confidence(serial).set_index("policy")
    fifo = serial[serial.policy == "fifo"]["jct_mean"]
    assert ci.loc["fifo", "jct_mean"] == pytest.approx(fifo.mean())
    assert ci.loc["fifo", "jct_mean_ci_low"] < fifo.mean() < ci.loc["fifo", "jct_mean_ci_high"]
    again = dlsched.sweep(**GRID, out=tmp_path / "serial", workers=1, plots=False)
    assert again.attrs["executed"] == 0


def test_a_killed_sweep_resumes_without_redoing_finished_runs(tmp_path: Path) -> None:
    out = tmp_path / "sweep"
    args = ["sweep", "--trace", "synthetic:philly-sample", "--cluster", "pollux-64",
            "--policies", "fifo,srtf", "--seeds", "0-3", "--set", "synthetic_jobs=15",
            "--set", "synthetic_rate=600", "--workers", "1", "--no-plots", "--out", str(out)]
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[2])}
    child = subprocess.Popen([sys.executable, "-m", "dlsched.cli", *args], env=env,
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                             start_new_session=True)
    try:  # killed (SIGKILL: no clean-up) as soon as it reports its second finished run
        for line in child.stderr or ():
            if line.startswith("[2]"):
                break
    finally:
        os.killpg(child.pid, signal.SIGKILL)
        child.wait()
    before = {p.name: p.stat().st_mtime_ns for p in (out / "done").glob("*.json")}
    assert 2 <= len(before) < 8, "the sweep was killed before it finished"
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert f"({8 - len(before)} run now, {len(before)} found done)" in result.output
    after = {p.name: p.stat().st_mtime_ns for p in (out / "done").glob("*.json")}
    assert len(after) == 8 and all(after[name] == before[name] for name in before)
    assert len(pd.read_csv(out / "results.csv")) == 8


def test_the_closing_line_counts_rows_alike_once(tmp_path: Path) -> None:
    """A tiresias axis leaves the fifo run as it was: 4 rows, 3 distinct runs (the line read
    "4 runs (3 run now, 0 found done)", which did not add up)."""
    result = CliRunner().invoke(app, [
        "sweep", "--trace", "pollux-1", "--cluster", "pollux-64", "--policies",
        "fifo,tiresias", "--set", "limit=10", "--vary", "tiresias:thresholds=600,3600",
        "--workers", "1", "--no-plots", "--out", str(tmp_path / "s")])
    assert result.exit_code == 0, result.output
    assert "4 runs, 3 distinct (3 run now, 0 found done)" in result.output


@pytest.mark.parametrize(("flag", "value", "message"), [
    ("--policies", "", "sweep: name at least one of policies"),
    ("--policies", " , ", "sweep: name at least one of policies"),
    ("--seeds", "", "--seeds: give at least one seed"),
], ids=["empty-policies", "blank-policies", "empty-seeds"])
def test_an_empty_axis_is_an_error_not_the_default(tmp_path: Path, flag: str, value: str,
                                                   message: str) -> None:
    # An empty --policies ran the default policies (and an empty --seeds seed 0), silently.
    result = CliRunner().invoke(app, ["sweep", "--trace", "pollux-1", "--cluster", "pollux-64",
                                      "--workers", "1", flag, value, "--out", str(tmp_path)])
    assert result.exit_code == 2
    assert message in result.output
    assert not (tmp_path / "results.csv").exists()


def test_a_metric_null_in_every_run_is_a_float_column(tmp_path: Path) -> None:
    """ettr and deadline_satisfaction are null without failures or deadlines: the table had
    them as object columns of None, while results.csv reads back float NaN."""
    grid = {**GRID, "policies": ["fifo"], "seeds": [0]}
    table = dlsched.sweep(**grid, out=tmp_path, workers=1, plots=False)
    assert table["ettr"].dtype == "float64" and table["ettr"].isna().all()
    assert table["deadline_satisfaction"].dtype == "float64"
    assert not [c for c in table.columns if table[c].dtype == object]
    pd.testing.assert_frame_equal(table, pd.read_csv(tmp_path / "results.csv"))


def test_a_varied_policy_option_is_typed_as_results_csv_reads_it(tmp_path: Path) -> None:
    """A policy option's values are text (--policy-opt): the table had '600' and '3600',
    results.csv reads back 600 and 3600, so table == 600 matched no row in a notebook."""
    grid = {**GRID, "seeds": [0], "policies": ["tiresias"]}
    table = dlsched.sweep(**grid, vary={"tiresias:thresholds": [600, 3600]}, out=tmp_path,
                          workers=1, plots=False)
    assert table["tiresias:thresholds"].tolist() == [600, 3600]
    pd.testing.assert_frame_equal(table, pd.read_csv(tmp_path / "results.csv"))
    again = dlsched.sweep(**grid, vary={"tiresias:thresholds": ["600:3600", "60:600"]},
                          out=tmp_path / "pairs", workers=1, plots=False)
    assert again["tiresias:thresholds"].tolist() == ["600:3600", "60:600"]  # text stays text
