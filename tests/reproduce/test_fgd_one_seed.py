"""fgd-atc23 with one seed (``--opt repeats=1``, ``--seeds 42``) wrote its ``*_std`` rows with
an empty ``dlsched`` cell (24 of them on the default cases, session 33 helper C): a script that
reads reproduce.csv's ``dlsched`` column as numbers failed on them. One seed has no spread to
measure, so those rows are left out; with two seeds or more they are there, with a number."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dlsched.cli import app

NODES = "sn,cpu_milli,memory_mib,gpu,model\n" + "".join(
    f"n{i},16000,65536,2,V100\n" for i in range(16))
# 96 one-GPU pods of 1/4, 1/2 and a whole GPU: each seed reaches 50% and 100% arrived
PODS = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec\n" + "".join(
    f"p{i},1000,1024,1,{(250, 500, 1000)[i % 3]},\n" for i in range(96))


@pytest.mark.parametrize(("repeats", "std_rows"), [("1", 0), ("2", 4)], ids=["one", "two"])
def test_std_rows_only_where_there_is_a_spread(tmp_path: Path, repeats: str,
                                               std_rows: int) -> None:
    (tmp_path / "openb_node_list_gpu_node.csv").write_text(NODES)
    (tmp_path / "openb_pod_list_default.csv").write_text(PODS)
    out = tmp_path / "out"
    result = CliRunner().invoke(app, [
        "reproduce", "fgd-atc23", "--variants", "default", "--opt", f"data={tmp_path}",
        "--opt", f"repeats={repeats}", "--opt", "arrived=50,100", "--opt",
        "policies=fgd", "--out", str(out)])
    assert result.exit_code == 0, result.output
    with (out / "reproduce.csv").open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert [float(r["dlsched"]) for r in rows]  # every cell a number
    assert sum(r["metric"].endswith("_std") for r in rows) == std_rows
    assert len(rows) == 4 + std_rows  # 2 cases x (alloc ratio, unallocated GPUs)
