"""Every policy returns a feasible allocation (Gavel §3.1 constraints) on random problems, and
its reported objective is the one ``score`` recomputes."""

from __future__ import annotations

import pytest
from gavel_cases import random_problem

from dlsched.policies.gavel.objectives import POLICIES, SCORES, score
from dlsched.policies.gavel.pop import solve_with_pop
from dlsched.policies.gavel.problem import violations

SEEDS = range(8)


def _options(name, case):
    if name == "min_cost":
        return {"prices": [1.0 + t for t in range(case.n_types)]}
    return {}


@pytest.mark.parametrize("name", sorted(POLICIES))
@pytest.mark.parametrize("seed", SEEDS)
def test_allocation_is_feasible_and_scored_consistently(name, seed):
    case = random_problem(seed)
    options = _options(name, case)
    result = POLICIES[name](case, **options)
    assert violations(case, result) == []
    assert result.objective == pytest.approx(score(case, result, **options), rel=1e-6)


@pytest.mark.parametrize("name", sorted(POLICIES))
def test_pop_allocations_are_feasible(name):
    case = random_problem(11, n_jobs=30)
    options = _options(name, case)
    result = solve_with_pop(POLICIES[name], case, k=3, seed=1, **options)
    assert violations(case, result) == []
    assert result.policy in SCORES
