"""fifo's ``strict`` given with ``--tenants`` is named in a warning as doing nothing: the tenant
layer sets the policy's own blocking aside and each cluster queue's queueing_strategy decides
(``--policy fifo --policy-opt strict=true`` under philly-vcs.yaml ran best-effort FIFO, the
same jobs.csv as strict=false, without a word)."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from dlsched.cli import app

TENANTS = """flavors:
- {name: any, gpu_types: [V100]}
cluster_queues:
- {name: a, quotas: {any: {gpu: 16}}}
- {name: b, quotas: {any: {gpu: 16}}, queueing_strategy: StrictFIFO}
"""


def _simulate(tmp_path: Path, *extra: str) -> str:
    (tmp_path / "t.yaml").write_text(TENANTS)
    (tmp_path / "jobs.csv").write_text("job_id,submit_time,num_gpus,duration,queue\n"
                                       "j1,0,1,10,a\nj2,0,1,10,b\n")
    result = CliRunner().invoke(app, [
        "simulate", "--trace", str(tmp_path / "jobs.csv"), "--format", "dlsched-history",
        "--cluster", "small-16", "--out", str(tmp_path / "out"), *extra])
    assert result.exit_code == 0, result.output
    return " ".join(result.output.split())


@pytest.mark.parametrize("option", ["strict=true", "fifo:strict=false"])
def test_strict_under_tenants_is_named_as_doing_nothing(tmp_path: Path, option: str) -> None:
    shown = _simulate(tmp_path, "--policy", "fifo", "--policy-opt", option,
                      "--tenants", str(tmp_path / "t.yaml"))
    assert ("fifo: --policy-opt strict has no effect under --tenants: each cluster queue's "
            "queueing_strategy decides whether a head that cannot start blocks the jobs behind "
            f"it ({tmp_path / 't.yaml'}: BestEffortFIFO for 1 of them, StrictFIFO for 1 of "
            "them; docs/tenancy.md)") in shown


@pytest.mark.parametrize("extra", [
    ("--policy", "fifo", "--policy-opt", "strict=true"),  # no tenants: the option decides
    ("--policy", "fifo", "--tenants", "{t}"),  # not given
], ids=["without-tenants", "not-given"])
def test_no_warning_where_strict_is_not_set_aside(tmp_path: Path, extra: tuple[str, ...]) -> None:
    shown = _simulate(tmp_path, *(e.format(t=tmp_path / "t.yaml") for e in extra))
    assert "has no effect" not in shown
