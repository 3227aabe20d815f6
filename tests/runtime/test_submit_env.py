"""`dlsched submit --env KEY=VALUE` (repeatable) sets variables of the job's environment, over
the `--file`'s `env:`; before it, a job's environment could only come from a job file."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from typer.testing import CliRunner

from dlsched.runtime import cli as runtime_cli
from dlsched.runtime.cli import runtime_app


class _Recorder:
    """A client that keeps what it was asked to submit."""

    def __init__(self) -> None:
        self.bodies: list[dict[str, Any]] = []

    def __enter__(self) -> _Recorder:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def submit(self, body: dict[str, Any]) -> SimpleNamespace:
        self.bodies.append(body)
        return SimpleNamespace(id="job-000001")


@pytest.fixture
def recorder(monkeypatch: pytest.MonkeyPatch) -> _Recorder:
    client = _Recorder()
    monkeypatch.setattr(runtime_cli, "_client", lambda *args, **kwargs: client)
    return client


@pytest.mark.parametrize(("file_env", "flags", "expected"), [
    pytest.param(None, ["--env", "STEPS=40"], {"STEPS": "40"}, id="one"),
    pytest.param(None, ["--env", "A=1", "--env", "B=x=y", "--env", "A=2"],
                 {"A": "2", "B": "x=y"}, id="several-later-wins-value-with-equals"),
    pytest.param({"STEPS": "4", "SEED": "1"}, ["--env", "STEPS=40"],
                 {"STEPS": "40", "SEED": "1"}, id="over-the-file"),
    pytest.param(None, ["--env", "EMPTY="], {"EMPTY": ""}, id="empty-value"),
])
def test_env_flags_reach_the_request(tmp_path: Path, recorder: _Recorder,
                                     file_env: dict[str, str] | None, flags: list[str],
                                     expected: dict[str, str]) -> None:
    args = ["submit", "--gpus", "1", *flags]
    if file_env is not None:
        job = tmp_path / "job.yaml"
        job.write_text("env:\n" + "".join(f"  {k}: '{v}'\n" for k, v in file_env.items()))
        args += ["--file", str(job)]
    result = CliRunner().invoke(runtime_app, [*args, "--", "python", "train.py"])
    assert result.exit_code == 0, result.output
    assert recorder.bodies[-1]["env"] == expected


@pytest.mark.parametrize("pair", ["STEPS", "=40"], ids=["no-equals", "no-key"])
def test_a_malformed_env_flag_is_one_line(recorder: _Recorder, pair: str) -> None:
    result = CliRunner().invoke(runtime_app, ["submit", "--gpus", "1", "--env", pair, "--",
                                              "python", "train.py"])
    assert result.exit_code == 1
    assert " ".join(result.output.split()) == f"error: --env expects KEY=VALUE, got {pair!r}"
    assert recorder.bodies == []


@pytest.mark.parametrize(("written", "sent"), [
    pytest.param("4", "4", id="int"),
    pytest.param("0.5", "0.5", id="float"),
    pytest.param("true", "true", id="bool"),
    pytest.param("1.10", "1.10", id="version-as-written-not-1.1"),
    pytest.param("yes", "yes", id="yaml-1.1-bool-as-written"),
    pytest.param("2024-01-31", "2024-01-31", id="date"),
    pytest.param("'4'", "4", id="quoted"),
    pytest.param("''", "", id="empty-string"),
])
def test_a_file_env_number_or_boolean_is_sent_as_written(tmp_path: Path, recorder: _Recorder,
                                                         written: str, sent: str) -> None:
    """Session 30: `STEPS: 4` in a job file was refused at its line ("must be a string"),
    where a docker-compose user writes numbers and booleans unquoted; they are sent as the
    text the file has (the API, JSON, still takes strings only)."""
    job = tmp_path / "job.yaml"
    job.write_text(f"gpus: 1\ncommand: [python, train.py]\nenv:\n  NAME: x\n  VALUE: {written}\n")
    result = CliRunner().invoke(runtime_app, ["submit", "--file", str(job)])
    assert result.exit_code == 0, result.output
    assert recorder.bodies[-1]["env"] == {"NAME": "x", "VALUE": sent}


@pytest.mark.parametrize(("env", "message"), [
    pytest.param("env:\n  NAME: x\n  VALUE: [1, 2]\n",
                 "job.yaml:5:env.VALUE: must be a string or a number, got a list", id="list"),
    pytest.param("env:\n  NAME: x\n  VALUE: {a: 1}\n",
                 "job.yaml:5:env.VALUE: must be a string or a number, got a mapping",
                 id="mapping"),
    pytest.param("env:\n  NAME: x\n  VALUE:\n",
                 "job.yaml:5:env.VALUE: has no value (give '' for an empty variable)",
                 id="no-value"),
    pytest.param("env: [STEPS=4]\n",
                 "job.yaml:3:env: must be a mapping of NAME: value, got a list", id="a-list"),
])
def test_a_file_env_value_that_is_no_scalar_is_refused_at_its_line(
        tmp_path: Path, recorder: _Recorder, env: str, message: str) -> None:
    job = tmp_path / "job.yaml"
    job.write_text(f"gpus: 1\ncommand: [python, train.py]\n{env}")
    result = CliRunner().invoke(runtime_app, ["submit", "--file", str(job), "--env", "A=1"])
    assert result.exit_code == 1
    assert " ".join(result.output.split()) == f"error: {job.parent}/{message}"
    assert recorder.bodies == []
