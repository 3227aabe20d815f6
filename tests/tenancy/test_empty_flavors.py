"""A tenant flavor that no GPU node belongs to is warned about before the run."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from dlsched.cli import app
from dlsched.cluster.cluster import Cluster, Node
from dlsched.tenancy.assignment import empty_flavors
from dlsched.tenancy.loader import parse_tenants

TENANTS = """flavors:
- {name: a100, gpu_types: [A100]}
- {name: h100, gpu_types: [H100]}
- {name: research, pools: [research]}
cluster_queues:
- name: team
  quotas: {a100: {gpu: 8}, h100: {gpu: 8}}
"""


def test_only_flavors_without_a_gpu_node_are_named() -> None:
    cluster = Cluster("c", (Node("n0", "A100", 8), Node("cpu0", "H100", 0)))
    warnings = empty_flavors(parse_tenants(TENANTS, "t.yaml"), cluster, "c.yaml")
    assert warnings == [
        "t.yaml: flavor 'h100' (gpu_types H100) matches no GPU node of cluster c.yaml: jobs "
        "its quota admits can never run (cluster queues team)",
        "t.yaml: flavor 'research' (pools research) matches no GPU node of cluster c.yaml: "
        "jobs its quota admits can never run"]


def test_simulate_warns_of_an_empty_flavor(tmp_path: Path) -> None:
    (tmp_path / "t.yaml").write_text(TENANTS)
    (tmp_path / "c.yaml").write_text("name: c\nnode_groups:\n"
                                     "  - {count: 1, gpus: 8, gpu_type: A100}\n")
    (tmp_path / "jobs.csv").write_text("job_id,submit_time,num_gpus,duration,queue\n"
                                       "a,0,1,10,team\n")
    result = CliRunner().invoke(app, [
        "simulate", "--trace", str(tmp_path / "jobs.csv"), "--format", "dlsched-history",
        "--cluster", str(tmp_path / "c.yaml"), "--tenants", str(tmp_path / "t.yaml"),
        "--policy", "fifo", "--out", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    assert "flavor 'h100' (gpu_types H100) matches no GPU node" in result.output
    assert "flavor 'a100'" not in result.output
