"""The max-min LP's fast paths give HiGHS exactly the model (and so the answers) of the generic
build: job classes by one lexsort, the column form written directly, one kept solver."""

from __future__ import annotations

import dataclasses
import threading

import numpy as np
import pytest
from gavel_cases import random_problem

from dlsched.policies.gavel.fairness import solve_max_min
from dlsched.policies.gavel.lp import (
    MaxMinLP,
    job_classes,
    new_solver,
    single_columns,
    thread_solver,
)


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
