"""Run files and the simulate/compare options: one source of truth, checked (issue 11 items 7,
10, 11, 13, 15)."""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from dlsched.cli import app
from dlsched.cli_options import flags
from dlsched.errors import DlschedError
from dlsched.run_config import RunConfig

runner = CliRunner()


def run(*args: str) -> tuple[int, str]:
    result = runner.invoke(app, list(args))
    return result.exit_code, " ".join(result.output.split())


@pytest.mark.parametrize(("text", "where", "message"), [
    ("policies: 5\n", ":1:policies", "expected a list of text"),
    ("trace: pollux-1\nseed: seven\n", ":2:seed", "expected an integer, got 'seven'"),
    ("trace: pollux-1\n\nlimit: 1.5\n", ":3:limit", "expected an integer"),
    ("skip_invalid: maybe\n", ":1:skip_invalid", "expected true or false"),
    ("restart_overhead: [1]\n", ":1:restart_overhead", "expected a number"),
    ("policy_options: 3\n", ":1:policy_options", "expected a mapping of option: value"),
    ("throughput: 2\n", ":1:throughput", "expected text"),
    ("trace: pollux-1\npolicys: fifo\n", ":2:policys", "did you mean 'policies'"),
    ("jobs_format: xml\n", ":1:jobs_format", "'xml' is not one of csv, parquet"),
    ("restart_overhead: .nan\n", ":1:restart_overhead", "expected a finite number"),
    ("trace: pollux-1\nseed: -1\n", ":2:seed", "-1 is out of range (0 to"),
    ("limit: 0\n", ":1:limit", "0 is out of range (1 to"),
    ("- a\n- b\n", ":1", "a run file is a mapping"),
    ("trace: [\n", ":2", "not valid YAML"),
], ids=["policies-int", "seed-text", "limit-float", "bool", "float-list", "options-int",
        "throughput-int", "unknown-key", "bad-choice", "nan", "negative-seed", "zero-limit",
        "not-a-mapping", "bad-yaml"])
def test_a_bad_run_file_names_file_line_and_key(tmp_path: Path, text: str, where: str,
                                                message: str) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    code, output = run("simulate", "--config", str(path), "--out", str(tmp_path / "o"))
    assert code == 2, output
    assert f"error: {path}{where}" in output and message in output, output
    assert "Traceback" not in output


def test_a_flag_out_of_range_is_named() -> None:
    code, output = run("simulate", "--restart-overhead", "-5")
    assert code == 2 and "error: --restart-overhead: -5.0 is out of range (0 to" in output


def test_run_file_values_are_normalized() -> None:
    config = RunConfig().with_values({"policies": ["fifo", "sjf"], "restart_overhead": 5,
                                      "policy_options": {"thresholds": [1, 2]}})
    assert config.policies == ("fifo", "sjf")
    assert config.restart_overhead == 5.0 and isinstance(config.restart_overhead, float)
    assert config.policy_options == (("thresholds", "1:2"),)


def test_flags_override_the_file_and_errors_name_the_flag(tmp_path: Path) -> None:
    path = tmp_path / "run.yaml"
    path.write_text("jobs_format: parquet\n")
    where = flags("--policy").get
    config = RunConfig.from_yaml(path, {"jobs_format": "csv"}, where)
    assert config.jobs_format == "csv"
    with pytest.raises(DlschedError, match="^--placement: 'x' is not one of"):
        RunConfig.from_yaml(path, {"placement": "x"}, where)


def _options(command: str) -> set[str]:
    click_command = typer.main.get_command(app).commands[command]  # type: ignore[attr-defined]
    return {opt for p in click_command.params for opt in (*p.opts, *p.secondary_opts)}


@pytest.mark.parametrize("command", ["simulate", "compare"])
def test_every_run_config_field_is_an_option(command: str) -> None:
    policy_flag = "--policy" if command == "simulate" else "--policies"
    expected = set(flags(policy_flag).values()) | {"--config", "--strict-input"}
    assert expected <= _options(command)
    assert len(flags()) == len(fields(RunConfig))


@pytest.mark.parametrize("command", ["simulate", "compare"])
def test_help_shows_the_defaults(command: str) -> None:
    code, output = run(command, "--help")
    assert code == 0
    for text in ("[default: philly-sample]", "[default: 30.0]", "[default: csv]",
                 "dlsched[parquet]"):
        assert text in output, text


def test_compare_checks_every_policy_before_running_any(tmp_path: Path) -> None:
    code, output = run("compare", "--trace", "pollux-1", "--cluster", "pollux-64", "--policies",
                       "fifo,sfj", "--out", str(tmp_path))
    assert code == 2 and "unknown policy 'sfj'" in output
    assert "fifo:" not in output and not (tmp_path / "fifo").exists()


def test_a_bad_option_value_of_a_later_policy_fails_first(tmp_path: Path) -> None:
    code, output = run("compare", "--trace", "pollux-1", "--cluster", "pollux-64", "--policies",
                       "fifo,tiresias", "--policy-opt", "tiresias:thresholds=abc", "--out",
                       str(tmp_path))
    assert code == 2 and "thresholds='abc' is not valid" in output
    assert not (tmp_path / "fifo").exists()


@pytest.mark.parametrize("args", [
    ["simulate", "--cluster", "rack[gpu]"],
    ["tenants", "trace[gpu].csv", "--cluster", "philly"],
], ids=["simulate", "tenants"])
def test_error_text_is_not_read_as_markup(args: list[str]) -> None:
    code, output = run(*args)
    assert code == 2 and "[gpu]" in output, output


def test_shell_completion_is_offered() -> None:
    code, output = run("--help")
    assert code == 0 and "--install-completion" in output


def test_run_json_records_the_throughput_model_and_non_default_options(tmp_path: Path) -> None:
    import json

    code, output = run("simulate", "--trace", "pollux-1", "--cluster", "pollux-64", "--policy",
                       "tiresias", "--limit", "10", "--restart-overhead", "5",
                       "--out", str(tmp_path))
    assert code == 0, output
    recorded = json.loads((tmp_path / "run.json").read_text())
    assert recorded["throughput"] == "pollux"
    assert recorded["options"] == {"trace": "pollux-1", "cluster": "pollux-64",
                                   "policies": ["tiresias"], "limit": 10,
                                   "restart_overhead": 5.0}
