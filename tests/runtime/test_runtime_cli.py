"""The CLI verbs against a live service: submit (argv after --, or a YAML file), jobs, status,
logs, cancel; errors exit 1 with the service's message; registering on the main app."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml
from runtime_helpers import Live, wait_for, worker
from typer.testing import CliRunner

from dlsched.runtime.cli import runtime_app

runner = CliRunner()


def cli(url: str, *args: str) -> tuple[int, str]:
    verb, *rest = args
    if "--" in rest:
        at = rest.index("--")
        rest = [*rest[:at], "--url", url, *rest[at:]]
    else:
        rest = [*rest, "--url", url]
    result = runner.invoke(runtime_app, [verb, *rest])
    return result.exit_code, result.output


def test_submit_watch_and_cancel(live: Callable[..., Live], out: Path, tmp_path: Path) -> None:
    url = live().url
    code, text = cli(url, "submit", "--gpus", "2", "--name", "argv", "--",
                     *worker("sleep", out, 0.2))
    assert code == 0, text
    first = text.strip()
    job_file = tmp_path / "job.yaml"
    job_file.write_text(yaml.safe_dump({"command": worker("sleep", out, 30), "gpus": 1,
                                        "queue": "team", "name": "from-yaml"}))
    code, text = cli(url, "submit", "--file", str(job_file), "--gpus", "2")
    assert code == 0, text
    second = text.strip()
    wait_for(lambda: "finished" in cli(url, "jobs", first)[1], 15, "the first job to finish")
    code, text = cli(url, "jobs")
    assert code == 0 and first in text and second in text
    wait_for(lambda: "running" in cli(url, "jobs", second)[1], 15, "the second job to run")
    code, text = cli(url, "jobs", second)
    assert "from-yaml" in text and "queue team" in text and "GPUs 2" in text
    code, text = cli(url, "status")
    assert code == 0 and f":{second}" in text and "team" in text
    assert "worker job-000001-a1-r" in cli(url, "logs", first)[1]
    code, text = cli(url, "cancel", second)
    assert code == 0 and "cancelled" in text


def test_errors_exit_1_with_the_services_message(live: Callable[..., Live], out: Path) -> None:
    url = live().url
    code, text = cli(url, "submit", "--gpus", "9", "--", "true")
    assert code == 1 and "at most 4 GPUs" in text
    code, text = cli(url, "jobs", "job-404")
    assert code == 1 and "no job" in text
    code, text = cli("http://127.0.0.1:9", "jobs")
    assert code == 1 and "cannot reach" in text


def test_elastic_bounds_are_flags(live: Callable[..., Live]) -> None:
    """``--min-gpus``/``--max-gpus`` (a YAML file was the only way to submit an elastic job)."""
    handle = live()
    code, text = cli(handle.url, "submit", "--gpus", "2", "--min-gpus", "1", "--max-gpus",
                     "4", "--", "sleep", "30")
    assert code == 0, text
    detail = handle.http.get(f"/v1/jobs/{text.strip()}").json()
    assert (detail["min_gpus"], detail["max_gpus"]) == (1, 4)


def test_a_bad_job_file_is_one_located_line(tmp_path: Path) -> None:
    """It printed PyYAML's five-line message (``in "<unicode string>", line 2``)."""
    job_file = tmp_path / "job.yaml"
    job_file.write_text("gpus: 1\ncommand: [python, train.py\n")
    code, text = cli("http://127.0.0.1:9", "submit", "--file", str(job_file))
    assert code == 1
    assert text.startswith(f"error: {job_file}:3:command: not valid YAML") and text.count(
        "\n") == 1, text


@pytest.mark.parametrize(("text", "expected"), [
    ("gpu: 1\ncommand: [sleep, '1']\n",
     "{file}:1:gpu: not a job field (did you mean 'gpus'?); the job needs gpus here or --gpus N"),
    ("gpus: 1\ncomand: [sleep, '1']\n",
     "{file}:2:comand: not a job field (did you mean 'command'?)"),
    ("gpus: 1\n", "give the command after -- ({file} has none)"),
], ids=["gpu-for-gpus", "comand-for-command", "none-alike"])
def test_a_missing_field_names_the_file_key_like_it(tmp_path: Path, text: str,
                                                    expected: str) -> None:
    """``gpu: 1`` in the file said only "give --gpus N (job.yaml has none)"."""
    job_file = tmp_path / "job.yaml"
    job_file.write_text(text)
    code, output = cli("http://127.0.0.1:9", "submit", "--file", str(job_file))
    assert code == 1
    assert " ".join(output.split()).startswith("error: " + expected.format(file=job_file)), output


def test_a_refused_field_from_the_job_file_names_its_line(live: Callable[..., Live],
                                                          tmp_path: Path) -> None:
    """A 422 or 400 on a field the file gave says where in the file (it said only
    ``command.0``); a field a flag gave is not blamed on the file."""
    url = live().url
    job_file = tmp_path / "job.yaml"
    job_file.write_text("gpus: 1\nqueue: q\ncommand:\n  - python\n  - [nested]\n")
    code, text = cli(url, "submit", "--file", str(job_file))
    assert code == 1 and text.startswith(f"error: {job_file}:5:command[1]: 422:"), text
    job_file.write_text("command: [sleep, '1']\ngpus: 9\n")
    code, text = cli(url, "submit", "--file", str(job_file))
    assert code == 1 and text.startswith(f"error: {job_file}:2:gpus: 400: gpus=9:"), text
    code, text = cli(url, "submit", "--file", str(job_file), "--gpus", "8")
    assert code == 1 and text.startswith("error: 400: gpus=8:"), text
    # a misspelt optional key: the service says only "Extra inputs are not permitted"
    job_file.write_text("command: [sleep, '1']\ngpus: 1\nprioirty: 3\n")
    code, text = cli(url, "submit", "--file", str(job_file))
    assert code == 1 and text.startswith(f"error: {job_file}:3:prioirty: 422:"), text
    assert text.rstrip().endswith("(did you mean 'priority'?)"), text


def test_the_main_app_has_the_verbs_without_importing_fastapi() -> None:
    probe = ("import sys, dlsched.cli as c; "
             "names = {i.callback.__name__ for i in c.app.registered_commands}; "
             "assert {'serve', 'submit', 'jobs', 'cancel', 'logs'} <= names, names; "
             "assert 'fastapi' not in sys.modules and 'sqlalchemy' not in sys.modules")
    subprocess.run([sys.executable, "-c", probe], check=True)


@pytest.mark.parametrize(("args", "message"), [
    (["--executor", "slurm", "--gpus", "2"], "--executor: unknown executor 'slurm' (local, ray)"),
    (["--executor", "ray", "--gpus", "2"], "--executor ray takes its nodes from the Ray cluster"),
], ids=["unknown-executor", "ray-with-gpus"])
def test_serve_refuses_bad_executor_options(args: list[str], message: str,
                                            tmp_path: Path) -> None:
    result = runner.invoke(runtime_app, ["serve", *args, "--data-dir", str(tmp_path)])
    assert result.exit_code == 1
    assert message in " ".join(result.output.split())


@pytest.mark.parametrize(("args", "message"), [
    (["--policy", "fifoo"], "error: --policy: unknown policy 'fifoo'"),
    (["--policy", "fifo", "--policy-opt", "bogus=1"],
     "error: --policy-opt: policy fifo: unknown option 'bogus'"),
    (["--tenants", "missing.yaml"], "error: --tenants: missing.yaml"),
    (["--tenants", "bad.yaml"], "error: --tenants: "),
], ids=["unknown-policy", "unknown-option", "tenants-missing", "tenants-bad"])
def test_serve_checks_policy_and_tenants_before_binding(
        args: list[str], message: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A mistyped --policy or --tenants gives its one-line error alone: no port bound and no
    no-token warning before it (both came first)."""
    from dlsched.runtime import server

    def no_bind(host: str, port: int) -> None:
        raise AssertionError(f"bound {host}:{port} before checking the policy")

    monkeypatch.setattr(server, "bind", no_bind)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "bad.yaml").write_text("cluster_queues: 3\n")
    result = runner.invoke(runtime_app, ["serve", "--gpus", "1", "--port", "0",
                                         "--data-dir", str(tmp_path / "data"), *args])
    assert result.exit_code == 1, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(message), result.output


def test_serve_with_ray_needs_an_address(tmp_path: Path,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    ray = pytest.importorskip("ray")
    # An earlier test may have made this process a Ray driver (then the service would use it):
    # the check under test is the one a fresh process makes.
    monkeypatch.setattr(ray, "is_initialized", lambda: False)
    result = runner.invoke(runtime_app, ["serve", "--executor", "ray", "--data-dir",
                                         str(tmp_path)])
    assert result.exit_code == 1
    assert "--executor ray needs --ray-address" in " ".join(result.output.split())


def test_job_dir_leaves_the_working_directory_to_the_service(live: Callable[..., Live],
                                                             out: Path) -> None:
    """``submit`` sends the current directory as the working directory, which a tenant without
    paths may not use; ``--job-dir`` sends none (the service chooses)."""
    handle = live()
    ids = []
    for flags in (["--job-dir"], []):
        code, text = cli(handle.url, "submit", "--gpus", "1", *flags, "--",
                         *worker("sleep", out, 0))
        assert code == 0, text
        ids.append(text.strip())
    rows = [handle.service.store.job(job_id) for job_id in ids]
    assert [row.working_dir for row in rows if row is not None] == [None, os.getcwd()]


def test_logs_of_a_job_that_printed_nothing_says_so(live: Callable[..., Live]) -> None:
    """It printed nothing at all: no telling an empty log from a failed command."""
    handle = live()
    code, text = cli(handle.url, "submit", "--gpus", "1", "--", "true")
    job_id = text.strip()
    wait_for(lambda: handle.http.get(f"/v1/jobs/{job_id}").json()["status"] == "finished",
             30, f"{job_id} to finish")
    code, text = cli(handle.url, "logs", job_id)
    assert code == 0 and f"({job_id}: its latest log is empty, or it has not run)" in text
