"""Helios ``cluster_log.csv`` (HeliosData schema): VCs as queues, CPU-only and never-run jobs
dropped and counted, errors naming file, line and field; with ``dlsched tenants`` the VCs'
GPU counts become quotas (and, as the jobs ask for CPUs, CPU quotas beside them)."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from dlsched.cli import app
from dlsched.errors import InputError
from dlsched.tenancy.loader import load_tenants
from dlsched.workload.readers.base import ReaderOptions, detect_format, read_trace

HEADER = ("job_id,user,vc,gpu_num,cpu_num,node_num,state,submit_time,start_time,end_time,"
          "duration,queue\n")
ROWS = [
    "11,uA,vcX,1,4,1,COMPLETED,2020-06-09 18:41:01,2020-06-09 18:41:01,2020-06-09 19:41:01,3600,0",
    "12,uB,vcY,8,32,1,FAILED,2020-06-09 18:42:01,2020-06-09 18:45:01,2020-06-09 18:55:01,600,180",
    "13,uC,vcX,0,2,1,COMPLETED,2020-06-09 18:43:01,2020-06-09 18:43:01,2020-06-09 18:44:01,60,0",
    "14,uD,vcY,2,8,1,CANCELLED,2020-06-09 18:44:01,2020-06-09 18:44:01,2020-06-09 18:44:01,0,0",
]


def _write(tmp_path: Path, rows: list[str]) -> Path:
    path = tmp_path / "cluster_log.csv"
    path.write_text(HEADER + "\n".join(rows) + "\n")
    return path


def test_jobs_queues_and_drops(tmp_path: Path) -> None:
    path = _write(tmp_path, ROWS)
    assert detect_format(path) == "helios"
    trace = read_trace(path)
    jobs = {j.job_id: j for j in trace.jobs}
    assert set(jobs) == {"helios-11", "helios-12"}
    a, b = jobs["helios-11"], jobs["helios-12"]
    assert (a.queue, a.num_gpus, a.work, a.submit_time, a.cpus_per_gpu) == ("vcX", 1, 3600.0,
                                                                             0.0, 4.0)
    assert (b.queue, b.num_gpus, b.work, b.submit_time, b.cpus_per_gpu) == ("vcY", 8, 600.0,
                                                                             60.0, 4.0)
    assert trace.skipped == 0
    assert any("dropped 1 row: CPU-only" in w for w in trace.warnings)
    assert any("dropped 1 row: never ran" in w for w in trace.warnings)


@pytest.mark.parametrize(("row", "where"), [
    ("15,uE,vcX,2,8,1,LOST,2020-06-09 18:41:01,x,y,10,0", "cluster_log.csv:2:state"),
    ("15,uE,vcX,2,8,1,COMPLETED,June 9th,x,y,10,0", "cluster_log.csv:2:submit_time"),
    ("15,uE,vcX,-1,8,1,COMPLETED,2020-06-09 18:41:01,x,y,10,0", "cluster_log.csv:2:gpu_num"),
])
def test_bad_rows_name_file_line_and_field(tmp_path: Path, row: str, where: str) -> None:
    with pytest.raises(InputError, match=where):
        read_trace(_write(tmp_path, [row]))
    skipped = read_trace(_write(tmp_path, [row, ROWS[0]]), options=ReaderOptions(
        skip_invalid=True))
    assert skipped.skipped == 1 and len(skipped.jobs) == 1


def test_vcs_become_queues_with_their_gpu_counts(tmp_path: Path) -> None:
    log = _write(tmp_path, ROWS)
    sizes = tmp_path / "cluster_gpu_number.csv"
    sizes.write_text("date,vcX,vcY,total\n2020-06-08,8,8,16\n2020-06-09,4,12,16\n")
    out = tmp_path / "vcs.yaml"
    made = CliRunner().invoke(app, ["tenants", str(log), "--cluster", "small-16", "--sizes",
                                    str(sizes), "--out", str(out)])
    assert made.exit_code == 0, made.output
    quotas = {name: cq.quotas for name, cq in load_tenants(out).cluster_queues.items()}
    def total(resource: str) -> dict[str, float]:
        return {name: sum(q.nominal for (_, r), q in by_flavor.items() if r == resource)
                for name, by_flavor in quotas.items()}

    assert total("gpu") == {"vcX": 4, "vcY": 12}
    # the jobs ask for CPUs (cpu_num): a CPU quota beside each GPU quota, the nodes' CPUs per
    # GPU (small-16: 8) times the GPUs, or no job could be admitted
    assert total("cpu") == {"vcX": 32, "vcY": 96}
