"""``dlsched tenants``: a tenant file from a trace's queues (``tenancy/generate.py``)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
import yaml  # noqa: I001
from builders import cluster_of, make_job
from typer.testing import CliRunner

from dlsched.cli import app
from dlsched.cluster.cluster import Node
from dlsched.errors import InputError
from dlsched.tenancy.generate import apportion, read_sizes, tenants_for
from dlsched.tenancy.loader import load_tenants, parse_tenants
from dlsched.workload.trace import Trace


@pytest.mark.parametrize(("total", "weights", "want"), [
    (10, {"a": 1, "b": 1}, {"a": 5, "b": 5}),
    (10, {"a": 1, "b": 2}, {"a": 3, "b": 7}),  # 3.33 / 6.67: b has the larger remainder
    (7, {"a": 1, "b": 1, "c": 1}, {"a": 3, "b": 2, "c": 2}),  # ties by name
    (4, {"a": 0, "b": 0}, {"a": 0, "b": 0}),
])
def test_apportion_by_largest_remainder(total: int, weights: dict, want: dict) -> None:
    got = apportion(total, weights)
    assert got == want and (sum(got.values()) == total or not any(weights.values()))


TWO_TYPES = cluster_of(Node("v", "V100", 8), Node("k", "K80", 4))
# a: 2 GPUs x 300 s = 600 GPU-s; b: 1 GPU x 1200 s = 1200 GPU-s (the linear model's seconds).
TRACE = Trace("t", (make_job("a1").gpus(2).work(300).queue("a").build(),
                    make_job("b1").gpus(1).work(1200).queue("b").build()))


def test_quotas_follow_demand_per_gpu_type_and_add_up_to_the_cluster() -> None:
    doc = tenants_for(TRACE, TWO_TYPES)
    quotas = {q["name"]: q["quotas"] for q in doc["cluster_queues"]}
    # V100: 8 x 1/3, 8 x 2/3 -> 2.67, 5.33 -> 3, 5; K80: 1.33, 2.67 -> 1, 3.
    assert quotas == {"a": {"v100": {"gpu": 3}, "k80": {"gpu": 1}},
                      "b": {"v100": {"gpu": 5}, "k80": {"gpu": 3}}}
    config = parse_tenants(yaml.safe_dump(doc))
    assert config.cluster_queues["a"].cohort == "all"


def test_a_queue_pinned_to_one_type_gets_its_quota_on_that_type() -> None:
    # Queue k's only job is pinned to K80 ("k80", as a Slurm gres names it): its 600 GPU-s
    # count on the K80s only, so it gets no V100; a's 600 GPU-s (unpinned) count 8/12 on the
    # V100s and 4/12 (200) on the K80s: V100 8 / 0, K80 200:600 -> 1 / 3. Before, each queue
    # got the same share of every type (k: 4 V100s it can never use).
    trace = Trace("t", (make_job("a1").gpus(2).work(300).queue("a").build(),
                        make_job("k1").gpus(1).work(600).queue("k").types("k80").build()))
    doc = tenants_for(trace, TWO_TYPES)
    quotas = {q["name"]: q["quotas"] for q in doc["cluster_queues"]}
    assert quotas == {"a": {"v100": {"gpu": 8}, "k80": {"gpu": 1}},
                      "k": {"v100": {"gpu": 0}, "k80": {"gpu": 3}}}


def test_sizes_split_over_types_and_strict_has_no_cohort() -> None:
    doc = tenants_for(TRACE, TWO_TYPES, {"a": 6, "c": 6}, borrowing=False)
    quotas = {q["name"]: q["quotas"] for q in doc["cluster_queues"]}
    assert quotas == {"a": {"v100": {"gpu": 4}, "k80": {"gpu": 2}},  # 6 x 8/12, 6 x 4/12
                      "b": {"v100": {"gpu": 0}, "k80": {"gpu": 0}}}  # not in the table
    assert "cohorts" not in doc
    assert parse_tenants(yaml.safe_dump(doc)).cluster_queues["b"].cohort is None


def test_read_sizes_two_columns_and_helios_daily(tmp_path: Path) -> None:
    pairs = tmp_path / "vc.csv"
    pairs.write_text("vc,node num\n6214e9,64\n7f04ca,32\n")
    assert read_sizes(pairs, scale=8) == {"6214e9": 512.0, "7f04ca": 256.0}
    daily = tmp_path / "daily.csv"
    daily.write_text("date,vcA,vcB,total\n2020-04-01,8,16,24\n2020-04-02,16,16,32\n")
    assert read_sizes(daily) == {"vcA": 16.0, "vcB": 16.0}
    bad = tmp_path / "bad.csv"
    bad.write_text("vc,gpus\nx,8\ny,many\n")
    with pytest.raises(InputError, match=r"bad.csv:3:size: expected a number, got 'many'"):
        read_sizes(bad)


def test_cli_writes_a_file_that_simulate_accepts(tmp_path: Path) -> None:
    runner = CliRunner()
    out = tmp_path / "tenants.yaml"
    made = runner.invoke(app, ["tenants", "philly-sample", "--cluster", "philly", "--out",
                               str(out)])
    assert made.exit_code == 0, made.output
    config = load_tenants(out)
    assert len(config.cluster_queues) >= 10
    assert sum(q.quotas[("p100", "gpu")].nominal for q in config.cluster_queues.values()) == 2816
    run = runner.invoke(app, ["simulate", "--trace", "philly-sample", "--cluster", "philly",
                              "--policy", "fifo", "--limit", "200", "--tenants", str(out),
                              "--out", str(tmp_path / "run")])
    assert run.exit_code == 0, run.output


def test_cli_names_a_bad_sizes_file(tmp_path: Path) -> None:
    bad = tmp_path / "sizes.csv"
    bad.write_text("vc,gpus\nx,-4\n")
    result = CliRunner().invoke(app, ["tenants", "philly-sample", "--cluster", "philly",
                                      "--sizes", str(bad)])
    assert result.exit_code == 2 and "sizes.csv:2:size" in result.output


def test_cli_refuses_sizes_that_name_none_of_the_traces_queues(tmp_path: Path) -> None:
    sizes = tmp_path / "other.csv"
    sizes.write_text("vc,gpus\nvcA,8\nvcB,8\n")
    result = CliRunner().invoke(app, ["tenants", "philly-sample", "--cluster", "philly",
                                      "--sizes", str(sizes)])
    assert result.exit_code == 2 and "none of its queues" in " ".join(result.output.split())


def test_one_queue_reads_as_one(tmp_path: Path) -> None:
    """A trace of one queue said "1 cluster queues -> ..."."""
    trace = tmp_path / "one.csv"
    trace.write_text("job_id,submit_time,num_gpus,duration,queue\na,0,1,100,team\n"
                     "b,5,2,50,team\n")
    result = CliRunner().invoke(app, ["tenants", str(trace), "--cluster", "philly",
                                      "--out", str(tmp_path / "t.yaml")])
    assert result.exit_code == 0, result.output
    assert result.output.startswith("1 cluster queue ->"), result.output


def test_cli_makes_the_folder_of_its_out_file(tmp_path: Path) -> None:
    """The README's `dlsched tenants ... --out runs/vcs.yaml` said "cannot write: No such file
    or directory" where runs/ was not there yet; simulate, history export and history cluster
    make their --out's folder."""
    out = tmp_path / "runs" / "vcs.yaml"
    made = CliRunner().invoke(app, ["tenants", "philly-sample", "--cluster", "philly", "--out",
                                    str(out)])
    assert made.exit_code == 0, made.output
    assert len(load_tenants(out).cluster_queues) >= 10


def test_resources_beyond_gpus_a_job_asks_get_quotas_beside_the_gpus() -> None:
    """A job asking CPUs or GPU memory in a queue with no quota of them can never be admitted
    (Kueue's rule): the file had GPU quotas only, so a history export's MPS job (its
    ``gpu_memory_gb``) never ran in the what-if replay. The nodes' amounts per GPU where they
    account them (V100: 64 CPUs / 8 GPUs, 16 GB a GPU), else the most a job asks per GPU
    (the K80 node has no CPU count: 6)."""
    cluster = cluster_of(Node("v", "V100", 8, cpus=64), Node("k", "K80", 4))
    trace = Trace("t", (make_job("a1").gpus(2).work(300).queue("a").build(),
                        make_job("b1").gpus(1).work(1200).queue("b").share(0.5).build()))
    asks = {"a1": {"cpus_per_gpu": 6.0}, "b1": {"gpu_memory_gb": 8.0}}
    trace = Trace("t", tuple(replace(s, **asks[s.job_id]) for s in trace.jobs))
    quotas = {q["name"]: q["quotas"] for q in tenants_for(trace, cluster)["cluster_queues"]}
    assert quotas["a"] == {"v100": {"gpu": 3, "cpu": 24, "gpu_memory": 48},
                           "k80": {"gpu": 1, "cpu": 6, "gpu_memory": 12}}
    assert quotas["b"]["v100"] == {"gpu": 5, "cpu": 40, "gpu_memory": 80}


def test_a_replayed_mps_job_runs_under_the_file_written_for_its_trace(tmp_path: Path) -> None:
    history = tmp_path / "week.csv"
    history.write_text("job_id,submit_time,num_gpus,duration,queue,gpu_share,gpu_memory_gb\n"
                       "j1,0,1,10,default,1.0,0\nj2,5,1,10,default,0.5,8\n")
    out = tmp_path / "tenants.yaml"
    runner = CliRunner()
    made = runner.invoke(app, ["tenants", str(history), "--cluster", "tiny-4", "--out", str(out)])
    assert made.exit_code == 0, made.output
    run = runner.invoke(app, ["simulate", "--trace", str(history), "--cluster", "tiny-4",
                              "--tenants", str(out), "--out", str(tmp_path / "run")])
    assert run.exit_code == 0, run.output
    assert "2/2 finished" in run.output and "never be admitted" not in run.output


SACCT = ("JobID|Account|Partition|Submit|Start|End|State|AllocTRES\n"
         "1|vision|gpu|2026-11-02T09:00:00+0000|2026-11-02T09:00:10+0000|"
         "2026-11-02T10:00:10+0000|COMPLETED|cpu=32,gres/gpu:a100=4,gres/gpu=4,mem=128G\n"
         "2|nlp|gpu|2026-11-02T09:05:00+0000|2026-11-02T09:05:05+0000|"
         "2026-11-02T11:05:05+0000|COMPLETED|cpu=8,gres/gpu:a100=2,gres/gpu=2,mem=64G\n")


def test_sacct_resources_gives_the_cpu_and_memory_quotas_its_replay_needs(
        tmp_path: Path) -> None:
    """``simulate --sacct-resources`` makes each job ask its CPUs and memory; a tenant file
    without those quotas admits none of them (NO_QUOTA), and ``dlsched tenants`` had no way
    to read the export that way."""
    week, out = tmp_path / "week.sacct", tmp_path / "tenants.yaml"
    week.write_text(SACCT)
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text("name: lab\nnode_groups: [{count: 2, gpus: 8, gpu_type: A100}]\n")
    runner = CliRunner()
    made = runner.invoke(app, ["tenants", str(week), "--cluster", str(cluster), "--sacct-queue",
                               "account", "--sacct-resources", "--out", str(out)])
    assert made.exit_code == 0, made.output
    assert "--sacct-resources" in out.read_text().splitlines()[0]
    quotas = load_tenants(out).cluster_queues["vision"].quotas
    assert {r for _, r in quotas} == {"gpu", "cpu", "memory"}
    run = runner.invoke(app, ["simulate", "--trace", str(week), "--sacct-queue", "account",
                              "--sacct-resources", "--cluster", str(cluster), "--tenants",
                              str(out), "--out", str(tmp_path / "run")])
    assert run.exit_code == 0, run.output
    assert "2/2 finished" in run.output
