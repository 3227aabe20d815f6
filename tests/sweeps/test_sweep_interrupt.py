"""Ctrl-C on ``dlsched sweep`` ends in one line saying what was kept and how to resume (it
exited 130 without a word), and ``--workers 1`` says the runs go in this process (it said "on 1
local processes")."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from typer.testing import CliRunner

from dlsched.cli import app

GRID = ["--trace", "synthetic:philly-sample", "--cluster", "pollux-64", "--policies", "fifo",
        "--set", "synthetic_jobs=200", "--no-plots"]


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)  # a background shell's child ignores it


def test_ctrl_c_keeps_the_finished_runs_and_says_how_to_resume(tmp_path: Path) -> None:
    out = tmp_path / "sweep"
    args = [*GRID, "--seeds", "0-59", "--workers", "1", "--out", str(out)]
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[2])}
    child = subprocess.Popen([sys.executable, "-m", "dlsched.cli", "sweep", *args], env=env,
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                             start_new_session=True, preexec_fn=_default_sigint)
    try:
        for line in child.stderr or ():
            if line.startswith("[2]"):
                os.killpg(child.pid, signal.SIGINT)  # as Ctrl-C: the whole foreground group
                break
        rest = (child.stderr.read() if child.stderr else "").splitlines()
        child.wait(timeout=60)
    finally:
        if child.poll() is None:
            os.killpg(child.pid, signal.SIGKILL)
            child.wait()
    assert child.returncode == 130
    done = len(list((out / "done").glob("*.json")))
    assert 2 <= done < 60
    assert rest[-1].startswith("interrupted: ") and rest[-1].endswith(
        f"runs finished now are kept in {out / 'done'}; the same command runs the rest")
    assert "Traceback" not in "\n".join(rest)


def test_one_worker_runs_in_this_process(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["sweep", *GRID, "--set", "synthetic_jobs=5", "--workers",
                                      "1", "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert result.output.splitlines()[0] == f"sweep of 1 run -> {tmp_path} in this process"
