"""dlsched's own errors (dlsched/errors.py) cross process boundaries intact."""

from __future__ import annotations

import pickle
from pathlib import Path

from typer.testing import CliRunner

from dlsched.cli import app
from dlsched.errors import InputError, InputLocation


def test_an_input_error_survives_pickling() -> None:
    """A worker process sends its error back pickled: unpickling called InputError(text) and
    failed ('missing 1 required positional argument: message')."""
    error = InputError(InputLocation("jobs.csv", 13, "num_replicas"), "asks for 32 GPUs")
    back = pickle.loads(pickle.dumps(error))
    assert type(back) is InputError and str(back) == str(error)
    assert back.location == error.location and back.message == error.message


def test_a_sweep_run_that_fails_on_its_input_ends_in_one_line(tmp_path: Path) -> None:
    """pollux-1 asks for 32 GPUs on small-16: with --workers 2 the sweep died with a
    BrokenProcessPool traceback; now one line names the trace and cluster, the file, the line
    and field, before any run starts (the sweep checks each trace against each cluster first;
    a run that fails in a worker is named in tests/sweeps/test_sweep_names_failed_run.py)."""
    result = CliRunner().invoke(app, [
        "sweep", "--trace", "pollux-1", "--cluster", "small-16", "--policies", "fifo",
        "--seeds", "0", "--workers", "2", "--out", str(tmp_path / "o")])
    assert result.exit_code == 2, result.output
    text = " ".join(result.output.split())
    assert "error: trace pollux-1 on cluster small-16:" in text
    assert "workload-1.csv:13:num_replicas: asks for 32 GPUs; the cluster has 16" in text
    assert "Traceback" not in result.output
