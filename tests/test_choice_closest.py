"""A mistyped choice of `simulate`/`compare` (and of a run file) and of `serve --executor`
names the closest one, as mistyped policies, clusters and traces do (session 28): `--placement
spred` listed eleven placements and left the reader to find 'spread'."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from dlsched.cli import app


@pytest.mark.parametrize(("flags", "message"), [
    pytest.param(["simulate", "--placement", "spred"], "--placement: 'spred' is not one of "
                 "consolidated, spread,", id="placement"),
    pytest.param(["simulate", "--resilience", "elastik"], "--resilience: 'elastik' is not one "
                 "of restart, elastic, oobleck; did you mean 'elastic'?", id="resilience"),
    pytest.param(["simulate", "--work-definition", "step"], "did you mean 'steps'?",
                 id="work-definition"),
    pytest.param(["simulate", "--mig-placement", "firstfit"], "did you mean 'first-fit'?",
                 id="mig-placement"),
    pytest.param(["simulate", "--sacct-queue", "acount"], "did you mean 'account'?",
                 id="sacct-queue"),
    pytest.param(["compare", "--jobs-format", "parket"], "did you mean 'parquet'?",
                 id="jobs-format"),
    pytest.param(["serve", "--executor", "rey"], "unknown executor 'rey' (local, ray); did you "
                 "mean 'ray'?", id="executor"),
])
def test_a_mistyped_choice_names_the_closest(tmp_path: Path, flags: list[str],
                                             message: str) -> None:
    result = CliRunner().invoke(app, [*flags, "--out" if flags[0] != "serve" else "--data-dir",
                                      str(tmp_path / "out")])
    assert result.exit_code in (1, 2), result.output
    text = " ".join(result.output.split())
    assert message in text, text
    if flags[0] == "simulate" and flags[1] == "--placement":
        assert "did you mean 'spread'?" in text
