"""An unknown GPU type in a cluster file loads, with a warning naming its line and the known
types (issue 11 item 10)."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from dlsched.cli import app
from dlsched.cluster.builtin import BUILTIN_CLUSTERS, resolve_cluster
from dlsched.cluster.loader import load_cluster_yaml
from dlsched.cluster.warnings import unknown_gpu_types

CLUSTER = """name: mine
node_groups:
  - {count: 2, gpu_type: V100, gpus: 4}
nodes:
  - {name: x, gpu_type: a100, gpus: 4}
  - {name: y, gpu_type: Gaudi2, gpus: 8}
"""


def test_unknown_types_are_named_with_their_line(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(CLUSTER)
    warnings = unknown_gpu_types(load_cluster_yaml(path), str(path))
    assert [w.split(": unknown")[0] for w in warnings] == [
        f"{path}:6:nodes[1].gpu_type", f"{path}:5:nodes[0].gpu_type"]
    assert "'Gaudi2':" in warnings[0] and "did you mean 'A100'?" in warnings[1]
    assert all("known types: K80, M40" in w and "H100" in w for w in warnings)


def test_built_in_clusters_use_known_types() -> None:
    assert all(not unknown_gpu_types(resolve_cluster(name), name) for name in BUILTIN_CLUSTERS)


def test_simulate_warns_and_runs(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(CLUSTER)
    result = CliRunner().invoke(app, ["simulate", "--cluster", str(path), "--limit", "3",
                                      "--out", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    assert "warning: " + f"{path}:5:nodes[0].gpu_type: unknown GPU type 'a100'" in " ".join(
        result.output.split())


def test_the_services_default_type_is_not_warned_about(tmp_path: Path) -> None:
    """`history cluster` writes the GPUs of a service started without --gpu-type as
    'generic': its what-if replay warned on every run."""
    path = tmp_path / "c.yaml"
    path.write_text("name: svc\nnodes:\n  - {name: local, gpu_type: generic, gpus: 4}\n")
    assert unknown_gpu_types(load_cluster_yaml(path), str(path)) == []
