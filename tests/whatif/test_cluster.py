"""``dlsched history cluster``: the API's cluster view as a cluster YAML the simulator loads
with the same nodes, GPU types and GPU numbering, and the CPUs and memory the service
accounted, so a replay schedules them as the service did."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("pydantic")

from dlsched.cluster.loader import parse_cluster_yaml  # noqa: E402
from dlsched.runtime.models import ClusterView, GpuView, NodeView  # noqa: E402
from dlsched.whatif.cluster import cluster_yaml  # noqa: E402


def node(name: str, gpu_type: str, gpus: int, first: int, **resources: float) -> NodeView:
    return NodeView(name=name, gpu_type=gpu_type,
                    gpus=[GpuView(index=i, gpu=first + i, job_id=None) for i in range(gpus)],
                    **resources)


def test_the_view_round_trips_through_the_cluster_loader() -> None:
    view = ClusterView(name="lab", policy="fifo", gpus_total=12, gpus_allocated=0.0,
                       nodes=[node("a", "V100", 8, 0), node("b", "T4", 4, 8)])
    cluster = parse_cluster_yaml(cluster_yaml(view), "lab.yaml")
    assert [(n.name, n.gpu_type, n.num_gpus) for n in cluster.nodes] == [
        ("a", "V100", 8), ("b", "T4", 4)]
    assert cluster.num_gpus == 12


def test_a_view_from_an_older_server_keeps_the_loader_defaults() -> None:
    """A server without the resource fields: CPUs and memory unaccounted, as before."""
    body = {"name": "lab", "policy": "fifo", "gpus_total": 2, "gpus_allocated": 0.0,
            "nodes": [{"name": "a", "gpu_type": "T4", "gpus": [
                {"index": i, "gpu": i, "job_id": None} for i in range(2)]}]}
    cluster = parse_cluster_yaml(cluster_yaml(ClusterView.model_validate(body)), "lab.yaml")
    assert (cluster.nodes[0].cpus, cluster.nodes[0].memory_gb, cluster.nodes[0].rack) == (
        0, 0, "rack-0")


def test_a_replay_on_the_written_cluster_schedules_cpus_as_the_service_did(
        tmp_path: Path) -> None:
    """Two one-GPU jobs asking 24 CPUs each on a 32-CPU node: the service ran them one after
    the other; a replay on the written cluster does too (mean JCT 150 s; 100 s when the
    cluster file left CPUs out and both ran at once)."""
    import dlsched

    view = ClusterView(name="lab", policy="fifo", gpus_total=4, gpus_allocated=0.0,
                       nodes=[node("a", "A100", 4, 0, cpus=32, memory_gb=256)])
    (tmp_path / "lab.yaml").write_text(cluster_yaml(view))
    (tmp_path / "history.csv").write_text(
        "job_id,submit_time,num_gpus,duration,queue,cpus_per_gpu\n"
        "j1,1000,1,100,default,24\nj2,1000,1,100,default,24\n")
    run = dlsched.simulate(trace=tmp_path / "history.csv", cluster=tmp_path / "lab.yaml",
                           policy="fifo")
    assert run.summary["jct_mean"] == pytest.approx(150.0)
    assert "mean JCT 2.5 min" in repr(run)  # not "0.04 h"


def test_history_cluster_writes_the_file_or_says_in_one_line_why_not(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An unwritable --out was a FileNotFoundError traceback; "1 nodes" read "1 node"."""
    from typer.testing import CliRunner

    from dlsched.cli import app
    from dlsched.runtime.client import Client

    view = ClusterView(name="lab", policy="fifo", gpus_total=4, gpus_allocated=0.0,
                       nodes=[node("a", "A100", 4, 0, cpus=32)])
    monkeypatch.setattr(Client, "cluster", lambda _self: view)
    out = tmp_path / "lab.yaml"
    result = CliRunner().invoke(app, ["history", "cluster", "--out", str(out)])
    assert result.exit_code == 0 and "lab: 1 node, 4 GPUs ->" in result.output
    assert parse_cluster_yaml(out.read_text(), "lab.yaml").nodes[0].cpus == 32
    (tmp_path / "plain").write_text("")
    bad = tmp_path / "plain" / "lab.yaml"
    result = CliRunner().invoke(app, ["history", "cluster", "--out", str(bad)])
    assert result.exit_code == 1 and not isinstance(result.exception, OSError)
    assert " ".join(result.output.split()).startswith(f"error: {bad}: cannot write")
