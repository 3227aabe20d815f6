"""`dlsched serve`'s numbers out of range stop it with one line before anything starts:
`--port 99999` (or -1) was Python's `OverflowError: bind(): port must be 0-65535` and a
traceback; `--grace-seconds nan` and the other seconds as `nan` (typer reads it as a float)
passed every `< 0` check and started a service that could not time a SIGKILL."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from dlsched.runtime.cli import runtime_app


@pytest.mark.parametrize(("flags", "message"), [
    pytest.param(["--port", "99999"], "--port must be 0 to 65535 (0: a free port), got 99999",
                 id="port-too-high"),
    pytest.param(["--port", "-1"], "--port must be 0 to 65535 (0: a free port), got -1",
                 id="port-negative"),
    pytest.param(["--grace-seconds", "nan"],
                 "--grace-seconds must be a finite number of seconds, got nan", id="grace-nan"),
    pytest.param(["--checkpoint-seconds", "inf"],
                 "--checkpoint-seconds must be a finite number of seconds, got inf",
                 id="checkpoint-inf"),
    pytest.param(["--retry-backoff-max", "nan"],
                 "--retry-backoff-max must be a finite number of seconds, got nan",
                 id="backoff-max-nan"),
    pytest.param(["--orphan-timeout", "nan"],
                 "--orphan-timeout must be a finite number of seconds, got nan",
                 id="orphan-nan"),
    pytest.param(["--grace-seconds", "-1"], "--grace-seconds must be at least 0, got -1",
                 id="grace-negative"),
])
def test_serve_refuses_a_number_out_of_range_in_one_line(
        tmp_path: Path, flags: list[str], message: str) -> None:
    result = CliRunner().invoke(runtime_app, ["serve", "--gpus", "1", "--data-dir",
                                              str(tmp_path / "data"), *flags])
    assert result.exit_code == 1, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert " ".join(result.output.split()) == f"error: {message}"
    assert not (tmp_path / "data").exists()  # refused before the data directory was made
