"""The command line contract that scripts rely on (issue 2, item 9)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dlsched.cli import app

CONTRACT_KEYS = {"policy", "trace", "cluster", "seed", "jobs_submitted", "jobs_finished",
                 "jct_mean", "jct_p99", "makespan", "utilization", "wall_seconds"}
runner = CliRunner()


def invoke(*args: str) -> str:
    result = runner.invoke(app, list(args))
    assert result.exit_code == 0, result.output
    return result.output


def test_simulate_writes_the_contract_files(tmp_path: Path) -> None:
    invoke("simulate", "--trace", "pollux-1", "--cluster", "pollux-64", "--policy", "fifo",
           "--seed", "3", "--out", str(tmp_path))
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert set(summary) >= CONTRACT_KEYS
    assert (summary["policy"], summary["trace"], summary["cluster"], summary["seed"]) == (
        "fifo", "pollux-1", "pollux-64", 3)
    assert summary["jobs_submitted"] == summary["jobs_finished"] == 160
    header = (tmp_path / "jobs.csv").read_text().splitlines()[0].split(",")
    assert header[:3] == ["job_id", "queue", "num_gpus"]
    assert len((tmp_path / "jobs.csv").read_text().splitlines()) == 161


def test_same_seed_and_config_give_byte_identical_results(tmp_path: Path) -> None:
    outs = [tmp_path / "a", tmp_path / "b"]
    for out in outs:
        invoke("simulate", "--trace", "synthetic", "--synthetic-jobs", "200",
               "--synthetic-rate", "40", "--seed", "11", "--cluster", "gavel-108",
               "--policy", "tiresias", "--out", str(out))
    for name in ("jobs.csv", "timeline.csv", "run.json"):
        assert (outs[0] / name).read_bytes() == (outs[1] / name).read_bytes(), name


def test_a_run_repeats_from_its_config_file(tmp_path: Path) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    invoke("simulate", "--trace", "pollux-2", "--cluster", "pollux-64", "--policy",
           "tiresias", "--policy-opt", "thresholds=1000:10000", "--out", str(first))
    invoke("simulate", "--config", str(first / "config.yaml"), "--out", str(second))
    assert (first / "jobs.csv").read_bytes() == (second / "jobs.csv").read_bytes()


def test_compare_writes_one_folder_per_policy_and_a_report(tmp_path: Path) -> None:
    invoke("compare", "--trace", "pollux-1", "--cluster", "pollux-64", "--policies",
           "fifo,tiresias", "--out", str(tmp_path))
    assert (tmp_path / "fifo" / "summary.json").exists()
    assert (tmp_path / "tiresias" / "jobs.csv").exists()
    report = (tmp_path / "report.html").read_text()
    assert "tiresias" in report and "<svg" in report
    assert set(json.loads((tmp_path / "summary.json").read_text())) == {"fifo", "tiresias"}


BAD_ROWS = "timestamp,duration,num_gpus,gpu_time,cluster\n" \
           "2017-10-09 07:01:55,66.0,1,66.0,11cb48\n" \
           "2017-10-09 07:02:55,-5,1,66.0,11cb48\n" \
           "2017-10-09 07:03:55,60,1,60.0,11cb48\n"


def test_a_bad_row_stops_the_run_naming_file_line_and_field(tmp_path: Path) -> None:
    trace = tmp_path / "bad.csv"
    trace.write_text(BAD_ROWS)
    result = runner.invoke(app, ["simulate", "--trace", str(trace), "--cluster", "philly",
                                 "--policy", "fifo", "--out", str(tmp_path / "out")])
    assert result.exit_code == 2
    assert f"{trace}:3:duration" in " ".join(result.output.split())
    assert not (tmp_path / "out" / "summary.json").exists()


def test_skip_invalid_counts_the_bad_row_and_runs_the_rest(tmp_path: Path) -> None:
    trace = tmp_path / "bad.csv"
    trace.write_text(BAD_ROWS)
    output = invoke("simulate", "--trace", str(trace), "--format", "philly", "--cluster",
                    "philly", "--policy", "fifo", "--skip-invalid", "--out",
                    str(tmp_path / "out"))
    assert "skipped 1 invalid rows" in output
    assert json.loads((tmp_path / "out" / "summary.json").read_text())["jobs_submitted"] == 2


@pytest.mark.parametrize(("args", "message"), [
    (["--policy", "nope"], "unknown policy 'nope'"),
    (["--policy", "fifo", "--policy-opt", "thresholds=1:2"], "no policy of fifo has it"),
    (["--policy", "fifo", "--placement", "diagonal"], "placement: 'diagonal'"),
    (["--policy", "fifo", "--jobs-format", "xml"], "jobs_format: 'xml'"),
    (["--policy", "fifo", "--cluster", "no-such-cluster"], "no-such-cluster"),
], ids=["unknown-policy", "option-of-no-policy", "bad-placement", "bad-jobs-format",
        "unknown-cluster"])
def test_bad_options_get_a_clear_error(tmp_path: Path, args: list[str], message: str) -> None:
    base = ["simulate", "--trace", "pollux-1", "--cluster", "pollux-64", "--out", str(tmp_path)]
    result = runner.invoke(app, base + args)
    assert result.exit_code == 2
    assert message in " ".join(result.output.split())


@pytest.mark.parametrize("command", ["traces", "clusters", "policies"])
def test_listings(command: str) -> None:
    output = invoke(command)
    expected = {"traces": "pollux-1", "clusters": "gavel-108", "policies": "tiresias"}[command]
    assert expected in output
