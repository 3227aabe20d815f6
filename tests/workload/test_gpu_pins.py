"""GPU-type pins read against the cluster: Slurm's ``gres/gpu:a100`` on a cluster of ``A100``."""

from __future__ import annotations

import csv
from pathlib import Path

from typer.testing import CliRunner

from dlsched.cli import app
from dlsched.cluster.cluster import Cluster, Node
from dlsched.workload.gpu_pins import unknown_pins, with_cluster_spelling
from dlsched.workload.job import JobSpec
from dlsched.workload.trace import Trace

SACCT = """JobID|Partition|Submit|Start|End|State|AllocTRES
1|gpu|2026-11-01T10:00:00|2026-11-01T10:00:00|2026-11-01T11:00:00|COMPLETED|cpu=4,gres/gpu:a100=2
2|gpu|2026-11-01T10:10:00|2026-11-01T10:10:00|2026-11-01T10:40:00|COMPLETED|cpu=4,gres/gpu=1
3|gpu|2026-11-01T10:20:00|2026-11-01T10:20:00|2026-11-01T10:50:00|FAILED|gres/gpu:h100=1
"""
CLUSTER = "name: mine\nnode_groups:\n  - {count: 2, gpus: 8, gpu_type: A100}\n"


def _cluster(*types: str) -> Cluster:
    return Cluster("c", tuple(Node(f"n{i}", t, 4) for i, t in enumerate(types)))


def _trace(*pins: tuple[str, ...]) -> Trace:
    return Trace("t", tuple(JobSpec(f"j{i}", float(i), 1, 10.0, gpu_types=p)
                            for i, p in enumerate(pins)))


def test_a_pin_differing_only_in_case_takes_the_cluster_spelling() -> None:
    trace = with_cluster_spelling(_trace(("a100",), (), ("V100", "h100"), ("T4",)),
                                  _cluster("A100", "V100"))
    assert [s.gpu_types for s in trace.jobs] == [("A100",), (), ("V100", "h100"), ("T4",)]


def test_nothing_to_respell_gives_the_same_trace() -> None:
    trace = _trace(("A100",), ())
    assert with_cluster_spelling(trace, _cluster("A100")) is trace


def test_types_equal_up_to_case_are_not_guessed() -> None:
    trace = with_cluster_spelling(_trace(("RTX",), ("rtx",), ("Rtx",)), _cluster("RTX", "rtx"))
    assert [s.gpu_types for s in trace.jobs] == [("RTX",), ("rtx",), ("Rtx",)]


def test_pins_no_node_has_are_warned_with_their_counts() -> None:
    trace = _trace(("h100",), ("h100", "A100"), ("H200",), ("h100",), ())
    [warning] = unknown_pins(trace, _cluster("A100"), "mine.yaml")
    assert warning.startswith("t: 3 jobs ask only for GPU types that no node of cluster "
                              "mine.yaml has: 'H200' (1 job), 'h100' (2 jobs); the cluster's "
                              "types: A100.")
    assert unknown_pins(_trace(("A100",), ()), _cluster("A100"), "mine.yaml") == []


def test_simulate_runs_slurm_jobs_pinned_in_lower_case(tmp_path: Path) -> None:
    """``gres/gpu:a100`` on a cluster of ``A100`` runs (before: "can never run"); a pin no
    node has is warned about before the run."""
    (tmp_path / "week.sacct").write_text(SACCT)
    (tmp_path / "c.yaml").write_text(CLUSTER)
    result = CliRunner().invoke(app, ["simulate", "--trace", str(tmp_path / "week.sacct"),
                                      "--cluster", str(tmp_path / "c.yaml"), "--policy", "fifo",
                                      "--out", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    assert "1 job asks only for GPU types that no node" in result.output
    assert "'h100' (1 job)" in result.output
    with (tmp_path / "out/jobs.csv").open() as f:
        status = {row["job_id"]: row["status"] for row in csv.DictReader(f)}
    assert status == {"1": "finished", "2": "finished", "3": "failed"}


def test_product_labels_take_the_cluster_type_of_their_product() -> None:
    """GPU feature discovery's ``nvidia.com/gpu.product`` values, as a Kueue trace pins them."""
    labels = ("NVIDIA-A100-SXM4-80GB", "NVIDIA-A100-PCIE-40GB", "NVIDIA-H100-80GB-HBM3",
              "Tesla-V100-SXM2-32GB", "Tesla-T4", "NVIDIA-A10G", "NVIDIA-L4")
    trace = _trace(*((label,) for label in labels))
    full = with_cluster_spelling(trace, _cluster("A100", "A100-80G", "H100", "V100M32", "T4",
                                                 "A10"))
    assert [s.gpu_types[0] for s in full.jobs] == [
        "A100-80G", "A100", "H100", "V100M32", "T4", "A10", "NVIDIA-L4"]
    # Without the 80 GB type (or the 32 GB V100) the product's other type is taken.
    fewer = with_cluster_spelling(trace, _cluster("A100", "V100"))
    assert [s.gpu_types[0] for s in fewer.jobs] == [
        "A100", "A100", "NVIDIA-H100-80GB-HBM3", "V100", "Tesla-T4", "NVIDIA-A10G", "NVIDIA-L4"]

