"""Finish-time fairness: equal jobs, the rho <= 1 guarantee, and the optimum checked against an
independent bisection with scipy's linprog."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from gavel_cases import problem, random_problem
from scipy.optimize import linprog

from dlsched.policies.gavel.fairness import max_min_fairness
from dlsched.policies.gavel.ftf import alone_throughput, finish_time_fairness, ftf_values


def test_equal_jobs_get_equal_rho():
    case = problem([[1.0, 3.0]] * 3, [1, 1], remaining=np.full(3, 600.0), elapsed=np.zeros(3))
    result = finish_time_fairness(case)
    rho = ftf_values(case, result)
    assert rho == pytest.approx([rho[0]] * 3, rel=1e-6)
    assert result.objective == pytest.approx(rho.max())


def test_without_elapsed_time_ftf_is_max_min_fairness():
    # rho_j = throughput(j, X^equal) / throughput(j, X) when t_j = 0, so min max rho = 1 / z*.
    ten_x, one_one_x = [1.0, 10.0], [1.0, 1.1]
    case = problem([ten_x, ten_x, one_one_x, one_one_x], [1, 1], remaining=np.full(4, 1e4))
    assert finish_time_fairness(case).objective == pytest.approx(
        1 / max_min_fairness(case).objective, rel=1e-4)


def test_symmetric_jobs_stay_at_rho_one_whatever_they_waited():
    # Both jobs are at rho = 1 on the equal split; any other split raises one of them.
    case = problem([[1.0]] * 2, [1], remaining=np.full(2, 100.0), elapsed=np.array([0.0, 300.0]))
    result = finish_time_fairness(case)
    assert result.objective == pytest.approx(1.0, rel=1e-4)
    assert result.x[:, 0] == pytest.approx([0.5, 0.5], abs=1e-3)


def _isolated(case) -> np.ndarray:
    """Each job's finish time on its equal share: t_iso (t when not given) + R / equal."""
    so_far = case.elapsed if case.isolated_elapsed is None else case.isolated_elapsed
    return so_far + case.remaining / case.equal_share_throughput()


def _bisection(case, low: float, high: float) -> float:
    for _ in range(40):
        middle = 0.5 * (low + high)
        low, high = (low, middle) if _feasible_at(case, middle) else (middle, high)
    return high


def _feasible_at(case, rho: float) -> bool:
    """Does some X reach max_j rho_j <= rho? One LP feasibility check with linprog."""
    n, types = case.throughput.shape
    need = case.remaining / (rho * _isolated(case) - case.elapsed)
    jobs = np.repeat(np.arange(n), types)
    kinds = np.tile(np.arange(types), n)
    cols = np.arange(n * types)
    speed = sp.csr_matrix((-case.throughput.ravel(), (jobs, cols)), shape=(n, n * types))
    usage = sp.csr_matrix((np.ones(n * types), (jobs, cols)), shape=(n, n * types))
    gpus = sp.csr_matrix((case.scale[jobs], (kinds, cols)), shape=(types, n * types))
    result = linprog(np.zeros(n * types), A_ub=sp.vstack([speed, usage, gpus]),
                     b_ub=np.concatenate([-need, np.ones(n), case.counts]), bounds=(0, 1),
                     method="highs")
    return result.status == 0


@pytest.mark.parametrize("seed", range(4))
def test_optimum_matches_an_independent_bisection(seed):
    case = random_problem(seed, n_jobs=8)
    case = problem(case.throughput, case.counts, scale=case.scale, remaining=case.remaining,
                   elapsed=case.elapsed)
    result = finish_time_fairness(case, tolerance=1e-6)
    assert result.objective <= 1.0 + 1e-6
    optimum = _bisection(case, float(np.max(case.elapsed / _isolated(case))), 1.0)
    assert result.objective == pytest.approx(optimum, rel=1e-4)


def test_jobs_that_waited_past_their_equal_share_split_the_gpu():
    # Both jobs waited 1,000 s but had 500 s of equal share (Gavel's t_isolated): rho = 1 is
    # out of reach. Equal share 0.5 step/s: D = 500 + 100 / 0.5 = 700; each on half the GPU
    # finishes at 1,000 + 200 s: rho = 1,200 / 700 for both. (The search asked at rho = 1,
    # where every requirement is negative, and HiGHS called the LP unbounded.)
    case = problem([[1.0]] * 2, [1], remaining=np.full(2, 100.0),
                   elapsed=np.full(2, 1000.0), isolated_elapsed=np.full(2, 500.0))
    result = finish_time_fairness(case)
    assert result.objective == pytest.approx(1200.0 / 700.0, rel=1e-4)
    assert result.x[:, 0] == pytest.approx([0.5, 0.5], abs=1e-3)


@pytest.mark.parametrize("seed", range(4))
def test_optimum_when_jobs_waited_past_their_equal_share(seed):
    # Some jobs have rho > 1 whatever X is: the optimum (checked by bisection between the
    # bound no X can beat and X^equal's rho) still gives every job GPU time. Asking at rho = 1,
    # below some jobs' reach, gave those jobs no time at all (max rho infinite).
    rng = np.random.default_rng(seed)
    base = random_problem(seed, n_jobs=8)
    elapsed = rng.uniform(500.0, 5e3, 8)
    case = problem(base.throughput, base.counts, scale=base.scale, remaining=base.remaining,
                   elapsed=elapsed, isolated_elapsed=elapsed * rng.uniform(0.2, 1.0, 8))
    result = finish_time_fairness(case, tolerance=1e-6)
    isolated = _isolated(case)
    equal = case.elapsed + case.remaining / case.equal_share_throughput()
    optimum = _bisection(case, float(np.max(case.elapsed / isolated)),
                         float(np.max(equal / isolated)))
    assert np.all(np.isfinite(ftf_values(case, result)))
    assert result.objective == pytest.approx(optimum, rel=1e-4)


def test_alone_throughput_fills_the_fastest_types_first():
    # A 2-GPU job on 2 slow GPUs (1 step/s) and 1 fast GPU (3): half its time on the fast GPU,
    # the rest on the slow ones.
    speed = alone_throughput(np.array([[1.0, 3.0]]), np.array([2.0]), np.array([2.0, 1.0]))
    assert speed == pytest.approx([0.5 * 3 + 0.5 * 1])


def test_a_pop_sub_problem_may_not_reach_rho_one():
    # Each job keeps an equal share of a bigger cluster (all of a GPU) but gets half of one.
    case = problem([[1.0]] * 2, [1], remaining=np.full(2, 100.0), equal_share=np.ones(2))
    result = finish_time_fairness(case)
    assert result.objective == pytest.approx(2.0, rel=1e-4)
    assert result.x[:, 0] == pytest.approx([0.5, 0.5], abs=1e-4)
