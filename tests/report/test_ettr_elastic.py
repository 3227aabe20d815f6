"""The ETTR of elastic jobs counts their kept work at the rates they ran at
(``JobLosses.productive_seconds``), not at their first size's: an ``llm-jobs`` job's first size
is the smallest that fits (1 GPU for small-a), and at 64 GPUs its useful time came out 64
times its elapsed time: ``--failures llama3x100`` on examples/llm/llm-jobs.csv reported an
ETTR of 178.0%."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from dlsched.cli import app

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "llm" / "llm-jobs.csv"


def test_an_elastic_runs_ettr_is_a_share_of_its_time(tmp_path: Path) -> None:
    out = tmp_path / "run"
    result = CliRunner().invoke(app, ["simulate", "--trace", str(EXAMPLE), "--cluster",
                                      "elasticflow-128", "--policy", "llm-size", "--failures",
                                      "llama3x100", "--out", str(out)])
    assert result.exit_code == 0, result.output
    summary = json.loads((out / "summary.json").read_text())
    assert summary["job_interruptions"] == 3
    assert 0.9 < summary["ettr"] <= 1.0


def test_a_job_that_ran_at_two_sizes_counts_each_runs_work_at_its_rate() -> None:
    from dlsched.scheduling.resilience import JobLosses

    losses = JobLosses()
    # 100 units at 2/s (50 s), then 30 more so far at 1/s since 100 (30 s)
    losses.productive, losses.segment_work, losses.raw_rate = 50.0, 100.0, 1.0
    assert losses.productive_seconds(130.0) == 80.0


def test_jobs_the_policy_resizes_count_their_work_at_the_rates_they_ran_at(
        tmp_path: Path) -> None:
    """Pollux sizes its jobs itself (their specs are not elastic): their kept work was counted
    at the requested size's rate, so jobs run wider had more useful time than time: ETTR
    132.2% on these 12 jobs."""
    out = tmp_path / "run"
    result = CliRunner().invoke(app, ["simulate", "--trace", "pollux-1", "--limit", "12",
                                      "--policy", "pollux", "--failures", "llama3x1000",
                                      "--resilience", "elastic", "--out", str(out)])
    assert result.exit_code == 0, result.output
    summary = json.loads((out / "summary.json").read_text())
    assert summary["job_interruptions"] > 0
    assert 0.5 < summary["ettr"] <= 1.0
