"""docs/inference.md's services file and commands run as written (from the repository's root):
its YAML block is ``examples/services/services.yaml``. The block combined autoscaling with
disaggregation in one service ("only a static llm service can be disaggregated") and named
traces that were not there."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dlsched.cli import app

REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "docs" / "inference.md"
EXAMPLE = REPO / "examples" / "services" / "services.yaml"


def _blocks(kind: str) -> list[str]:
    parts = DOC.read_text().split(f"```{kind}\n")[1:]
    return [part.split("```\n")[0] for part in parts]


def test_the_docs_services_file_is_the_example() -> None:
    assert EXAMPLE.read_text() in _blocks("yaml")


def _commands() -> list[list[str]]:
    lines = _blocks("bash")[0].splitlines()
    return [shlex.split(line, comments=True)[1:] for line in lines if line.startswith("dlsched ")]


@pytest.mark.parametrize("args", _commands(), ids=lambda args: " ".join(args[:2]))
def test_the_docs_commands_run_as_written(args: list[str], tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)
    args = [a.replace("runs/", f"{tmp_path}/") for a in args]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    if args[0] == "simulate":
        out = Path(args[args.index("--out") + 1])
        services = json.loads((out / "services.json").read_text())["services"]
        assert sorted(services) == ["chat", "chat-autoscaled", "chat-split", "vision"]
        assert all(s["requests"] == 1445 for s in services.values())
