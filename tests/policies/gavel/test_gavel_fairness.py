"""Max-min fairness (aware, agnostic), weighted fairness and LAS on hand-checkable cases."""

from __future__ import annotations

import numpy as np
import pytest
from gavel_cases import problem

from dlsched.policies.gavel.objectives import las, max_min_fairness, weighted_fairness
from dlsched.policies.gavel.problem import Allocation

# Two jobs that gain 10x on the fast type, two that gain 1.1x; one slow and one fast GPU.
TEN_X, ONE_ONE_X = [1.0, 10.0], [1.0, 1.1]
CONTENDED = problem([TEN_X, TEN_X, ONE_ONE_X, ONE_ONE_X], [1, 1])


def test_aware_max_min_gives_the_fast_type_mostly_to_the_jobs_that_gain_10x():
    # Equal share: half a GPU each, a quarter of each type -> 2.75 and 0.525 steps/s.
    # Optimum: 1.1x jobs take the slow GPU; fast time a (10x job) and 0.5 - a (1.1x job)
    # equalize 10 a / 2.75 = (0.5 + 1.1 (0.5 - a)) / 0.525.
    fast_share = 2.0 / (10 / 2.75 + 1.1 / 0.525)
    result = max_min_fairness(CONTENDED)
    assert result.x[:2, 1] == pytest.approx([fast_share] * 2, abs=1e-5)
    assert result.x[2:, 0] == pytest.approx([0.5, 0.5], abs=1e-5)
    assert result.x[:2, 1].sum() == pytest.approx(0.698, abs=1e-3)
    assert result.objective == pytest.approx(10 * fast_share / 2.75, rel=1e-5)


def test_with_two_saturated_jobs_the_equal_split_is_already_max_min_fair():
    # Any trade that gives the 10x job more fast time costs the 1.1x job: both stay at 1.
    result = max_min_fairness(problem([TEN_X, ONE_ONE_X], [1, 1]))
    assert result.objective == pytest.approx(1.0)
    assert result.x[0] == pytest.approx([0.5, 0.5], abs=1e-5)


def test_agnostic_max_min_cannot_tell_10x_from_1_1x():
    swapped = problem([ONE_ONE_X, ONE_ONE_X, TEN_X, TEN_X], [1, 1])
    agnostic = max_min_fairness(CONTENDED, heterogeneity_aware=False)
    assert agnostic.objective == pytest.approx(1.0)
    assert agnostic.x == pytest.approx(
        max_min_fairness(swapped, heterogeneity_aware=False).x)
    assert agnostic.x.sum(axis=1) == pytest.approx([0.5] * 4)
    aware = max_min_fairness(swapped)
    assert aware.x[2:, 1].sum() == pytest.approx(0.698, abs=1e-3)


def test_priority_weights_scale_normalized_throughput():
    # One GPU, two equal jobs, weights 1 and 3: time splits 1:3.
    result = max_min_fairness(problem([[1.0], [1.0]], [1], weights=np.array([1.0, 3.0])))
    assert result.x[:, 0] == pytest.approx([0.25, 0.75], abs=1e-5)


def test_second_stage_gives_idle_capacity_to_non_bottleneck_jobs():
    # Job 1 (weight 4) is the bottleneck at its row limit; job 0 may then run full-time.
    case = problem([[1.0], [1.0]], [3], weights=np.array([1.0, 4.0]))
    assert max_min_fairness(case, pareto=True).x[:, 0] == pytest.approx([1.0, 1.0], abs=1e-5)
    assert max_min_fairness(case, pareto=False).objective == pytest.approx(0.25)


@pytest.mark.parametrize(
    ("tenants", "tenant_weights", "expected"),
    [
        ([0, 1], [2.0, 1.0], [2 / 3, 1 / 3]),
        ([0, 0, 1], [2.0, 1.0], [1 / 3, 1 / 3, 1 / 3]),
        ([0, 0, 1], [1.0, 1.0], [1 / 4, 1 / 4, 1 / 2]),
    ],
    ids=["weights-2-1", "two-jobs-share-tenant-weight", "equal-tenants"],
)
def test_weighted_fairness_splits_by_tenant_then_job(tenants, tenant_weights, expected):
    case = problem([[1.0]] * len(tenants), [1], tenant=np.array(tenants),
                   tenant_weights=np.array(tenant_weights))
    assert weighted_fairness(case).x[:, 0] == pytest.approx(expected, abs=1e-5)


@pytest.mark.parametrize(
    ("attained", "first_share"),
    [([0.0, 1000.0], 1.0), ([0.0, 100.0], 460 / 720), ([50.0, 50.0], 0.5)],
    ids=["far-behind-takes-all", "catches-up", "equal"],
)
def test_las_serves_the_least_attained_service_first(attained, first_share):
    # One GPU, horizon 360 s: (a0 + 360 x0) vs (a1 + 360 x1), x0 + x1 = 1.
    case = problem([[1.0], [1.0]], [1], attained=np.array(attained))
    result = las(case)
    assert result.x[:, 0] == pytest.approx([first_share, 1 - first_share], abs=1e-5)
    expected = min(attained[0] + 360 * first_share, attained[1] + 360 * (1 - first_share))
    assert result.objective == pytest.approx(expected)


def test_allocation_arrays_are_read_only():
    result = max_min_fairness(CONTENDED)
    assert isinstance(result, Allocation)
    with pytest.raises(ValueError):
        result.x[0, 0] = 1.0


def _max_min_lp():  # noqa: ANN202
    from dlsched.policies.gavel.lp import MaxMinLP, single_columns

    value = np.array([[1.0, 10.0], [1.0, 10.0], [1.0, 1.1], [1.0, 1.1]])
    columns, _, _ = single_columns(value, np.ones(4))
    lp = MaxMinLP(columns, np.array([1.0, 1.0]), np.zeros(4))
    x, best = lp.solve()
    return lp, x, best


def test_the_second_stage_loosens_a_floor_the_solver_cannot_reach():
    # A floor a hair above z* (as HiGHS may report z* within its tolerance) is infeasible as
    # given; the looser floor (1e-6) finds the second stage's allocation, not the first's.
    lp, x, best = _max_min_lp()
    second = lp.maximize_total(best * (1 + 5e-7), first=x)
    assert second is not x
    assert lp.columns.value.times(second).min() >= best * (1 - 2e-6)


def test_the_second_stage_keeps_the_first_allocation_where_no_floor_is_feasible():
    from dlsched.policies.gavel.lp import SolverError

    lp, x, best = _max_min_lp()
    assert lp.maximize_total(best * 1.5, first=x) is x
    lp, x, best = _max_min_lp()
    with pytest.raises(SolverError, match="Infeasible"):
        lp.maximize_total(best * 1.5)
