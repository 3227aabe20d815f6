"""A name typed in another case gets the closest known name as a hint: ``--cluster
POLLUX-64`` and ``--trace PHILLY-SAMPLE`` listed every name and none as the one meant
(difflib on the names as written finds nothing alike)."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from dlsched.cli import app
from dlsched.wording import did_you_mean


@pytest.mark.parametrize(("flags", "meant"), [
    (["--trace", "pollux-1", "--cluster", "POLLUX-64"], "pollux-64"),
    (["--trace", "PHILLY-SAMPLE", "--cluster", "pollux-64"], "philly-sample"),
], ids=["cluster", "trace"])
def test_a_name_in_another_case_is_named(flags: list[str], meant: str,
                                         tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["simulate", *flags, "--out", str(tmp_path / "out")])
    assert result.exit_code == 2, result.output
    assert f"did you mean {meant!r}?" in " ".join(result.output.split())


def test_the_hint_keeps_the_known_names_own_case() -> None:
    assert did_you_mean("t4", ["V100", "T4"]) == "; did you mean 'T4'?"
    assert did_you_mean("zzz", ["V100", "T4"]) == ""
