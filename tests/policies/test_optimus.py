"""Optimus (EuroSys'18 §4–5): the fitted speed model, the marginal-gain greedy and the policy's
allocate() on hand-checkable cases."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from builders import cycle_state, make_cluster, make_job

from dlsched.perf.model import Placement, get_throughput_model
from dlsched.policies.elastic.optimus_fit import (
    fit_speed,
    fitted_rates,
    marginal_greedy,
    stepwise_greedy,
)
from dlsched.scheduling.registry import build_policy
from dlsched.scheduling.state import CycleState
from dlsched.workload.job import Job, JobSpec


class OptimusForm:
    """Throughput ``1 / (θ0/w + θ1 + θ2·w)`` per job id: exactly the form Optimus fits."""

    name = "optimus-form"

    def __init__(self, theta: dict[str, tuple[float, float, float]]) -> None:
        self.theta = theta

    def rate(self, spec: JobSpec, placement: Placement) -> float:
        w = placement.num_workers
        t0, t1, t2 = self.theta[spec.job_id]
        return 0.0 if w == 0 else 1.0 / (t0 / w + t1 + t2 * w)

    def reference_rate(self, spec: JobSpec) -> float:
        return 1.0


def state_with(model: object, cluster: object, jobs: list[Job]) -> CycleState:
    base = cycle_state(cluster, waiting=jobs)
    return CycleState.begin(replace(base.snapshot, throughput=model))


def allocate(policy_options: dict[str, str], state: CycleState) -> dict[str, int]:
    profile = build_policy("optimus", policy_options)
    return {k: v.num_workers for k, v in profile.plugins[0].allocate(state).items()}


@pytest.mark.parametrize("theta", [(1.0, 0.0, 0.0), (2.0, 0.5, 0.01), (0.0, 1.0, 0.2)],
                         ids=["linear", "mixed", "no-compute"])
def test_fit_recovers_the_papers_form(theta: tuple[float, float, float]) -> None:
    sizes = np.array([1, 2, 4, 8, 16])
    rates = 1.0 / (theta[0] / sizes + theta[1] + theta[2] * sizes)
    assert fit_speed(sizes, rates) == pytest.approx(theta, abs=1e-6)
    assert fitted_rates(np.array(theta), 2)[1:] == pytest.approx(rates[:2])


@pytest.mark.parametrize(("times", "base", "free", "expected"), [
    # gains: a 6, 2, 1; b 10, 3.  Two GPUs: b's 10 then a's 6.
    ([[np.inf, 12, 6, 4, 3], [np.inf, 20, 10, 7, np.inf]], [1, 1], 2, [2, 2]),
    # four GPUs: 10, 6, 3, 2 -> a 3, b 3
    ([[np.inf, 12, 6, 4, 3], [np.inf, 20, 10, 7, np.inf]], [1, 1], 4, [3, 3]),
    # remaining time rises from 2 workers on: a stops there although GPUs are left
    ([[np.inf, 10, 8, 9, 11]], [1], 3, [2]),
    # a job without its minimum (base 0) never grows
    ([[np.inf, 10, 5, 4, 3]], [0], 3, [0]),
], ids=["b-first", "interleaved", "stops-without-gain", "no-base"])
def test_marginal_greedy(times: list, base: list, free: int, expected: list) -> None:
    got = marginal_greedy(np.array(times, dtype=float), np.array(base), free)
    assert got.tolist() == expected


@pytest.mark.parametrize(("work_b", "expected"), [
    # a linear (12/w), b saturating (W·(1/w + 1)). One spare GPU after 1 each:
    # a gains 12 - 6 = 6; b gains W·(2 - 1.5) = W/2.
    (20.0, {"a": 1, "b": 2}),  # b gains 10 > 6
    (10.0, {"a": 2, "b": 1}),  # b gains 5 < 6
], ids=["to-b", "to-a"])
def test_marginal_gpu_goes_to_biggest_remaining_time_gain(work_b: float,
                                                          expected: dict[str, int]) -> None:
    jobs = [Job(make_job("a").work(12).build()), Job(make_job("b").at(1).work(work_b).build())]
    model = OptimusForm({"a": (1.0, 0.0, 0.0), "b": (1.0, 1.0, 0.0)})
    state = state_with(model, make_cluster(nodes=1, gpus=3), jobs)
    assert allocate({}, state) == expected


def test_minimum_first_in_submission_order_when_gpus_are_short() -> None:
    jobs = [Job(make_job(f"j{i}").at(i).work(100).build()) for i in range(3)]
    state = cycle_state(make_cluster(nodes=1, gpus=2), waiting=jobs)
    assert allocate({}, state) == {"j0": 1, "j1": 1}


def test_declared_mode_keeps_rigid_jobs_at_their_size_and_packs_them() -> None:
    jobs = [Job(make_job("r").gpus(4).work(100).build()),
            Job(make_job("e").at(1).gpus(1).elastic(1, 2).work(100).build())]
    state = cycle_state(make_cluster(nodes=2, gpus=4), waiting=jobs)
    profile = build_policy("optimus", {"elastic": "declared"})
    got = profile.plugins[0].allocate(state)
    assert got["r"].nodes in ((0, 0, 0, 0), (1, 1, 1, 1))  # one node: fewest nodes (§5.2)
    assert got["e"].num_workers == 2


def test_max_workers_caps_a_lone_job() -> None:
    jobs = [Job(make_job("a").work(100).build())]
    state = cycle_state(make_cluster(nodes=4, gpus=4), waiting=jobs)
    assert allocate({"max_workers": "8"}, state) == {"a": 8}
    assert allocate({}, state) == {"a": 16}


def test_unknown_elastic_mode_is_a_clear_error() -> None:
    with pytest.raises(Exception, match="elastic must be one of"):
        build_policy("optimus", {"elastic": "some"})


def test_exact_speed_uses_the_models_rates() -> None:
    # linear scaling: every added worker gains, so both speeds give a lone job the cluster
    jobs = [Job(make_job("a").work(100).build())]
    state = cycle_state(make_cluster(nodes=2, gpus=4), waiting=jobs)
    assert allocate({"speed": "exact"}, state) == {"a": 8}
    with pytest.raises(Exception, match="speed must be one of"):
        build_policy("optimus", {"speed": "guess"})


@pytest.mark.parametrize(("times", "base", "free", "expected"), [
    # a: 10 -> 8 -> 9 -> 4: stops at 2 although 4 workers would be faster (the artifact's
    # Optimus zeroes a job's gain at its first size that does not gain)
    ([[np.inf, 10, 8, 9, 4]], [1], 3, [2]),
    # gains a 6, 2; b 10, 3: one at a time, biggest first
    ([[np.inf, 12, 6, 4, 3], [np.inf, 20, 10, 7, np.inf]], [1, 1], 3, [2, 3]),
    # equal gains: the earlier job first
    ([[np.inf, 4, 2], [np.inf, 4, 2]], [1, 1], 1, [2, 1]),
    ([[np.inf, 10, 5]], [0], 2, [0]),
], ids=["stops-at-first-loss", "biggest-first", "tie-earlier-job", "no-base"])
def test_stepwise_greedy(times: list, base: list, free: int, expected: list) -> None:
    got = stepwise_greedy(np.array(times, dtype=float), np.array(base), free)
    assert got.tolist() == expected


def test_step_time_speed_is_the_artifacts_optimus_on_a_lone_job() -> None:
    # The artifact's predicted step times of cifar10 at batch 2048: 8 GPUs 0.25993 s,
    # 9 GPUs 0.25998 s: its Optimus stops at 8 on an empty 16 x 4 cluster (simulator log).
    job = Job(replace(make_job("c").gpus(6).work(900).build(), model="cifar10",
                      batch_size=2048))
    state = state_with(get_throughput_model("pollux-progress"), make_cluster(nodes=16), [job])
    assert allocate({"speed": "step-time"}, state) == {"c": 8}


def test_step_time_speed_needs_a_model_with_step_times() -> None:
    state = cycle_state(make_cluster(nodes=1), waiting=[Job(make_job("a").work(10).build())])
    with pytest.raises(ValueError, match="step_rate"):
        allocate({"speed": "step-time"}, state)
