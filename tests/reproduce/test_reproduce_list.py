"""``dlsched reproduce --list`` at 80 columns shows every name, case, variant and option whole:
its five-column table cut them to "comma-sepa…", "gpushare10…", "(default 50,80,90,1…"."""

from __future__ import annotations

import re

from typer.testing import CliRunner

from dlsched.cli import app
from dlsched.reproduce.registry import registered_experiments


def test_every_key_and_option_is_whole_at_80_columns() -> None:
    result = CliRunner().invoke(app, ["reproduce", "--list"], env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    assert "…" not in result.output
    assert max(len(line) for line in result.output.splitlines()) <= 80
    words = set(re.split(r"[\s,()]+", result.output))
    text = " ".join(result.output.split())
    for experiment in registered_experiments().values():
        assert experiment.name in words
        assert set(experiment.cases) <= words and set(experiment.variants) <= words
        for key, help_text in experiment.options.items():
            assert f"--opt {key}: {' '.join(help_text.split())}" in text
