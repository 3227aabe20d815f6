"""Gandiva (OSDI'18) on hand-checkable cases: time-slicing at a quantum when oversubscribed
(§3.1), none when everything fits, and migration of a spread job onto one node (§3.3).
Restart overhead 0, linear model (work = seconds on one GPU)."""

from __future__ import annotations

import pytest
from builders import assert_schedule, make_cluster, make_job, records_of, run, simulator

from dlsched.errors import ConfigError
from dlsched.scheduling.registry import build_policy


@pytest.mark.parametrize(("policy", "a_end", "b_end"), [
    # One GPU, A and B (300 s each) at 0, quantum 60: A runs [0,60), B [60,120), A [120,180),
    # ... A's fifth slice ends at 540, then B's fifth at 600.
    pytest.param("gandiva", 540.0, 600.0, id="gandiva-round-robin"),
    pytest.param("fifo", 300.0, 600.0, id="fifo-runs-to-completion"),
])
def test_time_slicing_when_oversubscribed(policy: str, a_end: float, b_end: float) -> None:
    jobs = [make_job("A").at(0).work(300).build(), make_job("B").at(0).work(300).build()]
    records = run(policy, make_cluster(nodes=1, gpus=1), jobs)
    assert records["A"].finish_time == pytest.approx(a_end)
    assert records["B"].finish_time == pytest.approx(b_end)


def test_no_rotation_when_everything_fits() -> None:
    jobs = [make_job(j).at(0).work(300).build() for j in ("A", "B")]
    records = run("gandiva", make_cluster(nodes=1, gpus=2), jobs)
    assert_schedule(records, [("A", 0, 300, 300), ("B", 0, 300, 300)])
    assert all(r.preemptions == 0 for r in records.values())


@pytest.mark.parametrize(("migrate", "resizes", "nodes_of_d"), [
    pytest.param("true", 1, 1, id="migrates"),
    pytest.param("false", 0, 2, id="stays-spread"),
])
def test_spread_job_migrates_onto_one_node(migrate: str, resizes: int,
                                           nodes_of_d: int) -> None:
    # Two nodes of 2 GPUs, quantum 60. At 0: A (long) and B (ends at 30) on n0 (tightest), C
    # (ends at 40) on n1. D (2 GPUs) arrives at 10, waits, and starts spread over n0 and n1
    # when B ends at 30. C ends at 40: n1 is free but for D's worker. At the 60 s quantum D
    # moves onto n1 (one resize); without migration it stays on two nodes.
    jobs = [make_job("A").at(0).work(1000).build(), make_job("B").at(0).work(30).build(),
            make_job("C").at(0).work(40).build(), make_job("D").gpus(2).at(10).work(500).build()]
    sim = simulator("gandiva", make_cluster(nodes=2, gpus=2), jobs,
                    options={"migrate": migrate})
    records = records_of(sim)
    d = records["D"]
    assert (d.first_start, d.resizes, d.preemptions) == (30.0, resizes, 0)
    assert d.finish_time == pytest.approx(530.0)
    nodes = {int(sim.cluster.gpu_node[g]) for g in sim.core.jobs["D"].allocation}
    assert len(nodes) == nodes_of_d


def test_quantum_must_be_positive() -> None:
    with pytest.raises(ConfigError, match="quantum"):
        build_policy("gandiva", {"quantum": "0"})
