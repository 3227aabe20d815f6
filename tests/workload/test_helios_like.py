"""The synthetic Helios-sized generator (issue 14): seeded, fitted to the summary row it reads,
offering the load it is asked for, and read lazily as ``JobSpec``s in submission order."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from dlsched.workload.helios_like import fit_summary, generate

SUMMARY = ("id,gpu_num,job_num,avg_run_time_gpu,med_run_time_gpu,avg_gpu_num\n"
           "total,6220,3362981,6651.681,206.0,3.716\n")


@pytest.fixture
def fit(tmp_path: Path):
    path = tmp_path / "helios_cluster_summary.csv"
    path.write_text(SUMMARY)
    return fit_summary(path)


def test_fit_matches_the_summary_row(fit) -> None:
    assert math.exp(fit.log_mu) == pytest.approx(206.0)
    assert math.exp(fit.log_mu + fit.log_sigma**2 / 2) == pytest.approx(6651.681)
    assert fit.mean_gpus == pytest.approx(3.716)
    assert sum(fit.gpu_probs) == pytest.approx(1.0)


def test_unknown_row_is_named(tmp_path: Path) -> None:
    path = tmp_path / "s.csv"
    path.write_text(SUMMARY)
    with pytest.raises(ValueError, match="no row with id 'Venus'"):
        fit_summary(path, "Venus")


def test_same_seed_same_trace_and_offered_load(fit) -> None:
    a, b = generate(20_000, 6416, 0.75, 3, fit), generate(20_000, 6416, 0.75, 3, fit)
    assert [a.jobs[i] for i in (0, 1, 19_999)] == [b.jobs[i] for i in (0, 1, 19_999)]
    assert generate(20_000, 6416, 0.75, 4, fit).jobs[5] != a.jobs[5]
    submits = np.array([job.submit_time for job in a.jobs])
    assert (np.diff(submits) >= 0).all() and submits[0] == 0.0
    assert len({job.job_id for job in a.jobs}) == len(a) == 20_000
    # offered load: GPU-seconds asked per GPU-second over the arrivals (heavy tail: loose)
    offered = a.jobs.gpu_seconds / (6416 * submits[-1])
    assert 0.5 < offered < 1.0
    assert np.median([job.work for job in a.jobs]) == pytest.approx(206.0, rel=0.1)


def test_simulator_reads_the_columns_lazily(fit) -> None:
    from builders import make_cluster

    from dlsched.scheduling.registry import build_policy
    from dlsched.sim.simulator import SimConfig, Simulator

    trace = generate(300, 64, 0.8, 0, fit)
    result = Simulator(make_cluster(nodes=8, gpus=8), trace, build_policy("fifo"),
                       SimConfig(max_time=trace.jobs[299].submit_time)).run()
    assert len(result.jobs) == 300
    assert {r.job_id for r in result.jobs} == {job.job_id for job in trace.jobs}
