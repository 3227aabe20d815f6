"""Space sharing: hand cases, the class-level LP against a job-level one, and job pairing."""

from __future__ import annotations

import numpy as np
import pytest
from gavel_cases import gavel_problem, problem

from dlsched.policies.gavel.objectives import max_min_fairness, max_min_fairness_packed
from dlsched.policies.gavel.pairing import job_pairs, split_between, split_within
from dlsched.policies.gavel.problem import Colocation, effective_throughput, violations


def _two_jobs_one_gpu(same_class: bool, shared_rate: float):
    rates = np.full((1, 2, 2), shared_rate)
    return problem([[1.0], [1.0]], [1],
                   colocation=Colocation([0, 0] if same_class else [0, 1], rates))


@pytest.mark.parametrize("same_class", [True, False], ids=["one-class", "two-classes"])
def test_two_jobs_share_the_gpu_when_it_pays(same_class):
    # Alone: half the GPU each, value 1. Shared full-time at 0.8 each: value 0.8 / 0.5 = 1.6.
    case = _two_jobs_one_gpu(same_class, 0.8)
    result = max_min_fairness_packed(case)
    assert result.objective == pytest.approx(1.6, rel=1e-6)
    assert result.pairs.tolist() == [[0, 1]]
    assert result.pair_x == pytest.approx(np.ones((1, 1)), abs=1e-6)
    assert effective_throughput(case, result) == pytest.approx([0.8, 0.8], rel=1e-6)


def test_pairs_that_do_not_pay_are_not_used():
    case = _two_jobs_one_gpu(False, 0.45)  # 0.45 + 0.45 < 1: time-slicing is better
    result = max_min_fairness_packed(case)
    assert len(result.pairs) == 0
    assert result.objective == pytest.approx(1.0)


def test_packing_never_does_worse_than_time_slicing():
    case = gavel_problem(60, seed=5)
    assert max_min_fairness_packed(case).objective >= max_min_fairness(case).objective - 1e-6


def test_class_lp_equals_the_job_level_lp():
    # Tiny weight differences make every job its own class: the job-level LP over all pairs.
    case = gavel_problem(12, seed=2)
    grouped = max_min_fairness_packed(case, max_partners=12)
    jittered = problem(case.throughput, case.counts, scale=case.scale,
                       weights=1 + 1e-9 * np.arange(12), colocation=case.colocation)
    per_job = max_min_fairness_packed(jittered, max_partners=12)
    assert grouped.objective == pytest.approx(per_job.objective, rel=1e-5)
    assert violations(case, grouped) == []


@pytest.mark.parametrize(("m_first", "m_second"), [(1, 1), (3, 5), (4, 2), (7, 7)])
def test_split_between_gives_every_job_its_equal_part(m_first, m_second):
    first, second, time = split_between(6.0, m_first, m_second)
    assert len(time) <= m_first + m_second - 1
    assert np.bincount(first, time, m_first) == pytest.approx([6.0 / m_first] * m_first)
    assert np.bincount(second, time, m_second) == pytest.approx([6.0 / m_second] * m_second)


@pytest.mark.parametrize("members", [2, 3, 6])
def test_split_within_pairs_distinct_jobs_equally(members):
    first, second, time = split_within(3.0, members)
    assert np.all(first != second)
    per_job = np.bincount(np.concatenate([first, second]), np.concatenate([time, time]),
                          members)
    assert per_job == pytest.approx([2 * 3.0 / members] * members)


def test_job_pairs_merges_the_same_pair_across_types():
    members = [np.array([4, 7]), np.array([2])]
    pairs, pair_x = job_pairs(members, [(0, 1, 0, 0.4), (0, 1, 1, 0.2)], n_types=2)
    assert pairs.tolist() == [[2, 4], [2, 7]]
    assert pair_x == pytest.approx(np.array([[0.2, 0.1], [0.2, 0.1]]))
