"""The client verbs' token without the command line: ``--token-file F`` and
``$DLSCHED_TOKEN``, and the URL from ``$DLSCHED_SERVICE_URL`` (the names the workers' contract
already uses). ``docs/runtime.md`` tells ``serve`` to prefer ``--token-file`` to ``--token``
("a command line is visible to every user in ``ps``"), yet ``submit``, ``jobs``, ``cancel``,
``logs`` and ``status`` took the token only as ``--token T``, and a service on another port
needed ``--url`` on every command."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from runtime_helpers import Live
from typer.testing import CliRunner

from dlsched.runtime.cli import runtime_app

TOKEN = "cli-token-0123456789abcdef"
runner = CliRunner()


def run(*args: str, env: dict[str, str] | None = None) -> tuple[int, str]:
    result = runner.invoke(runtime_app, list(args), env=env)
    return result.exit_code, result.output


@pytest.mark.parametrize("verb", [["jobs"], ["status"], ["submit", "--gpus", "1", "--", "true"]])
def test_a_token_file_is_read_by_the_client_verbs(live: Callable[..., Live], tmp_path: Path,
                                                  verb: list[str]) -> None:
    url = live(token=TOKEN).url
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN + "\n")
    code, text = run(verb[0], "--url", url, "--token-file", str(token_file), *verb[1:])
    assert code == 0, text


def test_the_url_and_token_may_come_from_the_environment(live: Callable[..., Live]) -> None:
    url = live(token=TOKEN).url
    env = {"DLSCHED_SERVICE_URL": url, "DLSCHED_TOKEN": TOKEN}
    code, text = run("submit", "--gpus", "1", "--", "true", env=env)
    assert code == 0, text
    job_id = text.strip()
    for verb in (["jobs"], ["jobs", job_id], ["status"], ["logs", job_id]):
        code, text = run(*verb, env=env)
        assert code == 0, (verb, text)
    # the flag wins over the environment
    code, text = run("jobs", "--token", "wrong-token-0123456789", env=env)
    assert code == 1 and "401" in text


def test_a_refused_token_names_every_way_to_give_one(live: Callable[..., Live]) -> None:
    url = live(token=TOKEN).url
    code, text = run("jobs", "--url", url, env={"DLSCHED_TOKEN": ""})
    assert code == 1 and "--token-file" in text and "DLSCHED_TOKEN" in text


def test_an_empty_or_missing_token_file_is_one_line(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.write_text("\n")
    code, text = run("jobs", "--token-file", str(empty))
    assert code == 1 and f"token file {empty} is empty" in text
    code, text = run("jobs", "--token-file", str(tmp_path / "nope"))
    assert code == 1 and "nope" in text and "Traceback" not in text


def test_history_cluster_takes_the_same_token_and_url(live: Callable[..., Live],
                                                      tmp_path: Path) -> None:
    """``dlsched history cluster`` reads the running service too: it took ``--url`` and
    ``--token`` alone, with its own default, while the other client verbs gained the file
    and the environment."""
    from dlsched.cli import app

    url = live(token=TOKEN).url
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN)
    out = tmp_path / "cluster.yaml"
    result = runner.invoke(app, ["history", "cluster", "--out", str(out), "--token-file",
                                 str(token_file)], env={"DLSCHED_SERVICE_URL": url})
    assert result.exit_code == 0, result.output
    assert "gpu_type: T4" in out.read_text()
