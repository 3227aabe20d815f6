"""The never-admitted warning agrees with its count: one job read "1 job can never be admitted
(they ask more than their queue may ever use)"."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from dlsched.cli import app

TENANTS = """flavors:
- name: v100
  gpu_types: [V100]
cluster_queues:
- name: default
  quotas: {v100: {gpu: 2}}
"""
HEADER = "name,time,application,num_replicas,batch_size\n"


@pytest.mark.parametrize(("rows", "expected"), [
    pytest.param("big-1,10,cifar10,3,2048\n",
                 "1 job can never be admitted (it asks more than its queue may ever use): "
                 "big-1 (default)", id="one"),
    pytest.param("big-1,10,cifar10,3,2048\nbig-2,20,cifar10,4,2048\n",
                 "2 jobs can never be admitted (they ask more than their queue may ever use): "
                 "big-1 (default), big-2 (default)", id="two"),
])
def test_the_warning_agrees_with_its_count(tmp_path: Path, rows: str, expected: str) -> None:
    (tmp_path / "t.yaml").write_text(TENANTS)
    (tmp_path / "w.csv").write_text(HEADER + "small-0,0,ncf,1,32768\n" + rows)
    result = CliRunner().invoke(app, ["simulate", "--trace", str(tmp_path / "w.csv"),
                                      "--cluster", "tiny-4", "--tenants",
                                      str(tmp_path / "t.yaml"), "--out", str(tmp_path / "o")])
    assert result.exit_code == 0, result.output
    assert expected in " ".join(result.output.split())
