"""ElasticFlow (ASPLOS'23 §4): minimum satisfactory shares, admission and leftover growth."""

from __future__ import annotations

import numpy as np
import pytest
from builders import cycle_state, make_cluster, make_job

from dlsched.policies.elastic.elasticflow_growth import grow
from dlsched.policies.elastic.elasticflow_plan import JobPlan, allowed_sizes, satisfy
from dlsched.scheduling.registry import build_policy
from dlsched.workload.job import Job

LINEAR = (np.array([1, 2, 4, 8]), np.array([1.0, 2.0, 4.0, 8.0]))


@pytest.mark.parametrize(("lo", "hi", "expected"), [
    (1, 8, [1, 2, 4, 8]), (1, 6, [1, 2, 4]), (3, 3, [3]), (3, 16, [3, 4, 8, 16]),
])
def test_allowed_sizes_are_powers_of_two(lo: int, hi: int, expected: list[int]) -> None:
    assert allowed_sizes(lo, hi) == expected


@pytest.mark.parametrize(("work", "horizon", "avail", "expected"), [
    (200, 100, [8, 8], [2, 0]),  # 2 GPUs x 100 s = 200: the smallest share that suffices
    (300, 100, [8, 8], [4, 0]),  # 2 GPUs give 200 < 300; 4 do it
    (300, 200, [8, 8], [2, 2]),  # two slots at 2 GPUs: 400 >= 300, finishes in slot 2
    (300, 200, [1, 8], [1, 2]),  # slot 1 has room for 1 only: 1 x 100 + 2 x 100 = 300
    (400, 200, [1, 8], [1, 4]),  # share 2 gives 300 < 400; share 4: 100 + 400
    (2000, 100, [8, 8], None),  # 8 GPUs give 800: no share meets the deadline
])
def test_minimum_satisfactory_share(work: float, horizon: float, avail: list[int],
                                    expected: list[int] | None) -> None:
    plan = JobPlan(*LINEAR, work=work, horizon=horizon)
    got = satisfy(plan, np.array(avail), slot=100.0)
    assert (got is None and expected is None) or got.tolist() == expected


def test_growth_by_marginal_return_in_power_of_two_steps() -> None:
    sizes = [np.array([1, 2, 4]), np.array([1, 2, 4])]
    rates = [np.array([1.0, 1.9, 2.2]), np.array([1.0, 1.5, 2.9])]
    # per added GPU: a 1->2 0.9, 2->4 0.15; b 1->2 0.5, 2->4 0.7. 3 free: a to 2, b to 2.
    assert grow([1, 1], sizes, rates, 3) == [2, 2]
    # 5 free: a 0.9 (a=2), b 0.5 (b=2), b 0.7 (b=4, costs 2): 5 used
    assert grow([1, 1], sizes, rates, 5) == [2, 4]


def elasticflow(**options: str):
    return build_policy("elasticflow", {"round_seconds": "100", **options}).plugins[0]


def test_rejects_infeasible_admits_feasible_at_minimum_share() -> None:
    feasible = Job(make_job("ok").work(200).deadline(100).build())  # needs 2 GPUs
    hopeless = Job(make_job("late").at(1).work(2000).deadline(100).build())  # needs 20
    state = cycle_state(make_cluster(nodes=1, gpus=4), waiting=[feasible, hopeless])
    plugin = elasticflow(rejected="drop")
    got = plugin.allocate(state)
    assert plugin.admitted == {"ok"} and plugin.rejected == {"late"}
    assert "late" not in got  # dropped: never a GPU
    assert got["ok"].num_workers == 4  # its 2, then the 2 spare ones by marginal return


def test_rejected_job_runs_best_effort_after_admitted_ones() -> None:
    feasible = Job(make_job("ok").gpus(2).elastic(2, 2).work(200).deadline(100).build())
    hopeless = Job(make_job("late").at(1).work(2000).deadline(100).build())
    state = cycle_state(make_cluster(nodes=1, gpus=4), waiting=[feasible, hopeless])
    got = elasticflow(rejected="best-effort").allocate(state)
    assert got["ok"].num_workers == 2 and got["late"].num_workers == 2


def test_admission_keeps_earlier_guarantees() -> None:
    # Each needs all 4 GPUs for the whole window: only the first one can be promised.
    first = Job(make_job("first").work(400).deadline(100).build())
    second = Job(make_job("second").at(1).work(400).deadline(100).build())
    state = cycle_state(make_cluster(nodes=1, gpus=4), waiting=[first, second])
    plugin = elasticflow()
    got = plugin.allocate(state)
    assert plugin.admitted == {"first"} and plugin.rejected == {"second"}
    assert got["first"].num_workers == 4 and "second" not in got


def test_later_deadline_job_is_admitted_when_both_fit_in_deadline_order() -> None:
    # urgent: 4 GPUs x 100 s; relaxed: 400 more by 200 s -> fits in the second slot
    urgent = Job(make_job("urgent").at(1).work(400).deadline(100).build())
    relaxed = Job(make_job("relaxed").work(400).deadline(200).build())
    state = cycle_state(make_cluster(nodes=1, gpus=4), waiting=[relaxed, urgent])
    plugin = elasticflow()
    got = plugin.allocate(state)
    assert plugin.admitted == {"urgent", "relaxed"}
    assert got["urgent"].num_workers == 4 and "relaxed" not in got
