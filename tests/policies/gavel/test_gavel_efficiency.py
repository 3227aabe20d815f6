"""Minimize makespan, minimize cost (with deadlines) and FIFO on hand-checkable cases."""

from __future__ import annotations

import numpy as np
import pytest
from gavel_cases import problem

from dlsched.policies.gavel.lp import SolverError
from dlsched.policies.gavel.objectives import fifo_hetero, min_cost, min_makespan, score


def test_makespan_splits_both_types_between_equal_jobs():
    # 400 steps each; slow 1 step/s, fast 3: each job half on each -> 2 steps/s -> 200 s.
    case = problem([[1.0, 3.0], [1.0, 3.0]], [1, 1], remaining=np.array([400.0, 400.0]))
    result = min_makespan(case)
    assert result.objective == pytest.approx(200.0, rel=1e-6)
    assert result.x == pytest.approx(np.full((2, 2), 0.5), abs=1e-5)


def test_makespan_gives_time_in_proportion_to_remaining_work():
    case = problem([[1.0], [1.0]], [1], remaining=np.array([100.0, 300.0]))
    result = min_makespan(case)
    assert result.objective == pytest.approx(400.0, rel=1e-6)
    assert result.x[:, 0] == pytest.approx([0.25, 0.75], abs=1e-5)


@pytest.mark.parametrize(
    ("fast_price", "chosen"),
    [(3.0, 0), (1.5, 1)],
    ids=["slow-is-cheaper-per-step", "fast-is-cheaper-per-step"],
)
def test_min_cost_picks_the_type_with_more_work_per_dollar(fast_price, chosen):
    # Slow: 1 step/s at 1 $/h; fast: 2 steps/s at fast_price $/h.
    case = problem([[1.0, 2.0]], [1, 1], remaining=np.array([1000.0]))
    result = min_cost(case, prices=[1.0, fast_price])
    assert result.x[0, chosen] == pytest.approx(1.0, abs=1e-6)
    assert result.x[0, 1 - chosen] == pytest.approx(0.0, abs=1e-6)
    assert result.objective == pytest.approx(score(case, result, prices=[1.0, fast_price]))


def test_min_cost_meets_deadlines_at_the_least_cost():
    # 1500 steps due in 1000 s need 1.5 steps/s: half slow, half fast is the cheapest mix.
    case = problem([[1.0, 2.0]], [1, 1], remaining=np.array([1500.0]),
                   deadline=np.array([1000.0]))
    result = min_cost(case, prices=[1.0, 3.0])
    assert result.x[0] == pytest.approx([0.5, 0.5], abs=1e-6)
    assert min_cost(case, prices=[1.0, 3.0], meet_deadlines=False).x[0] == pytest.approx(
        [1.0, 0.0], abs=1e-6)


def test_fifo_places_jobs_in_order_on_their_fastest_free_type():
    case = problem([[1.0, 2.0], [1.0, 5.0], [3.0, 1.0], [1.0, 1.0]], [2, 1],
                   scale=np.array([1, 1, 1, 2]))
    result = fifo_hetero(case)
    assert result.x.tolist() == [[0, 1], [1, 0], [1, 0], [0, 0]]
    assert result.objective == 3


def test_fifo_stops_at_the_first_job_that_does_not_fit():
    case = problem([[1.0], [1.0], [1.0]], [2], scale=np.array([1, 2, 1]))
    assert fifo_hetero(case).x[:, 0].tolist() == [1, 0, 0]


def test_min_cost_reports_deadlines_it_cannot_meet():
    case = problem([[1.0, 2.0]], [1, 1], remaining=np.array([1500.0]), deadline=np.array([10.0]))
    with pytest.raises(SolverError, match="nfeasible"):
        min_cost(case, prices=[1.0, 3.0])


def test_makespan_allocation_does_not_depend_on_the_scale_of_the_work():
    # Steps per second over steps left is ~1e-5 for hours of work; the LP is solved with the
    # largest value at 1, so the same jobs with 10^7 times the work get the same X.
    throughput = [[1.0, 3.0], [2.0, 2.5], [0.5, 4.0]]
    remaining = np.array([400.0, 900.0, 250.0])
    small = min_makespan(problem(throughput, [1, 1], remaining=remaining))
    large = min_makespan(problem(throughput, [1, 1], remaining=remaining * 1e7))
    assert large.x == pytest.approx(small.x, abs=1e-6)
    assert large.objective == pytest.approx(small.objective * 1e7, rel=1e-6)


def test_makespan_in_the_artifact_rounds_runs_a_whole_trace():
    # The first 200 jobs of Gavel's continuous trace: at one reset the second stage's floor
    # z* (1 - 1e-9) was below HiGHS' tolerances ("HiGHS: Infeasible" ended the run).
    from builders import records_of

    from dlsched.cluster.builtin import resolve_cluster
    from dlsched.scheduling.registry import build_policy
    from dlsched.sim.simulator import SimConfig, Simulator
    from dlsched.workload.bundled import resolve_trace
    from dlsched.workload.readers.base import ReaderOptions

    trace = resolve_trace("gavel-continuous-1000", options=ReaderOptions(limit=200))
    sim = Simulator(resolve_cluster("gavel-108"), trace,
                    build_policy("gavel-makespan", {"mechanism": "artifact"}),
                    SimConfig(restart_overhead=0.0, round_seconds=360.0, rounds_only=True))
    records = records_of(sim)
    assert len(records) == 200 and all(r.status == "finished" for r in records.values())
