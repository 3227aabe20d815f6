"""A run's fragmentation over time (summary.json ``fragmentation``), by hand from the FGD
paper's measure, and consistent with the run's utilization."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from builders import make_cluster, make_job, simulator

from dlsched.report.output import write_run

# One node of 2 GPUs; a half-GPU job for 100 s and a whole-GPU job for 50 s, both at 0. The
# target workload is the run's jobs: {half a GPU: 1/2, one whole GPU: 1/2}.
# 0-50: 500 milli free on the half's GPU, none on the other. The half fits (no GPU with less
#   room than 500 is free: 0 fragmented); the whole fits nowhere (all 500 are): F = 250.
# 50-100: 500 and 1000 free. The half: 0; the whole runs on the free GPU, the 500 beside the
#   half are too small for it: F = 250. Idle: 500 then 1500 milli.
JOBS = [make_job("half").share(0.5).work(100).build(), make_job("whole").work(50).build()]


def test_fragmentation_by_hand(tmp_path: Path) -> None:
    result = simulator("fifo", make_cluster(nodes=1, gpus=2), JOBS).run()
    assert result.fragmentation == {"task_types": 2, "fragmented_gpus_mean": 0.25,
                                    "idle_gpus_mean": 1.0, "down_gpus_mean": 0.0,
                                    "fragmentation_rate": 0.25}
    write_run(result, tmp_path)
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["fragmentation"] == result.fragmentation
    # Idle GPUs and utilization are two readings of the same segments.
    assert summary["fragmentation"]["idle_gpus_mean"] == pytest.approx(
        result.total_gpus * (1 - summary["utilization"]))


def test_whole_gpu_runs_keep_their_summary_keys(tmp_path: Path) -> None:
    jobs = [make_job("a").work(10).build(), make_job("b").gpus(2).work(5).build()]
    result = simulator("fifo", make_cluster(nodes=1, gpus=2), jobs).run()
    assert result.fragmentation is None
    write_run(result, tmp_path)
    assert "fragmentation" not in json.loads((tmp_path / "summary.json").read_text())


@pytest.mark.parametrize("placement", ["fgd", "gpu-packing", "random"])
def test_idle_gpus_match_utilization_under_each_sharing_placement(placement: str) -> None:
    jobs = [make_job(f"j{i}").share((0.3, 0.5, 0.7, 1.0)[i % 4]).gpus(1 + (i % 5 == 0))
            .at(10 * i).work(50 + 37 * (i % 7)).build() for i in range(40)]
    jobs = [j if j.gpu_share == 1.0 or j.num_gpus == 1 else make_job(j.job_id).gpus(2)
            .at(j.submit_time).work(j.work).build() for j in jobs]
    result = simulator("fifo", make_cluster(nodes=2, gpus=2), jobs, placement=placement).run()
    fragmentation = result.fragmentation
    assert fragmentation is not None
    from dlsched.report.metrics import summarize

    utilization = summarize(result).utilization
    assert utilization is not None
    assert fragmentation["idle_gpus_mean"] == pytest.approx(4 * (1 - utilization), abs=1e-5)
    assert 0 <= fragmentation["fragmented_gpus_mean"] <= fragmentation["idle_gpus_mean"]


def test_a_down_node_is_neither_idle_nor_fragmented() -> None:
    """Two nodes of one GPU; node 1 is down from 0 to 50 (its GPU free, as a failure leaves
    it), then runs the whole-GPU job; the half runs on node 0 throughout. 0-50: node 0 has 500
    free (the whole cannot use them: F = 250), node 1 is down: idle 500, down 1000. 50-100:
    node 0 the same, node 1 full. Counting the down GPU as idle halved the rate (0.25)."""
    from dlsched.fragmentation.over_time import fragmentation_over_time
    from dlsched.scheduling.segments import Segment

    cluster = make_cluster(nodes=2, gpus=1)
    specs = {job.job_id: job for job in JOBS}
    segments = [Segment("half", 0.0, 100.0, (0,), (0.5,)),
                Segment("whole", 50.0, 100.0, (1,), (1.0,))]
    figures = fragmentation_over_time(cluster, specs, segments, (0.0, 100.0),
                                      [(0.0, 1, True), (50.0, 1, False)])
    assert figures == {"task_types": 2, "fragmented_gpus_mean": 0.25, "idle_gpus_mean": 0.5,
                       "down_gpus_mean": 0.5, "fragmentation_rate": 0.5}


def test_a_failed_run_adds_up(tmp_path: Path) -> None:
    """Idle + down + used GPUs make the cluster in a run with node failures."""
    failures = tmp_path / "failures.yaml"
    failures.write_text("categories: [{name: gpu, rate_per_gpu_day: 40, repair_hours: 0.2}]\n")
    jobs = [make_job(f"j{i}").share((0.3, 0.5, 1.0)[i % 3]).at(60 * i).work(600).build()
            for i in range(40)]
    from dlsched.report.metrics import summarize
    from dlsched.sim.failures import load_failure_yaml

    sim = simulator("fifo", make_cluster(nodes=2, gpus=2), jobs, seed=1,
                    failures=load_failure_yaml(failures))
    result = sim.run()
    figures, utilization = result.fragmentation, summarize(result).utilization
    assert figures is not None and utilization is not None and figures["down_gpus_mean"] > 0
    assert figures["idle_gpus_mean"] + figures["down_gpus_mean"] == pytest.approx(
        4 * (1 - utilization), abs=1e-5)
