"""Fairness metrics: Themis' ρ with contention from the timeline, Jain's index, per-type use.

Every expected value is worked out by hand in the comment above its case."""

from __future__ import annotations

import pytest
from report_builders import job

from dlsched.cluster.cluster import Cluster, Node
from dlsched.perf.model import LinearScaling
from dlsched.report.fairness import (
    Contention,
    FairnessInputs,
    ftf_rhos,
    gpu_seconds_by_tenant,
    isolated_seconds,
    jain_index,
    utilization_by_type,
)
from dlsched.report.metrics import summarize
from dlsched.scheduling.registry import build_policy
from dlsched.scheduling.timeline import Timeline
from dlsched.sim import SimConfig
from dlsched.sim.result import RunInfo, SimulationResult
from dlsched.sim.simulator import Simulator
from dlsched.workload.job import JobSpec
from dlsched.workload.trace import Trace

# N(t) = waiting + running: 2 on [0, 10), 2 on [10, 20), 1 from 20 on.
TIMELINE = Timeline([0.0, 10.0, 20.0], [1.0, 2.0, 1.0], [1, 0, 0], [1, 2, 1])


def _result(jobs: tuple = ()) -> SimulationResult:
    info = RunInfo("hand", "hand-trace", "hand-cluster", 0, "0.0.0")
    return SimulationResult(info, tuple(jobs), TIMELINE, 4, 0, 0.0, 0.0, 30.0)


@pytest.mark.parametrize(("start", "end", "expected"), [
    pytest.param(0, 20, 2.0, id="two-throughout"),
    # (2 x 5 + 2 x 10 + 1 x 5) / 20
    pytest.param(5, 25, 1.75, id="spans-a-drop"),
    pytest.param(30, 30, 1.0, id="zero-length-uses-value-at-start"),
    # nothing recorded before 0: N = 0 there, and N_avg is at least 1 (the job itself)
    pytest.param(-10, 0, 1.0, id="before-first-record"),
])
def test_mean_contention(start: float, end: float, expected: float) -> None:
    assert Contention.of(_result()).mean(start, end) == pytest.approx(expected)


def test_ftf_rho_is_jct_over_isolated_times_contention() -> None:
    # 4 GPUs. a (4 GPUs): JCT 20, isolated 10, N_avg 2: its 1/2 share is 2 of its 4 GPUs, so
    # T_independent = 10 x 2 x 4 / 4 = 20 -> rho 1.0 (not > 1).
    # b (1 GPU): JCT 20, isolated 5, N_avg 1.75: its share (4 / 1.75 GPUs) covers its 1 GPU,
    # T_independent = 5 -> rho 4.0.
    # c: unfinished -> no rho; d: no isolated time -> no rho
    jobs = (job("a", 0, 0, 20, gpus=4), job("b", 5, 10, 25), job("c", 0, 0, None),
            job("d", 0, 0, 20))
    rhos = ftf_rhos(_result(jobs), {"a": 10.0, "b": 5.0, "c": 1.0})
    assert rhos == pytest.approx({"a": 1.0, "b": 4.0})
    summary = summarize(_result(jobs), FairnessInputs({"a": 10.0, "b": 5.0}))
    assert summary.ftf_rho_max == pytest.approx(4.0)
    assert summary.ftf_rho_mean == pytest.approx((1.0 + 4.0) / 2)
    assert summary.ftf_rho_above_1 == 0.5


def test_no_inputs_leaves_rho_undefined() -> None:
    summary = summarize(_result((job("a", 0, 0, 20),)))
    assert (summary.ftf_rho_max, summary.ftf_rho_mean, summary.ftf_rho_above_1) == (None,) * 3
    assert summary.utilization_by_type == ()
    assert summary.to_dict()["utilization_by_type"] == {}


@pytest.mark.parametrize(("values", "expected"), [
    pytest.param([1.0, 1.0], 1.0, id="equal"),
    pytest.param([1.0, 0.0], 0.5, id="one-gets-all"),
    pytest.param([3.0, 1.0], 0.8, id="16-over-20"),
    pytest.param([5.0], 1.0, id="single-tenant"),
    pytest.param([], None, id="none"),
    pytest.param([0.0, 0.0], None, id="all-zero"),
])
def test_jain_index(values: list[float], expected: float | None) -> None:
    assert jain_index(values) == (pytest.approx(expected) if expected is not None else None)


def test_jain_over_tenants_uses_gpu_seconds() -> None:
    # team-a: 1 GPU x 20 s = 20; team-b: 2 GPUs x 10 s + 1 x 0 = 20 -> equal -> 1.0;
    # adding team-c with 2 x 20 = 40: (80)^2 / (3 x (400 + 400 + 1600)) = 6400 / 7200
    jobs = [job("a", 0, 0, 20, queue="team-a"), job("b", 0, 0, 10, queue="team-b", gpus=2),
            job("c", 0, None, None, queue="team-b")]
    assert gpu_seconds_by_tenant(jobs) == {"team-a": 20.0, "team-b": 20.0}
    assert summarize(_result(jobs)).jain_tenants == pytest.approx(1.0)
    jobs.append(job("d", 0, 0, 20, queue="team-c", gpus=2))
    assert summarize(_result(jobs)).jain_tenants == pytest.approx(6400 / 7200)


def test_utilization_by_type() -> None:
    # K80: 40 GPU-s / (4 GPUs x 20 s) = 0.5; V100: 10 / (2 x 20) = 0.25
    inputs = FairnessInputs({}, {"K80": 40.0, "V100": 10.0}, {"K80": 4, "V100": 2})
    assert utilization_by_type(inputs, (0.0, 20.0)) == (("K80", 0.5), ("V100", 0.25))
    assert utilization_by_type(inputs, None) == ()
    assert utilization_by_type(FairnessInputs({}), (0.0, 20.0)) == ()


def test_type_usage_and_rho_from_a_real_run() -> None:
    # One K80 node and one V100 node, 2 GPUs each; FIFO. A (2 GPUs, 10 s, K80 only) and
    # B (2 GPUs, 20 s) start at 0: A on K80 0->10, B on V100 0->20.
    # Per type: K80 2 x 10 = 20 GPU-s over 2 x 20 -> 0.5; V100 2 x 20 = 40 -> 1.0.
    # rho (4 GPUs): A: N_avg 2, its share 4 / 2 = 2 GPUs covers its 2: 10 / 10 = 1.0;
    # B: N_avg = (2 x 10 + 1 x 10) / 20 = 1.5, share 2.67 GPUs covers its 2: 20 / 20 = 1.0.
    cluster = Cluster("mixed", (Node("k", "K80", 2), Node("v", "V100", 2)))
    trace = Trace("t", (JobSpec("A", 0, 2, 10, gpu_types=("K80",)), JobSpec("B", 0, 2, 20)))
    sim = Simulator(cluster, trace, build_policy("fifo"), SimConfig(restart_overhead=0))
    result = sim.run()
    assert dict(result.type_gpu_seconds) == pytest.approx({"K80": 20.0, "V100": 40.0})
    inputs = FairnessInputs.of_run(result, isolated_seconds(trace, LinearScaling()), cluster)
    summary = summarize(result, inputs)
    assert dict(summary.utilization_by_type) == pytest.approx({"K80": 0.5, "V100": 1.0})
    assert ftf_rhos(result, inputs.isolated_seconds) == pytest.approx({"A": 1.0, "B": 1.0})


def test_type_usage_counts_a_preempted_run_until_its_stop() -> None:
    # One 1-GPU V100 node, SRTF: L (work 100) runs 0->5, S (work 2) arrives at 5 and preempts
    # it: S 5->7, L 7->102. Busy on V100: 5 + 2 + 95 = 102 GPU-s, the whole window.
    cluster = Cluster("one", (Node("v", "V100", 1),))
    trace = Trace("t", (JobSpec("L", 0, 1, 100), JobSpec("S", 5, 1, 2)))
    sim = Simulator(cluster, trace, build_policy("srtf"), SimConfig(restart_overhead=0))
    result = sim.run()
    assert {j.job_id: j.preemptions for j in result.jobs} == {"L": 1, "S": 0}
    assert dict(result.type_gpu_seconds)["V100"] == pytest.approx(102.0)


def test_contention_means_over_arrays_equal_the_scalar_ones() -> None:
    import random

    import numpy as np

    from dlsched.report.fairness import Contention
    rng = random.Random(4)
    times = np.cumsum([rng.uniform(0, 10) for _ in range(200)])
    active = np.array([float(rng.randrange(0, 50)) for _ in range(200)])
    steps = np.diff(times) * active[:-1]
    contention = Contention(times, active, np.concatenate(([0.0], np.cumsum(steps))))
    start = np.array([rng.uniform(-20, 2100) for _ in range(500)])
    end = start + np.array([rng.choice([0.0, rng.uniform(0, 500)]) for _ in range(500)])
    scalar = [contention.mean(float(a), float(b)) for a, b in zip(start, end, strict=True)]
    assert contention.means(start, end).tolist() == scalar


def test_a_rho_of_one_up_to_rounding_is_not_above_one() -> None:
    # 4 GPUs, N_avg 2 over [7.3, 8.4]: job "r" (1 GPU; its 4/2-GPU share covers it) runs at
    # once for its isolated 1.1 s; its JCT (7.3 + 1.1) - 7.3 is 1.1000000000000005, rho
    # 1 + 4e-16. A synthetic run on an idle cluster counted 7.2% of its jobs "rho > 1", all so.
    jobs = (job("r", 7.3, 7.3, 7.3 + 1.1),)
    rho = ftf_rhos(_result(jobs), {"r": 1.1})["r"]
    assert rho > 1.0 and rho == pytest.approx(1.0)
    assert summarize(_result(jobs), FairnessInputs({"r": 1.1})).ftf_rho_above_1 == 0.0
