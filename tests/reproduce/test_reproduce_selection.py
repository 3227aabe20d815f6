"""What `dlsched reproduce` refuses before it runs anything: `--seeds` given to an experiment
that draws no random numbers (pollux-osdi21 ran its eight workloads and ignored them without a
word), and an empty `--cases ''`, `--variants ''` or `--seeds ''` (the first two ran nothing and
wrote an empty reproduce.csv, exit 0)."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from dlsched.cli import app

SEEDED = "fgd-atc23, llama3-405b, llama3-405b-tenants"


@pytest.mark.parametrize(("args", "message"), [
    pytest.param(["pollux-osdi21", "--seeds", "1,2"],
                 "--seeds: experiment pollux-osdi21 draws no random numbers, so it has no "
                 f"seeds to average over (experiments with seeds: {SEEDED})",
                 id="seeds-for-a-deterministic-experiment"),
    pytest.param(["tiresias-nsdi19", "--seeds", "7"],
                 "--seeds: experiment tiresias-nsdi19 draws no random numbers",
                 id="seeds-for-tiresias"),
    pytest.param(["llama3-405b", "--seeds", ""], "--seeds: name at least one seed",
                 id="empty-seeds"),
    pytest.param(["pollux-osdi21", "--cases", ""],
                 "--cases: name at least one of experiment pollux-osdi21's cases, or 'all'",
                 id="empty-cases"),
    pytest.param(["pollux-osdi21", "--variants", " , "],
                 "--variants: name at least one of experiment pollux-osdi21's variants, or "
                 "'all'", id="blank-variants"),
])
def test_refused_before_anything_runs(tmp_path: Path, args: list[str], message: str) -> None:
    result = CliRunner().invoke(app, ["reproduce", *args, "--out", str(tmp_path / "out")])
    assert result.exit_code == 2, result.output
    assert message in " ".join(result.output.split())
    assert not (tmp_path / "out").exists()


def test_the_list_says_which_experiments_take_seeds() -> None:
    listed = CliRunner().invoke(app, ["reproduce", "--list"], env={"COLUMNS": "100"})
    blocks = {block.split("\n", 1)[0]: block for block in listed.output.split("\n\n")}
    for name in SEEDED.split(", "):
        assert "--seeds: yes" in blocks[name], blocks[name]
    assert "--seeds" not in blocks["pollux-osdi21"]
