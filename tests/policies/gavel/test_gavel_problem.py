"""AllocationProblem, Allocation and from_gavel: validation, normalization, throughput, checks."""

from __future__ import annotations

import numpy as np
import pytest
from gavel_cases import gavel_specs, problem

from dlsched.perf.gavel_table import GavelThroughputs
from dlsched.perf.model import Placement
from dlsched.policies.gavel.inputs import from_gavel
from dlsched.policies.gavel.problem import (
    Allocation,
    Colocation,
    effective_throughput,
    gpus_used,
    violations,
)


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"scale": np.ones(3)}, "scale must have one value per job"),
        ({"remaining": np.ones(1)}, "remaining must have one value per job"),
        ({"weights": np.zeros(2)}, "weights > 0"),
    ],
    ids=["scale-shape", "remaining-shape", "zero-weight"],
)
def test_invalid_inputs_are_named(fields, message):
    with pytest.raises(ValueError, match=message):
        problem([[1.0, 2.0], [1.0, 1.0]], [1, 1], **fields)


def test_a_job_that_runs_nowhere_is_rejected():
    with pytest.raises(ValueError, match="cannot run on any worker type.*j1"):
        problem([[1.0, 2.0], [0.0, 0.0]], [1, 1])


def test_equal_share_is_a_gpu_share_spread_by_counts():
    # 3 GPUs (1 slow, 2 fast) for jobs of 1 and 2 GPUs: 1.5 GPUs each.
    case = problem([[3.0, 6.0], [3.0, 6.0]], [1, 2], scale=np.array([1.0, 2.0]))
    assert case.share_fraction() == pytest.approx([1.0, 0.75])
    assert case.mix_throughput() == pytest.approx([3 / 3 + 12 / 3] * 2)
    assert case.equal_share_throughput() == pytest.approx([5.0, 3.75])


def test_subproblem_keeps_the_full_normalization_and_scales_capacity():
    case = problem([[1.0, 2.0], [2.0, 1.0], [1.0, 1.0], [4.0, 4.0]], [2, 2],
                   remaining=np.arange(1.0, 5.0))
    sub = case.subproblem(np.array([1, 3]), 0.5)
    assert sub.job_ids == ("j1", "j3")
    assert sub.counts == pytest.approx([1, 1])
    assert sub.remaining == pytest.approx([2, 4])
    assert sub.equal_share_throughput() == pytest.approx(case.equal_share_throughput()[[1, 3]])


def test_effective_throughput_counts_shared_time_at_colocated_rates():
    rates = np.zeros((2, 2, 2))
    rates[1, 0, 1], rates[1, 1, 0] = 0.7, 0.4
    case = problem([[1.0, 2.0], [1.0, 3.0]], [1, 1], colocation=Colocation([0, 1], rates))
    allocation = Allocation("max_min_fairness_packed", [[0.5, 0.0], [0.0, 0.0]], 0.0, 0.0,
                            pairs=[[0, 1]], pair_x=[[0.0, 0.5]])
    assert effective_throughput(case, allocation) == pytest.approx([0.5 + 0.35, 0.2])
    assert allocation.time_fraction() == pytest.approx([1.0, 0.5])
    assert gpus_used(case, allocation) == pytest.approx([0.5, 0.5])
    assert violations(case, allocation) == []


def test_violations_name_every_broken_constraint():
    case = problem([[1.0, 0.0], [1.0, 1.0]], [1, 1])
    allocation = Allocation("max_min_fairness", [[0.5, 0.7], [0.9, -0.1]], 0.0, 0.0)
    found = violations(case, allocation)
    assert any("negative" in line for line in found)
    assert any("above 1 for jobs [0]" in line for line in found)
    assert any(line.startswith("slow: 1.4000 GPUs used of 1.0") for line in found)
    assert any("cannot run" in line for line in found)


def test_from_gavel_reads_the_measured_tables():
    specs = gavel_specs(12, seed=3)
    model = GavelThroughputs()
    built = from_gavel(specs, {"K80": 4, "P100": 4, "V100": 4}, model=model)
    assert built.worker_types == ("k80", "p100", "v100")
    for j, spec in enumerate(specs):
        for t, kind in enumerate(built.worker_types):
            placed = Placement.single_node(kind, spec.num_gpus)
            assert built.throughput[j, t] == pytest.approx(model.rate(spec, placed))
        assert built.remaining[j] == spec.work and built.scale[j] == spec.num_gpus
    a, b = next((a, b) for a in range(12) for b in range(12)
                if specs[a].num_gpus == specs[b].num_gpus == 1 and a != b)
    shared = built.colocation.pair_rates(np.array([[a, b]]))[0, 2]
    assert tuple(shared) == pytest.approx(model.colocated_rate(specs[a], specs[b], "v100"))


def test_violations_check_pairs():
    rates = np.zeros((2, 2, 2))
    rates[0] = 0.5
    case = problem([[1.0, 2.0], [1.0, 3.0], [1.0, 1.0]], [4, 4], scale=np.array([1, 1, 2]),
                   colocation=Colocation([0, 1, 1], rates))
    allocation = Allocation("max_min_fairness_packed", np.zeros((3, 2)), 0.0, 0.0,
                            pairs=[[0, 1], [1, 2]], pair_x=[[0.0, 0.3], [0.2, 0.0]])
    found = violations(case, allocation)
    assert "a pair of jobs with different scale factors" in found
    assert "shared time on a type where the pair cannot share" in found
