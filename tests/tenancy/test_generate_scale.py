"""`dlsched tenants --scale`: it multiplies `--sizes`' numbers, so it must be a finite number
above 0, and it is refused without `--sizes` (it was ignored without a word; `--scale 0` wrote
every quota 0; `--scale -1` failed in the loader at '<string>:13', a place no user can find)."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from dlsched.cli import app

SIZES = str(Path(__file__).resolve().parents[2] / "dlsched/data/clusters/philly_vc_nodes.csv")


@pytest.mark.parametrize(("flags", "message"), [
    pytest.param(["--sizes", SIZES, "--scale", "0"], "--scale: must be a finite number > 0, "
                 "got 0", id="zero"),
    pytest.param(["--sizes", SIZES, "--scale", "-1"], "--scale: must be a finite number > 0, "
                 "got -1", id="negative"),
    pytest.param(["--sizes", SIZES, "--scale", "nan"], "--scale: must be a finite number > 0, "
                 "got nan", id="nan"),
    pytest.param(["--scale", "8"], "--scale multiplies the sizes of --sizes FILE",
                 id="without-sizes"),
])
def test_a_scale_that_cannot_apply_is_refused(tmp_path: Path, flags: list[str],
                                              message: str) -> None:
    out = tmp_path / "t.yaml"
    result = CliRunner().invoke(app, ["tenants", "philly-sample", "--cluster", "philly",
                                      *flags, "--out", str(out)])
    assert result.exit_code == 2, result.output
    assert message in " ".join(result.output.split())
    assert not out.exists()


def test_a_scale_with_sizes_multiplies_them(tmp_path: Path) -> None:
    out = tmp_path / "t.yaml"
    result = CliRunner().invoke(app, ["tenants", "philly-sample", "--cluster", "philly",
                                      "--sizes", SIZES, "--scale", "8", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "x 8" in out.read_text()
