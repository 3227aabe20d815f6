"""The max-min LP's fast paths give HiGHS exactly the model (and so the answers) of the generic
build: job classes by one lexsort, the column form written directly, one kept solver; a warm
start from the last LP's basis reaches the same optimum."""

from __future__ import annotations

import dataclasses
import threading

import numpy as np
import pytest
from gavel_cases import random_problem

from dlsched.errors import ConfigError
from dlsched.policies.gavel.fairness import las, max_min_fairness, solve_max_min
from dlsched.policies.gavel.lp import (
    MaxMinLP,
    WarmStart,
    job_classes,
    new_solver,
    single_columns,
    thread_solver,
)
from dlsched.policies.gavel.problem import AllocationProblem, violations
from dlsched.scheduling.registry import build_policy


@pytest.mark.parametrize("seed", range(40))
def test_job_classes_are_np_unique_rows(seed):
    rng = np.random.default_rng(seed)
    n, width = int(rng.integers(1, 30)), int(rng.integers(1, 6))
    # few distinct values (ties in every column), both zeros, negatives
    key = rng.choice([-1.0, -0.0, 0.0, 1e-9, 0.5, 2.0], size=(n, width))
    _, first, inverse, counts = np.unique(key, axis=0, return_index=True, return_inverse=True,
                                          return_counts=True)
    got = job_classes(key)
    assert np.array_equal(got[0], first)
    assert np.array_equal(got[1], inverse.ravel())
    assert np.array_equal(got[2], counts)


def _model(lp: MaxMinLP) -> tuple[np.ndarray, ...]:
    model = lp.lp.highs.getLp()
    matrix = model.a_matrix_
    return tuple(np.asarray(a) for a in (
        matrix.start_, matrix.index_, matrix.value_, model.col_cost_, model.col_lower_,
        model.col_upper_, model.row_lower_, model.row_upper_))


@pytest.mark.parametrize("seed", range(20))
def test_single_columns_column_form_is_the_generic_stack(seed):
    problem = random_problem(seed)
    columns, _, _ = single_columns(problem.throughput, problem.scale)
    offset = np.random.default_rng(seed).uniform(0, 1, problem.n_jobs)
    z_coef = np.random.default_rng(seed + 1).uniform(0.5, 2, problem.n_jobs)
    direct = MaxMinLP(columns, problem.counts, offset, z_coef)
    generic = MaxMinLP(dataclasses.replace(columns, single=False), problem.counts, offset,
                       z_coef)
    for mine, theirs in zip(_model(direct), _model(generic), strict=True):
        assert mine.dtype == theirs.dtype
        assert np.array_equal(mine, theirs)


def _solve(problem):
    value = problem.throughput / problem.equal_share_throughput()[:, None]
    return solve_max_min(value, np.zeros(problem.n_jobs), problem.scale, problem.counts, True)


def test_the_kept_solver_answers_as_new_solvers_do(monkeypatch):
    problems = [random_problem(seed) for seed in range(12)]
    kept = [_solve(p) for p in problems]  # one after the other through thread_solver()
    monkeypatch.setattr("dlsched.policies.gavel.fairness.thread_solver", new_solver)
    fresh = [_solve(p) for p in problems]
    for (x, best, solves), (x2, best2, solves2) in zip(kept, fresh, strict=True):
        assert np.array_equal(x, x2) and best == best2 and solves == solves2


def test_each_thread_keeps_its_own_solver():
    mine, other = thread_solver(), []
    thread = threading.Thread(target=lambda: other.append(thread_solver()))
    thread.start()
    thread.join()
    assert thread_solver() is mine and other[0] is not mine


def _window(start: int) -> AllocationProblem:
    """Jobs ``j{start}..j{start + 11}`` of one random problem: successive windows share most
    of their jobs, as Gavel's allocation resets do."""
    return BIG.subproblem(np.arange(start, start + 12), 1.0)


BIG = random_problem(7, n_jobs=30)


@pytest.mark.parametrize("policy", [max_min_fairness, las])
def test_a_warm_start_reaches_the_optimum_of_a_cold_one(policy):
    warm = WarmStart()
    for start in range(0, 18, 3):
        problem = _window(start)
        cold, hot = policy(problem), policy(problem, warm=warm)
        assert hot.objective == pytest.approx(cold.objective, rel=1e-6)
        assert not violations(problem, hot)
        assert set(warm.first.index) == set(warm.second.index) == set(problem.job_ids)


def test_warm_start_is_a_policy_option_of_max_min_and_las():
    for name in ("gavel-maxmin", "gavel-las"):
        assert build_policy(name).plugins[0]._warm is None
        assert isinstance(build_policy(name, {"warm_start": "true"}).plugins[0]._warm,
                          WarmStart)
    # the agnostic LP is degenerate in every type: a warm start keeps a job where it ran
    with pytest.raises(ConfigError, match="warm_start"):
        build_policy("gavel-maxmin-agnostic", {"warm_start": "true"})


def _as_highs_lp(lp: MaxMinLP):
    """``lp``'s model as a ``HighsLp`` (the fields the old build set one by one)."""
    import highspy

    model = lp.lp.highs.getLp()
    built = highspy.HighsLp()
    built.num_col_, built.num_row_ = model.num_col_, model.num_row_
    built.col_cost_, built.col_lower_, built.col_upper_ = (model.col_cost_, model.col_lower_,
                                                           model.col_upper_)
    built.row_lower_, built.row_upper_ = model.row_lower_, model.row_upper_
    built.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    built.a_matrix_.start_ = model.a_matrix_.start_
    built.a_matrix_.index_ = model.a_matrix_.index_
    built.a_matrix_.value_ = model.a_matrix_.value_
    return built


@pytest.mark.parametrize("seed", range(12))
def test_the_model_passed_as_arrays_solves_as_a_highs_lp(seed, monkeypatch):
    # (a ``HighsLp``'s fields took numpy arrays element by element: ~4% of gavel-las)
    import highspy

    problem = random_problem(seed)
    columns, _, _ = single_columns(problem.throughput, problem.scale)
    offset = np.random.default_rng(seed).uniform(0, 1, problem.n_jobs)
    with monkeypatch.context() as patch:
        patch.setattr(highspy, "HighsLp", None)  # not built
        lp = MaxMinLP(columns, problem.counts, offset, highs=new_solver())
    model = lp.lp.highs.getLp()
    assert model.a_matrix_.format_ == highspy.MatrixFormat.kColwise
    assert model.sense_ == highspy.ObjSense.kMinimize and model.offset_ == 0.0
    assert set(model.integrality_) <= {highspy.HighsVarType.kContinuous}
    other = new_solver()
    other.passModel(_as_highs_lp(lp))
    x, best = lp.solve()
    other.run()
    assert np.array_equal(np.asarray(other.getSolution().col_value), np.append(x, best))
    assert np.array_equal(np.asarray(other.getSolution().row_value),
                          np.asarray(lp.lp.highs.getSolution().row_value))
    assert lp.lp.col_value is not None  # kept for ``StageBasis.keep``


def test_both_stages_keep_one_job_index():
    # (built once a reset: the dict of ~100 ids cost ~50k instructions a stage)
    problem = random_problem(3, n_jobs=20)
    warm = WarmStart()
    value = problem.throughput / problem.equal_share_throughput()[:, None]
    solve_max_min(value, np.zeros(problem.n_jobs), problem.scale, problem.counts, True, warm,
                  problem.job_ids)
    assert warm.first.index is warm.second.index
    assert set(warm.first.index) == set(problem.job_ids)


def test_a_solution_list_becomes_the_array_np_asarray_makes():
    from dlsched.policies.gavel.lp import _array

    values = [0.0, -0.0, 1.5, 1e-300, -2.25e17, float("inf"), 0.1 + 0.2]
    made = _array(values)
    assert made.dtype == np.float64
    assert made.tobytes() == np.asarray(values).tobytes()
