"""The README's figures are what its commands give: its tenants example said srtf 1.75 h and
VC 11cb48 0.03 h after the schedules had moved to 1.66 h and 0.02 h."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

import dlsched
from dlsched.cli import app
from dlsched.notebook import read_jobs

README = (Path(__file__).parents[1] / "README.md").read_text()


def _hours(seconds: float) -> str:
    return f"{seconds / 3600:.2f}"


@pytest.mark.slow
def test_the_tenants_example_gives_the_readmes_figures(tmp_path: Path) -> None:
    found = re.search(r"mean JCT fifo ([\d.]+) h, srtf ([\d.]+) h; VC 11cb48 waits ([\d.]+) h"
                      r"\s*#\s*under fifo, ([\d.]+) h under srtf", README)
    assert found, "the README's tenants example lost its figures"
    tenants = tmp_path / "vcs.yaml"
    made = CliRunner().invoke(app, ["tenants", "philly-tiresias-2000", "--cluster",
                                    "gavel-108", "--out", str(tenants)])
    assert made.exit_code == 0, made.output
    result = dlsched.compare("philly-tiresias-2000", "gavel-108", ["fifo", "srtf"], limit=500,
                             tenants=str(tenants), out=tmp_path / "vcs")
    waits = []
    for policy in ("fifo", "srtf"):
        jobs = read_jobs(tmp_path / "vcs" / policy)
        mine = jobs[(jobs["queue"] == "11cb48") & jobs["first_start"].notna()]
        waits.append(_hours((mine["first_start"] - mine["submit_time"]).mean()))
    measured = (_hours(result["fifo"].summary["jct_mean"]),
                _hours(result["srtf"].summary["jct_mean"]), *waits)
    assert measured == found.groups()


def test_the_pollux_2_comparison_gives_the_readmes_figures() -> None:
    found = re.search(r"mean JCT fifo ([\d.]+) h, backfill ([\d.]+) h, tiresias ([\d.]+) h",
                      README)
    assert found, "the README's compare example lost its figures"
    result = dlsched.compare("pollux-2", "pollux-64", ["fifo", "backfill", "tiresias"])
    measured = tuple(f"{result[p].summary['jct_mean'] / 3600:.1f}"
                     for p in ("fifo", "backfill", "tiresias"))
    assert measured == found.groups()
