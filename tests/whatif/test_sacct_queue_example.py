"""docs/what-if.md, "A queue per Slurm account": its sacct export, tenant file and command,
run as written, print the figures the page shows."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dlsched.cli import app

PAGE = Path(__file__).parents[2] / "docs" / "what-if.md"
CLUSTER = "name: lab\nnode_groups: [{count: 2, gpus: 8, gpu_type: A100}]\n"


def _blocks() -> list[str]:
    """The section's fenced blocks, in order: sacct command, export, tenants, compare, output."""
    section = PAGE.read_text().split("## A queue per Slurm account")[1].split("\n## ")[0]
    return re.findall(r"```\w*\n(.*?)```", section, flags=re.DOTALL)


def test_the_worked_example_runs_as_the_page_says(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    _, export, tenants, command, output = _blocks()
    monkeypatch.chdir(tmp_path)  # the page's relative names
    for name, text in (("week.sacct", export), ("tenants.yaml", tenants),
                       ("cluster.yaml", CLUSTER)):
        Path(name).write_text(text)
    args = command.replace("\\\n", " ").split()[1:]
    result = CliRunner().invoke(app, [*args, "--workers", "1"])
    assert result.exit_code == 0, result.output
    printed = " ".join(result.output.split())
    for line in output.splitlines():  # each as printed, up to the page's "..."
        shown = line.split(" (...)")[0].split(", ...")[0]
        assert " ".join(shown.split()) in printed, shown
    jobs = Path("runs/per-account/fifo/jobs.csv").read_text().splitlines()
    queue = jobs[0].split(",").index("queue")
    assert [row.split(",")[queue] for row in jobs[1:]] == [
        "vision", "nlp", "vision", "vision", "nlp", "nlp", "default"]
