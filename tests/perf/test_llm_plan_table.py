"""``dlsched plan``'s table keeps every value whole in an 80-column terminal or a pipe: its 13
columns were squeezed to fit, and the results read "17.…", "188…", "0.5…"."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from dlsched.cli import app

ARGS = ["plan", "gpt3-175b", "--gpus", "1024", "--cluster", "megatron-selene", "--top", "5"]


@pytest.mark.parametrize("columns", ["80", "60"])
def test_no_value_is_cut(columns: str) -> None:
    runner = CliRunner()
    best = json.loads(runner.invoke(app, [*ARGS, "--json"]).output)
    result = runner.invoke(app, ARGS, env={"COLUMNS": columns})
    assert result.exit_code == 0, result.output
    assert "…" not in result.output
    rows = [line.split() for line in result.output.splitlines()]
    for estimate, cells in zip(best, (r for r in rows if r and r[0].isdigit()), strict=True):
        assert cells == [f"{v:.4g}" if isinstance(v, float) else str(v)
                         for v in estimate.values()]
