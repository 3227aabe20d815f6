"""A sweep says its runs' warnings (Tiresias' promotion that can livelock, session 32): once
each, as a `warning:` line of the command, wherever the run went (this process or another),
and as a Python warning from ``sweep()``; a run that gives none adds nothing."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from dlsched.cli import app
from dlsched.sweeps.api import sweep

LIVELOCK = ["--policy-opt", "tiresias:promote_knob=1", "--policy-opt", "tiresias:thresholds=30"]
SAID = "a job promoted back to queue 0 (promote_knob 1)"


@pytest.mark.parametrize("workers", ["1", "2"])
def test_the_command_says_each_warning_once(tmp_path: Path, workers: str) -> None:
    result = CliRunner().invoke(app, [
        "sweep", "--trace", "philly-sample", "--policies", "tiresias,fifo", *LIVELOCK,
        "--set", "limit=30", "--seeds", "0-1", "--workers", workers, "--no-plots",
        "--out", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    lines = [line for line in result.output.splitlines() if SAID in line]
    assert len(lines) == 1 and lines[0].startswith("warning: tiresias: "), result.output
    assert "UserWarning" not in result.output


def test_sweep_gives_them_as_python_warnings(tmp_path: Path) -> None:
    with pytest.warns(UserWarning, match=r"promoted back to queue 0"):
        sweep("philly-sample", "philly", "tiresias", options={"limit": 30}, workers=1,
              vary={"tiresias:promote_knob": [1], "tiresias:thresholds": ["30"]},
              plots=False)
    told: list[str] = []
    sweep("philly-sample", "philly", "fifo", options={"limit": 30}, workers=1, plots=False,
          on_warning=told.append)
    assert told == []
