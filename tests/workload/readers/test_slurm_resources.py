"""Slurm accounting with ``sacct_resources`` (``--sacct-resources``): a job asks the CPUs and host
memory Slurm gave it (``AllocTRES`` ``cpu=``, ``mem=``), per GPU. Before, only the GPUs were
read: two jobs that each held a whole node's CPUs ran side by side in the replay."""

from __future__ import annotations

from pathlib import Path

import pytest
from reader_checks import Writer, expect_error
from test_slurm import HEADER, HET, ROWS
from typer.testing import CliRunner

from dlsched.cli import app
from dlsched.errors import InputError
from dlsched.workload.readers import ReaderOptions, read_trace

ON = ReaderOptions(sacct_resources=True)


@pytest.mark.parametrize(("options", "asked"), [
    pytest.param(ON, [("100", 2.0, 16.0), ("103", 2.0, 0.0)], id="carried"),
    pytest.param(ReaderOptions(), [("100", 0.0, 0.0), ("103", 0.0, 0.0)], id="off-by-default"),
])
def test_cpus_and_memory_per_gpu(write: Writer, options: ReaderOptions,
                                 asked: list[tuple[str, float, float]]) -> None:
    # 100: cpu=8, mem=64G, 4 GPUs; 103: cpu=16 and no mem over 8 GPUs on 2 nodes
    trace = read_trace(write("week.sacct", HEADER + ROWS), None, options)
    assert [(j.job_id, j.cpus_per_gpu, j.memory_gb_per_gpu) for j in trace.jobs] == asked


@pytest.mark.parametrize(("memory", "gib"), [
    ("mem=2048", 2.0), ("mem=2048M", 2.0), ("mem=187.50G", 187.5), ("mem=1T", 1024.0),
    ("mem=1048576K", 1.0),
], ids=["no-unit-is-M", "M", "decimal-G", "T", "K"])
def test_memory_units_as_sacct_writes_them(write: Writer, memory: str, gib: float) -> None:
    row = f"7|x|a|gpu|2026-11-02T10:00:00|2026-11-02T10:00:00|2026-11-02T11:00:00|COMPLETED|" \
          f"cpu=4,gres/gpu=1,{memory},node=1\n"
    (job,) = read_trace(write("mem.sacct", HEADER + row), None, ON).jobs
    assert (job.cpus_per_gpu, job.memory_gb_per_gpu) == (4.0, gib)


@pytest.mark.parametrize("bad", ["mem=lots", "cpu=x"])
def test_a_bad_cpu_or_memory_amount_is_located(write: Writer, bad: str) -> None:
    row = f"7|x|a|gpu|2026-11-02T10:00:00|2026-11-02T10:00:00|2026-11-02T11:00:00|COMPLETED|" \
          f"gres/gpu=1,{bad}\n"
    expect_error(write("bad.sacct", HEADER + row), None, 2, "AllocTRES", ON)


def test_a_heterogeneous_job_asks_its_gpu_components_cpus(write: Writer) -> None:
    """200: a launcher (cpu=2 on another node) and GPU components of cpu=8 over 4 GPUs and
    cpu=8 over 2: 16 CPUs over 6 GPUs."""
    trace = read_trace(write("het.sacct", HEADER + HET), None, ON)
    assert {j.job_id: j.cpus_per_gpu for j in trace.jobs} == {"200": 16 / 6, "201": 0.0}


def test_another_format_refuses_the_option(write: Writer) -> None:
    path = write("jobs.csv", "job_id,submit_time,num_gpus,duration\nj1,0,1,60\n")
    with pytest.raises(InputError, match="sacct_resources .* this trace is philly"):
        read_trace(path, "philly", ON)


# Two 1-GPU jobs that each held all 32 CPUs of the node that ran them, one after the other.
SERIAL = (
    "1|a|ana|gpu|2026-11-02T10:00:00|2026-11-02T10:00:00|2026-11-02T11:00:00|COMPLETED|"
    "cpu=32,gres/gpu=1,mem=64G,node=1\n"
    "2|b|bo|gpu|2026-11-02T10:00:00|2026-11-02T11:00:00|2026-11-02T12:00:00|COMPLETED|"
    "cpu=32,gres/gpu=1,mem=64G,node=1\n")


@pytest.mark.parametrize(("flag", "second_start"), [
    pytest.param(["--sacct-resources"], 3600.0, id="waits-for-the-cpus"),
    pytest.param([], 0.0, id="gpus-only"),
])
def test_a_replay_holds_the_cpus_slurm_gave(tmp_path: Path, flag: list[str],
                                           second_start: float) -> None:
    trace, cluster = tmp_path / "week.sacct", tmp_path / "node.yaml"
    trace.write_text(HEADER + SERIAL)
    cluster.write_text("name: one\nnode_groups: [{count: 1, gpus: 4, gpu_type: A100, cpus: 32, "
                       "memory_gb: 256}]\n")
    out = tmp_path / "run"
    result = CliRunner().invoke(app, ["simulate", "--trace", str(trace), "--cluster",
                                      str(cluster), "--out", str(out), *flag])
    assert result.exit_code == 0, result.output
    rows = [line.split(",") for line in (out / "jobs.csv").read_text().splitlines()]
    start = rows[0].index("first_start")
    assert [float(row[start]) for row in rows[1:]] == [0.0, second_start]
