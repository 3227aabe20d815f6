"""Gavel's policies (Narayanan et al., OSDI'20 §4), one function each, and how to score them.

Every policy is ``policy(problem, **options) -> Allocation``. ``score(problem, allocation,
**options)`` recomputes a policy's objective for any allocation of the full problem (POP uses it
to measure what partitioning loses); ``SCORES[name].higher_is_better`` gives its sense.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from dlsched.policies.gavel.efficiency import (
    cost_ratio,
    fifo_hetero,
    makespan_values,
    min_cost,
    min_makespan,
)
from dlsched.policies.gavel.fairness import (
    DEFAULT_HORIZON,
    fairness_values,
    las,
    las_values,
    max_min_fairness,
    weighted_fairness,
)
from dlsched.policies.gavel.ftf import finish_time_fairness, ftf_values
from dlsched.policies.gavel.packed import max_min_fairness_packed
from dlsched.policies.gavel.problem import Allocation, AllocationProblem

__all__ = [
    "POLICIES", "SCORES", "Score", "fifo_hetero", "finish_time_fairness", "las",
    "max_min_fairness", "max_min_fairness_packed", "min_cost", "min_makespan",
    "relative_quality", "score", "weighted_fairness",
]

Policy = Callable[..., Allocation]


@dataclass(frozen=True)
class Score:
    """How to recompute a policy's objective for an allocation, and its sense."""

    measure: Callable[..., float]
    higher_is_better: bool


def _min_fairness(problem: AllocationProblem, allocation: Allocation, **_: object) -> float:
    return float(fairness_values(problem, allocation).min())


def _min_las(problem: AllocationProblem, allocation: Allocation,
             horizon: float = DEFAULT_HORIZON, **_: object) -> float:
    return float(las_values(problem, allocation, horizon).min())


def _max_rho(problem: AllocationProblem, allocation: Allocation, **_: object) -> float:
    return float(ftf_values(problem, allocation).max())


def _makespan(problem: AllocationProblem, allocation: Allocation, **_: object) -> float:
    return float(makespan_values(problem, allocation).max())


def _cost(problem: AllocationProblem, allocation: Allocation, prices: object = None,
          **_: object) -> float:
    if prices is None:
        raise ValueError("scoring min_cost needs prices")
    return cost_ratio(problem, allocation, prices)


def _placed(problem: AllocationProblem, allocation: Allocation, **_: object) -> float:
    return float(np.count_nonzero(allocation.x.sum(axis=1) > 0))


SCORES: dict[str, Score] = {
    "max_min_fairness": Score(_min_fairness, True),
    "max_min_fairness_agnostic": Score(_min_fairness, True),
    "max_min_fairness_packed": Score(_min_fairness, True),
    "weighted_fairness": Score(_min_fairness, True),
    "las": Score(_min_las, True),
    "finish_time_fairness": Score(_max_rho, False),
    "min_makespan": Score(_makespan, False),
    "min_cost": Score(_cost, True),
    "fifo_hetero": Score(_placed, True),
}

POLICIES: dict[str, Policy] = {
    "max_min_fairness": max_min_fairness,
    "max_min_fairness_packed": max_min_fairness_packed,
    "weighted_fairness": weighted_fairness,
    "las": las,
    "finish_time_fairness": finish_time_fairness,
    "min_makespan": min_makespan,
    "min_cost": min_cost,
    "fifo_hetero": fifo_hetero,
}


def score(problem: AllocationProblem, allocation: Allocation, **options: object) -> float:
    """The objective of ``allocation.policy`` evaluated on ``problem``."""
    return SCORES[allocation.policy].measure(problem, allocation, **options)


def relative_quality(policy: str, exact: float, approximate: float) -> float:
    """``approximate`` relative to ``exact`` as a ratio that is 1 when equal and below 1 when
    worse, whatever the policy's sense (POP's quality in the benchmark and the tests)."""
    if SCORES[policy].higher_is_better:
        return approximate / exact
    return exact / approximate
